package policy

// Decoding of a rule of this package's format: its fields, its matchers and exemptions, and the checks that relate its fields.

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ruleDecoding is a rule being decoded: the rule, its fields as written,
// kept for the checks that relate them once all are read, and the count
// of errors that tells which part of the rule an error broke (see track).
type ruleDecoding struct {
	w    *walker
	r    *Rule
	mark int // the number of errors when the current part began

	spec                limitsSpec
	hasName, hasMatch   bool
	tiersN              *yaml.Node
	failN, tierKeyN     *yaml.Node
	storeSet, failSet   bool
	unlimitedN          *yaml.Node
	quotaN, concN       *yaml.Node
	memN                [3]*yaml.Node // adaptive_concurrency, adaptive_rate, lanes
	storeN              *yaml.Node
	prefetchN           *yaml.Node
	prefetchVal         int64
	storeOK, failureOK  bool
	tierTable           string
	storeVal            string
	failureVal          Failure
	tierKeyVal, nameVal string
}

// begin starts a part of the rule: the errors from now on are its.
func (rd *ruleDecoding) begin() { rd.mark = len(rd.w.errs.errs) }

// track marks part of the rule broken if the errors grew since mark.
func (rd *ruleDecoding) track(part string) {
	if len(rd.w.errs.errs) > rd.mark {
		rd.r.src.markBroken(part)
	}
	rd.mark = len(rd.w.errs.errs)
}

// rule decodes the rule at n: its fields, then the checks that relate
// them. It returns nil if n is not a mapping of rule fields.
func (d *decoder) rule(n *yaml.Node, path string) *Rule {
	w := d.w
	rd := &ruleDecoding{w: w, r: &Rule{src: &source{path: path, pos: w.pos(n)}}, storeOK: true, failureOK: true}
	rd.begin()
	ok := w.fields(n, path, ruleFields, func(key string, vn *yaml.Node, fpath string) {
		d.ruleField(rd, key, vn, fpath)
	})
	if !ok {
		return nil
	}
	rd.begin()
	d.ruleRequired(rd, n, path)
	d.ruleLimits(rd, path)
	rd.track("limits")
	d.ruleStore(rd, path)
	rd.track("store")
	d.rulePrefetch(rd)
	return rd.r
}

// ruleField decodes one field of a rule into rd, marking the part of the
// rule it belongs to (see rulePart) broken if it had errors.
func (d *decoder) ruleField(rd *ruleDecoding, key string, vn *yaml.Node, fpath string) {
	rd.r.src.set(key, fpath, d.w.pos(vn))
	rd.begin()
	defer rd.track(rulePart[key])
	if d.ruleMemoryField(rd, key, vn, fpath) || d.ruleLimitsField(rd, key, vn, fpath) {
		return
	}
	d.ruleOwnField(rd, key, vn, fpath)
}

// ruleMemoryField decodes a field of the limits kept in memory only
// (adaptive_concurrency, adaptive_rate, lanes); it reports whether key is
// one.
func (d *decoder) ruleMemoryField(rd *ruleDecoding, key string, vn *yaml.Node, fpath string) bool {
	switch key {
	case "adaptive_concurrency":
		rd.memN[0] = vn
		rd.spec.adaptiveConc, _ = d.adaptiveConcurrency(vn, fpath, rd.r.src)
	case "adaptive_rate":
		rd.memN[1] = vn
		rd.spec.adaptiveRate, _ = d.adaptiveRate(vn, fpath, rd.r.src)
	case "lanes":
		rd.memN[2] = vn
		rd.spec.lanes, _ = d.lanes(vn, fpath, rd.r.src)
	default:
		return false
	}
	return true
}

