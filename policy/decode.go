package policy

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
	defaultsFields = []string{"store", "algorithm", "failure"}
	domainFields   = []string{"domain", "description", "keys", "shadow", "overrides", "rules"}
	overrideFields = []string{"algorithm", "store", "failure"}
	ruleFields     = []string{"name", "description", "match", "rate", "burst", "algorithm", "quota", "concurrency", "adaptive_concurrency", "adaptive_rate", "lanes", "tiers", "tier_key", "unlimited", "store", "failure", "shadow", "exempt", "shared", "replaces"}
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
	store      Store
	algorithm  admit.Algorithm
	failure    Failure
	failurePos Pos
}

// ParseYAML parses a policy in this package's YAML format (see the package
// documentation). name names the file in errors. The error is an Errors
// listing every problem found, which matches ErrInvalidPolicy.
func ParseYAML(name string, data []byte) (*Policy, error) {
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
	var failN *yaml.Node
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
		}
	})
	if failN != nil && dom.Override.Store == StoreLocal {
		w.fail(failN, keyPath(path, "failure"), "a failure policy applies to limits kept in Redis (store: redis), and these are local")
		dom.Override.Failure = Failure{}
	} else if failN == nil && dom.Override.Store != StoreLocal {
		dom.Override.Failure = d.defaults.failure
	}
}

func (d *decoder) store(n *yaml.Node, path string) (Store, bool) {
	s, ok := d.w.str(n, path)
	if !ok {
		return 0, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "local", "memory":
		return StoreLocal, true
	case "redis":
		return StoreRedis, true
	}
	d.w.fail(n, path, "unknown store %q (want local or redis)", truncate(s))
	return 0, false
}

