package policy

// Decoding of a rule of this package's format: its fields, its matchers and exemptions, and the checks that relate its fields.

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

func (d *decoder) rule(n *yaml.Node, path string) *Rule {
	w := d.w
	r := &Rule{src: &source{path: path, pos: w.pos(n)}}
	// track marks part of the rule broken if the errors grew since mark.
	mark := len(w.errs.errs)
	track := func(part string) {
		if len(w.errs.errs) > mark {
			r.src.markBroken(part)
		}
		mark = len(w.errs.errs)
	}
	var (
		spec                limitsSpec
		hasName, hasMatch   bool
		tiersN              *yaml.Node
		failN, tierKeyN     *yaml.Node
		storeSet, failSet   bool
		unlimitedN          *yaml.Node
		quotaN, concN       *yaml.Node
		memN                [3]*yaml.Node // adaptive_concurrency, adaptive_rate, lanes
		storeN              *yaml.Node
		storeOK, failureOK  = true, true
		tierTable           string
		storeVal            Store
		failureVal          Failure
		tierKeyVal, nameVal string
	)
	ok := w.fields(n, path, ruleFields, func(key string, vn *yaml.Node, fpath string) {
		r.src.set(key, fpath, w.pos(vn))
		mark = len(w.errs.errs)
		defer track(rulePart[key])
		switch key {
		case "adaptive_concurrency":
			memN[0] = vn
			spec.adaptiveConc, _ = d.adaptiveConcurrency(vn, fpath, r.src)
			return
		case "adaptive_rate":
			memN[1] = vn
			spec.adaptiveRate, _ = d.adaptiveRate(vn, fpath, r.src)
			return
		case "lanes":
			memN[2] = vn
			spec.lanes, _ = d.lanes(vn, fpath, r.src)
			return
		}
		if d.limitsField(&spec, key, vn, fpath) {
			switch key {
			case "unlimited":
				unlimitedN = vn
			case "quota":
				quotaN = vn
			case "concurrency":
				concN = vn
			}
			return
		}
		switch key {
		case "name":
			hasName = true
			nameVal, _ = w.nonEmpty(vn, fpath)
		case "description":
			r.Description, _ = w.str(vn, fpath)
		case "match":
			hasMatch = true
			r.Match = d.match(r, vn, fpath)
		case "tiers":
			tiersN = vn
			tierTable, _ = w.nonEmpty(vn, fpath)
		case "tier_key":
			tierKeyN = vn
			tierKeyVal, _ = w.nonEmpty(vn, fpath)
		case "store":
			storeSet, storeN = true, vn
			storeVal, storeOK = d.store(vn, fpath)
		case "failure":
			failN, failSet = vn, true
			failureVal, failureOK = d.failure(vn, fpath, r.src)
		case "shadow":
			r.Shadow, _ = w.boolean(vn, fpath)
		case "shared":
			r.Shared, _ = w.boolean(vn, fpath)
		case "exempt":
			r.Exempt = d.exempt(r, vn, fpath)
		case "replaces":
			w.list(vn, fpath, true, func(i int, item *yaml.Node, ipath string) {
				if s, ok := w.str(item, ipath); ok {
					r.Replaces = append(r.Replaces, s)
					r.src.set(fmt.Sprintf("replaces[%d]", i), ipath, w.pos(item))
				}
			})
		}
	})
	if !ok {
		return nil
	}
	mark = len(w.errs.errs)
	rn := w.resolve(n, path)
	r.Name, r.TierKey = nameVal, tierKeyVal
	if !hasName {
		w.fail(rn, path, "missing name")
	}
	track("name")
	if !hasMatch {
		w.fail(rn, path, "missing match: a rule matches descriptors by their entries")
	}
	track("match")
	defer track("store")
	if tiersN != nil {
		for _, c := range []struct {
			n    *yaml.Node
			what string
		}{{spec.rateN, "rate"}, {spec.burstN, "burst"}, {quotaN, "quota"}, {concN, "concurrency"}, {unlimitedN, "unlimited"},
			{memN[0], "adaptive_concurrency"}, {memN[1], "adaptive_rate"}, {memN[2], "lanes"}} {
			if c.n != nil {
				w.fail(c.n, keyPath(path, c.what), "%s contradicts tiers: the tiers of the table give the rule's limits", c.what)
			}
		}
		if spec.algoN != nil {
			w.fail(spec.algoN, spec.algoPath, "algorithm applies to the rule's own rate; the tiers of a table set theirs")
		}
		if tierTable != "" {
			r.Tiers = d.tables[tierTable]
			if r.Tiers == nil {
				names := sortedKeys(d.tables)
				if len(names) == 0 {
					w.fail(tiersN, keyPath(path, "tiers"), "unknown tier table %q (the file defines no tier_tables)", truncate(tierTable))
				} else {
					w.fail(tiersN, keyPath(path, "tiers"), "unknown tier table %q (tier_tables: %s)", truncate(tierTable), strings.Join(names, ", "))
				}
			}
		}
	} else {
		if spec.algoN != nil && spec.rateN == nil {
			w.fail(spec.algoN, spec.algoPath, "algorithm without a rate")
		}
		if tierKeyN != nil {
			w.fail(tierKeyN, keyPath(path, "tier_key"), "tier_key without tiers")
		}
		r.Limits = d.build(&spec, d.defaults.algorithm)
	}
	track("limits")
	r.Store = d.defaults.store
	if storeSet && storeOK {
		r.Store = storeVal
	}
	memOnly := ""
	for i, n := range memN {
		if n != nil && memOnly == "" {
			memOnly = [...]string{"adaptive_concurrency", "adaptive_rate", "lanes"}[i]
		}
	}
	if memOnly != "" && tiersN == nil {
		if storeSet && storeOK && storeVal == StoreRedis {
			w.fail(storeN, keyPath(path, "store"), "%s is kept in memory only (an adaptive limit learns from the requests of this instance, and Redis holds no such state), and so is its rule: remove store: redis, or put the limits to keep in Redis in a rule of their own", memOnly)
			storeOK = false
		}
		r.Store = StoreLocal
	}
	switch {
	case failSet && r.Store == StoreLocal && storeOK && memOnly != "" && tiersN == nil:
		w.fail(failN, keyPath(path, "failure"), "a failure policy applies to rules kept in Redis, and this one is kept in memory, as every rule with %s is", memOnly)
	case failSet && r.Store == StoreLocal && storeOK:
		if storeSet {
			w.fail(failN, keyPath(path, "failure"), "a failure policy applies to rules kept in Redis (store: redis), and this one is local")
		} else {
			w.fail(failN, keyPath(path, "failure"), "a failure policy applies to rules kept in Redis (store: redis), and this one is local (the default store)")
		}
	case failSet && failureOK:
		r.Failure = failureVal
	case !failSet && r.Store == StoreRedis:
		r.Failure = d.defaults.failure
		if d.defaults.failurePos.Line > 0 {
			r.src.set("failure", "defaults.failure", d.defaults.failurePos)
		}
	}
	return r
}