// ruleLimitsField decodes a limits field that tiers have too (see
// limitsField), keeping the nodes that ruleTiers names; it reports whether
// key is one.
func (d *decoder) ruleLimitsField(rd *ruleDecoding, key string, vn *yaml.Node, fpath string) bool {
	if !d.limitsField(&rd.spec, key, vn, fpath) {
		return false
	}
	switch key {
	case "rate":
		setRateItems(rd.r.src, "rate", &rd.spec)
	case "unlimited":
		rd.unlimitedN = vn
	case "quota":
		rd.quotaN = vn
	case "concurrency":
		rd.concN = vn
	}
	return true
}

// ruleOwnField decodes a field of a rule that is not one of its limits:
// its name, match, tiers, store, failure policy, modes, exemptions and
// replacements.
func (d *decoder) ruleOwnField(rd *ruleDecoding, key string, vn *yaml.Node, fpath string) {
	w, r := d.w, rd.r
	switch key {
	case "name":
		rd.hasName = true
		rd.nameVal, _ = w.nonEmpty(vn, fpath)
	case "description":
		r.Description, _ = w.str(vn, fpath)
	case "match":
		rd.hasMatch = true
		r.Match = d.match(r, vn, fpath)
	case "tiers":
		rd.tiersN = vn
		rd.tierTable, _ = w.nonEmpty(vn, fpath)
	case "tier_key":
		rd.tierKeyN = vn
		rd.tierKeyVal, _ = w.nonEmpty(vn, fpath)
	case "store":
		rd.storeSet, rd.storeN = true, vn
		rd.storeVal, rd.storeOK = d.store(vn, fpath)
	case "failure":
		rd.failN, rd.failSet = vn, true
		rd.failureVal, rd.failureOK = d.failure(vn, fpath, r.src)
	case "prefetch":
		rd.prefetchN = vn
		rd.prefetchVal, _ = d.prefetch(vn, fpath)
	case "delay":
		r.Delay, _ = w.duration(vn, fpath, 0)
	case "share":
		r.Share = d.share(vn, fpath, r.src)
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
}

// ruleRequired gives the rule its name and tier key, and reports a missing
// name or match, each marking its part of the rule broken.
func (d *decoder) ruleRequired(rd *ruleDecoding, n *yaml.Node, path string) {
	w, r := d.w, rd.r
	rn := w.resolve(n, path)
	r.Name, r.TierKey = rd.nameVal, rd.tierKeyVal
	if !rd.hasName {
		w.fail(rn, path, "missing name")
	}
	rd.track("name")
	if !rd.hasMatch {
		w.fail(rn, path, "missing match: a rule matches descriptors by their entries")
	}
	rd.track("match")
}

// ruleLimits gives the rule its tier table (see ruleTiers) or its own
// limits, reporting the fields that need tiers.
func (d *decoder) ruleLimits(rd *ruleDecoding, path string) {
	w, spec := d.w, &rd.spec
	if rd.tiersN != nil {
		d.ruleTiers(rd, path)
	} else {
		if spec.algoN != nil && spec.rateN == nil {
			w.fail(spec.algoN, spec.algoPath, "algorithm without a rate")
		}
		if rd.tierKeyN != nil {
			w.fail(rd.tierKeyN, keyPath(path, "tier_key"), "tier_key without tiers")
		}
		rd.r.Limits = d.build(spec, d.defaults.algorithm)
	}
}

// ruleTiers gives a rule with tiers its tier table, reporting the limits
// of its own that contradict it and a table the file does not define.
func (d *decoder) ruleTiers(rd *ruleDecoding, path string) {
	w, r, spec := d.w, rd.r, &rd.spec
	for _, c := range []struct {
		n    *yaml.Node
		what string
	}{{spec.rateN, "rate"}, {spec.burstN, "burst"}, {rd.quotaN, "quota"}, {rd.concN, "concurrency"}, {rd.unlimitedN, "unlimited"},
		{rd.memN[0], "adaptive_concurrency"}, {rd.memN[1], "adaptive_rate"}, {rd.memN[2], "lanes"}} {
		if c.n != nil {
			w.fail(c.n, keyPath(path, c.what), "%s contradicts tiers: the tiers of the table give the rule's limits", c.what)
		}
	}
	if spec.algoN != nil {
		w.fail(spec.algoN, spec.algoPath, "algorithm applies to the rule's own rate; the tiers of a table set theirs")
	}
	if rd.tierTable != "" {
		r.Tiers = d.tables[rd.tierTable]
		if r.Tiers == nil {
			names := sortedKeys(d.tables)
			if len(names) == 0 {
				w.fail(rd.tiersN, keyPath(path, "tiers"), "unknown tier table %q (the file defines no tier_tables)", truncate(rd.tierTable))
			} else {
				w.fail(rd.tiersN, keyPath(path, "tiers"), "unknown tier table %q (tier_tables: %s)", truncate(rd.tierTable), strings.Join(names, ", "))
			}
		}
	}
}

// memoryOnly returns the first of the rule's fields whose limits are kept
// in memory only, or "".
func (rd *ruleDecoding) memoryOnly() string {
	memOnly := ""
	for i, n := range rd.memN {
		if n != nil && memOnly == "" {
			memOnly = [...]string{"adaptive_concurrency", "adaptive_rate", "lanes"}[i]
		}
	}
	return memOnly
}

// ruleStore gives the rule its store and failure policy, its own or the
// defaults', reporting those that contradict where its limits are kept.
func (d *decoder) ruleStore(rd *ruleDecoding, path string) {
	w, r := d.w, rd.r
	r.Store = d.defaults.store
	if rd.storeSet && rd.storeOK {
		r.Store = rd.storeVal
	}
	memOnly := rd.memoryOnly()
	if memOnly != "" && rd.tiersN == nil {
		if rd.storeSet && rd.storeOK && rd.storeVal != StoreLocal && rd.storeVal != storeDefault {
			w.fail(rd.storeN, keyPath(path, "store"), "%s is kept in memory only (an adaptive limit learns from the requests of this instance, and a shared store holds no such state), and so is its rule: remove store: %s, or put the limits to keep in %s in a rule of their own", memOnly, rd.storeVal, rd.storeVal)
			rd.storeOK = false
		}
		r.Store = StoreLocal
	}
	switch {
	case rd.failSet && r.Store == StoreLocal && rd.storeOK && memOnly != "" && rd.tiersN == nil:
		w.fail(rd.failN, keyPath(path, "failure"), "a failure policy applies to rules kept in Redis, and this one is kept in memory, as every rule with %s is", memOnly)
	case rd.failSet && r.Store == StoreLocal && rd.storeOK:
		if rd.storeSet {
			w.fail(rd.failN, keyPath(path, "failure"), "a failure policy applies to rules kept in Redis (store: redis), and this one is local")
		} else {
			w.fail(rd.failN, keyPath(path, "failure"), "a failure policy applies to rules kept in Redis (store: redis), and this one is local (the default store)")
		}
	case rd.failSet && rd.failureOK:
		r.Failure = rd.failureVal
	case !rd.failSet && r.Store != StoreLocal:
		r.Failure = d.defaults.failure
		if d.defaults.failurePos.Line > 0 {
			r.src.set("failure", "defaults.failure", d.defaults.failurePos)
		}
	}
}

// rulePart is the part of a rule each field belongs to (see source).
var rulePart = map[string]string{
	"name": "name", "description": "name", "match": "match",
	"rate": "limits", "burst": "limits", "algorithm": "limits", "quota": "limits", "concurrency": "limits",
	"adaptive_concurrency": "limits", "adaptive_rate": "limits", "lanes": "limits",
	"tiers": "limits", "tier_key": "limits", "unlimited": "limits", "share": "limits",
	"store": "store", "failure": "store", "shadow": "store", "shared": "store", "prefetch": "prefetch",
	"delay": "delay", "exempt": "exempt", "replaces": "replaces",
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