func (d *decoder) algorithm(n *yaml.Node, path string) (admit.Algorithm, bool) {
	s, ok := d.w.str(n, path)
	if !ok {
		return 0, false
	}
	a, err := admit.ParseAlgorithm(s)
	if err != nil {
		d.w.fail(n, path, "unknown algorithm %q (want one of gcra, token_bucket, leaky_bucket, fixed_window, sliding_window, sliding_log)", truncate(s))
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

// rateSpec is a rate as written: the limit, and whether its text gave a
// burst.
type rateSpec struct {
	limit    admit.Limit
	hasBurst bool
}

func (d *decoder) rate(n *yaml.Node, path string) (rateSpec, bool) {
	s, ok := d.w.str(n, path)
	if !ok {
		return rateSpec{}, false
	}
	l, err := ParseRate(s)
	if err != nil {
		d.w.fail(n, path, "%s", strings.Replace(err.Error(), admit.ErrInvalidLimit.Error(), "invalid rate", 1))
		return rateSpec{}, false
	}
	return rateSpec{l, strings.Contains(strings.ToLower(s), "burst")}, true
}

func (d *decoder) quota(n *yaml.Node, path string) (*Quota, bool) {
	w := d.w
	r := w.resolve(n, path)
	if r == nil {
		return nil, false
	}
	q := &Quota{WeekStart: time.Monday}
	if r.Kind == yaml.ScalarNode && r.ShortTag() != tagNull {
		s, _ := w.str(n, path)
		lim, per, err := parseQuota(s)
		if err != nil {
			w.fail(n, path, "invalid quota %q: %v", truncate(s), err)
			return nil, false
		}
		q.Limit, q.Period = lim, per
		return q, true
	}
	good, hasLimit, hasPeriod := true, false, false
	w.fields(n, path, quotaFields, func(key string, vn *yaml.Node, fpath string) {
		var ok bool
		switch key {
		case "limit":
			hasLimit = true
			q.Limit, ok = w.integer(vn, fpath, 1, maxExact)
		case "period":
			hasPeriod = true
			var s string
			if s, ok = w.str(vn, fpath); ok {
				if q.Period, ok = quotaPeriods[strings.ToLower(strings.TrimSpace(s))]; !ok {
					w.fail(vn, fpath, "unknown period %q (want hour, day, week, month or year)", truncate(s))
				}
			}
		case "timezone":
			var s string
			if s, ok = w.nonEmpty(vn, fpath); ok {
				loc, err := time.LoadLocation(s)
				if err != nil || strings.ContainsAny(s, "\x00") {
					w.fail(vn, fpath, "unknown time zone %q", truncate(s))
					ok = false
				} else {
					q.Location = loc
				}
			}
		case "week_start":
			var s string
			if s, ok = w.str(vn, fpath); ok {
				if q.WeekStart, ok = parseWeekday(s); !ok {
					w.fail(vn, fpath, "unknown day %q (want monday ... sunday)", truncate(s))
				}
			}
		}
		good = good && ok
	})
	if good && (!hasLimit || !hasPeriod) {
		w.fail(r, path, "a quota needs limit and period (or write it as \"1000/day\")")
		good = false
	}
	if !good {
		return nil, false
	}
	return q, true
}

func parseWeekday(s string) (time.Weekday, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for d := time.Sunday; d <= time.Saturday; d++ {
		name := strings.ToLower(d.String())
		if s == name || s == name[:3] {
			return d, true
		}
	}
	return 0, false
}

func (d *decoder) concurrency(n *yaml.Node, path string) (*Concurrency, bool) {
	w := d.w
	r := w.resolve(n, path)
	if r == nil {
		return nil, false
	}
	if r.Kind == yaml.ScalarNode {
		m, ok := w.integer(n, path, 1, maxExact)
		if !ok {
			return nil, false
		}
		return &Concurrency{Max: m}, true
	}
	c := &Concurrency{}
	good, hasMax := true, false
	w.fields(n, path, concFields, func(key string, vn *yaml.Node, fpath string) {
		var ok bool
		switch key {
		case "max":
			hasMax = true
			c.Max, ok = w.integer(vn, fpath, 1, maxExact)
		case "lease":
			c.Lease, ok = w.duration(vn, fpath, time.Millisecond)
		}
		good = good && ok
	})
	if good && !hasMax {
		w.fail(r, path, "a concurrency cap needs max")
		good = false
	}
	if !good {
		return nil, false
	}
	return c, true
}

// limitsSpec is a rule's or tier's limits as written, with what was given
// (for tier inheritance and the checks of presence).
type limitsSpec struct {
	rate                 *rateSpec
	burst                *int64
	algorithm            *admit.Algorithm
	quota                *Quota
	concurrency          *Concurrency
	unlimited            *bool
	adaptiveConc         *AdaptiveConcurrency
	adaptiveRate         *AdaptiveRate
	lanes                *Lanes
	rateN, burstN, algoN *yaml.Node
	ratePath, burstPath  string
	algoPath             string
}

// field decodes one limits field; it reports whether key is one.
func (d *decoder) limitsField(s *limitsSpec, key string, vn *yaml.Node, fpath string) bool {
	w := d.w
	switch key {
	case "rate":
		s.rateN, s.ratePath = vn, fpath
		if r, ok := d.rate(vn, fpath); ok {
			s.rate = &r
		}
	case "burst":
		s.burstN, s.burstPath = vn, fpath
		if b, ok := w.integer(vn, fpath, 0, math.MaxInt64); ok {
			s.burst = &b
		}
	case "algorithm":
		s.algoN, s.algoPath = vn, fpath
		if a, ok := d.algorithm(vn, fpath); ok {
			s.algorithm = &a
		}
	case "quota":
		s.quota, _ = d.quota(vn, fpath)
	case "concurrency":
		s.concurrency, _ = d.concurrency(vn, fpath)
	case "unlimited":
		if b, ok := w.boolean(vn, fpath); ok {
			s.unlimited = &b
		}
	default:
		return false
	}
	return true
}

// build turns a spec into Limits, checking burst against rate.
func (d *decoder) build(s *limitsSpec, alg admit.Algorithm) Limits {
	w := d.w
	var l Limits
	l.Algorithm = alg
	if s.algorithm != nil {
		l.Algorithm = *s.algorithm
	}
	if s.rate != nil {
		r := s.rate.limit
		l.Rate = &r
	}
	if s.burst != nil {
		switch {
		case s.rate == nil:
			w.fail(s.burstN, s.burstPath, "burst without a rate")
		case s.rate.hasBurst:
			w.fail(s.burstN, s.burstPath, "burst given twice: in the rate %q and here", l.Rate.String())
		default:
			l.Rate.Burst = *s.burst
			if err := l.Rate.Validate(); err != nil {
				w.fail(s.burstN, s.burstPath, "burst %d with rate %v: %s", *s.burst, admit.Limit{Rate: l.Rate.Rate, Period: l.Rate.Period}, limitReason(err))
				l.Rate.Burst = l.Rate.Rate
			}
		}
	}
	l.Quota, l.Concurrency = s.quota, s.concurrency
	l.AdaptiveConcurrency, l.AdaptiveRate, l.Lanes = s.adaptiveConc, s.adaptiveRate, s.lanes
	if s.unlimited != nil {
		l.Unlimited = *s.unlimited
	}
	return l
}

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

// parseTables decodes tier_tables.
func (d *decoder) parseTables(n *yaml.Node) {
	w := d.w
	w.mapping(n, "tier_tables", func(name string, kn, vn *yaml.Node) {
		path := keyPath("tier_tables", name)
		t := &TierTable{Name: name, Tiers: map[string]*Tier{}, Assign: map[string]string{}, src: &source{path: path, pos: w.pos(kn)}}
		specs := map[string]*tierSpec{}
		var order []string
		w.fields(vn, path, tableFields, func(key string, fn *yaml.Node, fpath string) {
			t.src.set(key, fpath, w.pos(fn))
			switch key {
			case "description":
				w.str(fn, fpath)
			case "default":
				var ok bool
				if t.Default, ok = w.nonEmpty(fn, fpath); !ok {
					t.src.markBroken("default")
				}
			case "tiers":
				w.mapping(fn, fpath, func(tier string, tkn, tvn *yaml.Node) {
					tp := keyPath(fpath, tier)
					t.src.set("tier:"+tier, tp, w.pos(tkn))
					s := &tierSpec{name: tier, path: tp, pos: w.pos(tkn)}
					mark := len(w.errs.errs)
					defer func() {
						if len(w.errs.errs) > mark {
							t.src.markBroken("tier:" + tier)
						}
					}()
					w.fields(tvn, tp, tierFields, func(key string, fn *yaml.Node, fp string) {
						t.src.set("tier:"+tier+"."+key, fp, w.pos(fn))
						switch key {
						case "description":
							w.str(fn, fp)
						case "extends":
							s.extendsN = fn
							s.extends, _ = w.nonEmpty(fn, fp)
						default:
							d.limitsField(&s.spec, key, fn, fp)
						}
					})
					specs[tier] = s
					order = append(order, tier)
				})
			case "assign":
				w.mapping(fn, fpath, func(val string, akn, avn *yaml.Node) {
					ap := keyPath(fpath, val)
					t.src.set("assign:"+val, ap, w.pos(avn))
					if tier, ok := w.nonEmpty(avn, ap); ok {
						t.Assign[val] = tier
					}
				})
			}
		})
		for _, name := range order {
			if tier := d.resolveTier(t, specs, name, nil); tier != nil {
				t.Tiers[name] = tier
			}
		}
		d.tables[name] = t
	})
}

// tierSpec is a tier as written, before inheritance.
type tierSpec struct {
	name, path string
	pos        Pos
	extends    string
	extendsN   *yaml.Node
	spec       limitsSpec
	done       bool
	visiting   bool
	tier       *Tier
	merged     limitsSpec
}

// resolveTier resolves a tier's extends chain (reporting unknown parents
// and cycles) and builds its limits.
func (d *decoder) resolveTier(t *TierTable, specs map[string]*tierSpec, name string, chain []string) *Tier {
	s := specs[name]
	if s.done {
		return s.tier
	}
	if s.visiting {
		return nil
	}
	s.visiting = true
	mark := len(d.w.errs.errs)
	defer func() {
		if len(d.w.errs.errs) > mark {
			t.src.markBroken("tier:" + name)
		}
	}()
	merged := s.spec
	if s.extends != "" {
		parent := specs[s.extends]
		switch {
		case parent == nil:
			d.w.fail(s.extendsN, keyPath(s.path, "extends"), "tier %q is not defined in this table", truncate(s.extends))
		case parent.visiting:
			cycle := append(append([]string{}, chain...), name, s.extends)
			d.w.fail(s.extendsN, keyPath(s.path, "extends"), "cyclic extends: %s", strings.Join(cycle, " -> "))
		default:
			if d.resolveTier(t, specs, s.extends, append(chain, name)) != nil {
				merged = inherit(parent.merged, s.spec)
			}
		}
	}
	s.visiting, s.done = false, true
	s.merged = merged
	s.tier = &Tier{Name: name, Limits: d.build(&merged, d.defaults.algorithm)}
	return s.tier
}

// inherit returns child's spec with the fields it does not give taken from
// parent. A child's burst applies to the parent's rate; a child's rate
// comes with its own burst (or none).
func inherit(parent, child limitsSpec) limitsSpec {
	m := child
	if m.rate == nil {
		m.rate, m.rateN, m.ratePath = parent.rate, parent.rateN, parent.ratePath
		if m.burst == nil {
			m.burst, m.burstN, m.burstPath = parent.burst, parent.burstN, parent.burstPath
		}
	}
	if m.algorithm == nil {
		m.algorithm, m.algoN, m.algoPath = parent.algorithm, parent.algoN, parent.algoPath
	}
	if m.quota == nil {
		m.quota = parent.quota
	}
	if m.concurrency == nil {
		m.concurrency = parent.concurrency
	}
	if m.unlimited == nil {
		m.unlimited = parent.unlimited
	}
	return m
}