// rulePart is the part of a rule each field belongs to (see source).
var rulePart = map[string]string{
	"name": "name", "description": "name", "match": "match",
	"rate": "limits", "burst": "limits", "algorithm": "limits", "quota": "limits", "concurrency": "limits",
	"adaptive_concurrency": "limits", "adaptive_rate": "limits", "lanes": "limits",
	"tiers": "limits", "tier_key": "limits", "unlimited": "limits",
	"store": "store", "failure": "store", "shadow": "store", "shared": "store",
	"exempt": "exempt", "replaces": "replaces",
}

func (d *decoder) match(r *Rule, n *yaml.Node, path string) []Matcher {
	w := d.w
	var ms []Matcher
	w.list(n, path, true, func(i int, item *yaml.Node, ipath string) {
		r.src.set(fmt.Sprintf("match[%d]", i), ipath, w.pos(item))
		it := w.resolve(item, ipath)
		if it == nil {
			return
		}
		if it.Kind == yaml.ScalarNode {
			if k, ok := w.nonEmpty(item, ipath); ok {
				ms = append(ms, Matcher{Key: k})
			}
			return
		}
		var m Matcher
		var valueN, prefixN *yaml.Node
		hasKey := false
		w.fields(item, ipath, matchFields, func(key string, vn *yaml.Node, fpath string) {
			switch key {
			case "key":
				hasKey = true
				m.Key, _ = w.nonEmpty(vn, fpath)
			case "value":
				valueN = vn
				if s, ok := w.str(vn, fpath); ok {
					m.Kind, m.Value = MatchExact, s
				}
			case "prefix":
				prefixN = vn
				if s, ok := w.str(vn, fpath); ok {
					m.Kind, m.Value = MatchPrefix, s
				}
			}
		})
		if !hasKey {
			w.fail(it, ipath, "missing key")
			return
		}
		if valueN != nil && prefixN != nil {
			w.fail(prefixN, keyPath(ipath, "prefix"), "give value or prefix, not both")
			return
		}
		ms = append(ms, m)
	})
	return ms
}

func (d *decoder) exempt(r *Rule, n *yaml.Node, path string) []Exemption {
	w := d.w
	var es []Exemption
	w.mapping(n, path, func(key string, kn, vn *yaml.Node) {
		kp := keyPath(path, key)
		r.src.set("exempt:"+key, kp, w.pos(kn))
		vals, ok := w.strings(vn, kp)
		if ok {
			es = append(es, Exemption{Key: key, Values: vals})
		}
	})
	return es
}
