package policy

// Decoding of this package's YAML format: the file's top level, its domains, defaults and overrides, and the store, algorithm and failure policy they name.

import (
	"fmt"
	"math"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/admit-go/admit"
)

// The fields of this package's YAML format (see the package
// documentation).
var (
	topFields      = []string{"version", "shadow", "defaults", "tier_tables", "domain", "description", "keys", "overrides", "rules", "domains"}
	defaultsFields = []string{"store", "algorithm", "failure", "prefetch"}
	domainFields   = []string{"domain", "description", "keys", "shadow", "overrides", "rules"}
	overrideFields = []string{"algorithm", "store", "failure", "prefetch"}
	ruleFields     = []string{"name", "description", "match", "rate", "burst", "algorithm", "quota", "concurrency", "adaptive_concurrency", "adaptive_rate", "lanes", "share", "tiers", "tier_key", "unlimited", "store", "failure", "prefetch", "delay", "shadow", "exempt", "shared", "replaces"}
	matchFields    = []string{"key", "value", "prefix"}
	quotaFields    = []string{"limit", "period", "timezone", "week_start"}
	concFields     = []string{"max", "lease"}
	failureFields  = []string{"policy", "breaker", "local_share", "timeout", "threshold", "probe_interval", "retry_after"}
	tableFields    = []string{"description", "default", "tiers", "assign"}
	tierFields     = []string{"description", "extends", "rate", "burst", "algorithm", "quota", "concurrency", "unlimited"}
)

// DefaultDomain is the domain of a file in this package's format that
// names none (the single-domain form without "domain").
const DefaultDomain = "default"

// decoder decodes this package's YAML format.
type decoder struct {
	w        *walker
	defaults defaults
	tables   map[string]*TierTable
	single   bool
}

type defaults struct {
	store      string
	algorithm  admit.Algorithm
	failure    Failure
	failurePos Pos
	// prefetch is defaults.prefetch, at prefetchN; prefetchUsed says
	// that a rule or a domain's inline limits took it.
	prefetch     int64
	prefetchN    *yaml.Node
	prefetchPos  Pos
	prefetchUsed bool
}

// parseAdmit parses a policy in this package's YAML format (see the package
// documentation). name names the file in errors. The error is an Errors
// listing every problem found, which matches ErrInvalidPolicy.
func parseAdmit(name string, data []byte) (*Policy, error) {
	var errs errList
	root, w := parseYAML(name, data, &errs)
	if root == nil {
		if len(errs.errs) == 0 {
			errs.add(Pos{File: name, Line: 1}, "", "empty file: want a policy (rules, or domains)")
		}
		return nil, errs.err()
	}
	d := &decoder{w: w, tables: map[string]*TierTable{}, defaults: defaults{store: StoreLocal}}
	p := d.policy(root)
	if !w.exhausted {
		var tables []*TierTable
		for _, name := range sortedKeys(d.tables) {
			tables = append(tables, d.tables[name])
		}
		validate(p, &errs, tables...)
	}
	errs.sort()
	if err := errs.err(); err != nil {
		return nil, err
	}
	return p, nil
}

func (d *decoder) policy(root *yaml.Node) *Policy {
	w := d.w
	top := map[string]*yaml.Node{}
	if !w.fields(root, "", topFields, func(key string, vn *yaml.Node, _ string) { top[key] = vn }) {
		return &Policy{}
	}
	if n := top["version"]; n != nil {
		if v, ok := w.integer(n, "version", 0, math.MaxInt64); ok && v != 1 {
			w.fail(n, "version", "unsupported version %d (want 1)", v)
		}
	}
	shadow := false
	if n := top["shadow"]; n != nil {
		shadow, _ = w.boolean(n, "shadow")
	}
	if n := top["description"]; n != nil {
		w.str(n, "description")
	}
	if n := top["defaults"]; n != nil {
		d.parseDefaults(n)
	}
	if n := top["tier_tables"]; n != nil {
		d.parseTables(n)
	}
	p := &Policy{}
	single := top["rules"] != nil || top["domain"] != nil || top["keys"] != nil || top["overrides"] != nil
	switch {
	case single && top["domains"] != nil:
		for _, k := range []string{"domain", "rules", "keys", "overrides"} {
			if n := top[k]; n != nil {
				w.fail(n, k, "give either domains, or domain and rules, not both")
				break
			}
		}
	case single:
		d.single = true
		dom := d.domain(root, top, "")
		dom.Shadow = dom.Shadow || shadow
		p.Domains = append(p.Domains, dom)
	case top["domains"] != nil:
		w.list(top["domains"], "domains", false, func(i int, item *yaml.Node, ipath string) {
			fs := map[string]*yaml.Node{}
			if w.fields(item, ipath, domainFields, func(key string, vn *yaml.Node, _ string) { fs[key] = vn }) {
				dom := d.domain(item, fs, ipath)
				if fs["domain"] == nil {
					w.fail(w.resolve(item, ipath), ipath, "missing domain")
					dom.src.markBroken("domain")
				}
				dom.Shadow = dom.Shadow || shadow
				p.Domains = append(p.Domains, dom)
			}
		})
	default:
		w.fail(root, "", "no rules: want rules (with domain), or domains")
	}
	d.checkDefaultPrefetch()
	return p
}

func (d *decoder) parseDefaults(n *yaml.Node) {
	w := d.w
	w.fields(n, "defaults", defaultsFields, func(key string, vn *yaml.Node, fpath string) {
		switch key {
		case "store":
			if s, ok := d.store(vn, fpath); ok {
				d.defaults.store = s
			}
		case "algorithm":
			if a, ok := d.algorithm(vn, fpath); ok {
				d.defaults.algorithm = a
			}
		case "failure":
			if f, ok := d.failure(vn, fpath, nil); ok {
				d.defaults.failure = f
				d.defaults.failurePos = w.pos(vn)
			}
		case "prefetch":
			d.parseDefaultPrefetch(vn, fpath)
		}
	})
}

// domain decodes a domain from the fields fs of node n at path.
func (d *decoder) domain(n *yaml.Node, fs map[string]*yaml.Node, path string) *Domain {
	w := d.w
	dom := &Domain{Name: DefaultDomain, src: &source{path: path, pos: w.pos(n)}}
	dom.Override = Override{Algorithm: admit.AlgFixedWindow, Store: d.defaults.store}
	f := func(k string) string { return keyPath(path, k) }
	if vn := fs["domain"]; vn != nil {
		var ok bool
		if dom.Name, ok = w.nonEmpty(vn, f("domain")); !ok {
			dom.src.markBroken("domain")
		}
		dom.src.set("domain", f("domain"), w.pos(vn))
	}
	if vn := fs["description"]; vn != nil {
		w.str(vn, f("description"))
	}
	if vn := fs["shadow"]; vn != nil {
		dom.Shadow, _ = w.boolean(vn, f("shadow"))
	}
	if vn := fs["keys"]; vn != nil {
		dom.src.set("keys", f("keys"), w.pos(vn))
		w.list(vn, f("keys"), true, func(i int, item *yaml.Node, ipath string) {
			if k, ok := w.str(item, ipath); ok {
				dom.Keys = append(dom.Keys, k)
				dom.src.set(fmt.Sprintf("keys[%d]", i), ipath, w.pos(item))
			}
		})
	}
	if vn := fs["overrides"]; vn != nil {
		d.overrides(dom, vn, f("overrides"))
	} else if dom.Override.Store != StoreLocal {
		dom.Override.Failure = d.defaults.failure
		d.overridePrefetch(dom, false)
	}
	if vn := fs["rules"]; vn != nil {
		w.list(vn, f("rules"), false, func(i int, item *yaml.Node, ipath string) {
			if r := d.rule(item, ipath); r != nil {
				dom.Rules = append(dom.Rules, r)
			}
		})
	}
	return dom
}

func (d *decoder) overrides(dom *Domain, n *yaml.Node, path string) {
	w := d.w
	var failN, prefetchN *yaml.Node
	w.fields(n, path, overrideFields, func(key string, vn *yaml.Node, fpath string) {
		dom.src.set("overrides."+key, fpath, w.pos(vn))
		switch key {
		case "algorithm":
			if a, ok := d.algorithm(vn, fpath); ok {
				dom.Override.Algorithm = a
			}
		case "store":
			if s, ok := d.store(vn, fpath); ok {
				dom.Override.Store = s
			}
		case "failure":
			failN = vn
			if f, ok := d.failure(vn, fpath, dom.src); ok {
				dom.Override.Failure = f
			}
		case "prefetch":
			prefetchN = vn
			if p, ok := d.prefetch(vn, fpath); ok {
				dom.Override.Prefetch = p
			} else {
				dom.src.markBroken("overrides.prefetch")
			}
		}
	})
	d.overridePrefetch(dom, prefetchN != nil)
	if failN != nil && dom.Override.Store == StoreLocal {
		w.fail(failN, keyPath(path, "failure"), "a failure policy applies to limits kept in Redis (store: redis), and these are local")
		dom.Override.Failure = Failure{}
	} else if failN == nil && dom.Override.Store != StoreLocal {
		dom.Override.Failure = d.defaults.failure
	}
}

func (d *decoder) store(n *yaml.Node, path string) (string, bool) {
	s, ok := d.w.str(n, path)
	if !ok {
		return "", false
	}
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "local", "memory":
		return StoreLocal, true
	case "default":
		return storeDefault, true
	}
	if !validStoreName(s) {
		d.w.fail(n, path, "invalid store name %q (want local, redis, default, or the name of a store the engine is given: lower-case letters, digits, '-' and '_', starting with a letter)", truncate(s))
		return "", false
	}
	return s, true
}

func (d *decoder) algorithm(n *yaml.Node, path string) (admit.Algorithm, bool) {
	s, ok := d.w.str(n, path)
	if !ok {
		return 0, false
	}
	a, err := admit.ParseAlgorithm(s)
	if err != nil {
		d.w.fail(n, path, "unknown algorithm %q (want one of gcra, token_bucket, leaky_bucket, fixed_window, sliding_window, sliding_window_approx, sliding_log)", truncate(s))
		return 0, false
	}
	return a, true
}

// failure decodes a failure policy: a string ("fallback",
// "breaker/fail_closed") or a mapping. src, if not nil, records the
// positions of the mapping's fields (prefixed with "failure.").
func (d *decoder) failure(n *yaml.Node, path string, src *source) (Failure, bool) {
	w := d.w
	r := w.resolve(n, path)
	if r == nil {
		return Failure{}, false
	}
	if r.Kind == yaml.ScalarNode {
		s, ok := w.str(n, path)
		if !ok {
			return Failure{}, false
		}
		return d.failurePolicy(n, path, s, true)
	}
	var f Failure
	good := true
	hasPolicy := false
	w.fields(n, path, failureFields, func(key string, vn *yaml.Node, fpath string) {
		if src != nil {
			src.set("failure."+key, fpath, w.pos(vn))
		}
		var ok bool
		switch key {
		case "policy":
			hasPolicy = true
			var s string
			if s, ok = w.str(vn, fpath); ok {
				var g Failure
				if g, ok = d.failurePolicy(vn, fpath, s, false); ok {
					f.Policy = g.Policy
				}
			}
		case "breaker":
			f.Breaker, ok = w.boolean(vn, fpath)
		case "local_share":
			var v int64
			v, ok = w.integer(vn, fpath, 1, 1<<20)
			f.LocalShare = int(v)
		case "timeout":
			f.Timeout, ok = w.duration(vn, fpath, 0)
		case "threshold":
			var v int64
			v, ok = w.integer(vn, fpath, 1, 1<<20)
			f.Threshold = int(v)
		case "probe_interval":
			f.ProbeInterval, ok = w.duration(vn, fpath, time.Millisecond)
		case "retry_after":
			f.RetryAfter, ok = w.duration(vn, fpath, time.Millisecond)
		}
		good = good && ok
	})
	if !hasPolicy && good {
		w.fail(r, path, "missing policy (fail_open, fail_closed or fallback)")
		good = false
	}
	return f, good
}

func (d *decoder) failurePolicy(n *yaml.Node, path, s string, breakerForms bool) (Failure, bool) {
	k := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
	var f Failure
	if breakerForms {
		if rest, ok := strings.CutPrefix(k, "breaker/"); ok {
			f.Breaker, k = true, rest
		}
	}
	switch k {
	case "fail_open", "open":
		f.Policy = FailOpen
	case "fail_closed", "closed":
		f.Policy = FailClosed
	case "fallback":
		f.Policy = Fallback
	default:
		want := "fail_open, fail_closed or fallback"
		if breakerForms {
			want += ", optionally after breaker/ (breaker/fallback)"
		}
		d.w.fail(n, path, "unknown failure policy %q (want %s)", truncate(s), want)
		return Failure{}, false
	}
	return f, true
}
