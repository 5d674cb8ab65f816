package policy

import (
	"fmt"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/envoyunit"
)

// The fields of envoyproxy/ratelimit's configuration files.
var (
	envoyTopFields     = []string{"domain", "descriptors"}
	envoyDescFields    = []string{"key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric", "quota_mode", "value_to_metric", "share_threshold"}
	envoyLimitFields   = []string{"unit", "requests_per_unit", "unlimited", "name", "replaces"}
	envoyReplaceFields = []string{"name"}
)

// parseEnvoy parses a configuration file of envoyproxy/ratelimit (one
// domain and its descriptors) into a Policy with the meaning it has there:
//
//   - Each descriptor with a rate_limit is a Rule named by its full key
//     ("domain.key_value.key2", as envoyproxy/ratelimit names its stats),
//     with Alias rate_limit.name, matching its path of keys and values: a
//     value matches exactly, a value ending in "*" matches by prefix, no
//     value matches any value (one limit per value).
//   - requests_per_unit per unit (second, minute, hour, day, week, month =
//     30 days, year = 365 days) is a fixed window aligned on the Unix
//     epoch: Limits{Rate: requests_per_unit per unit, Algorithm:
//     admit.AlgFixedWindow}. requests_per_unit 0 refuses everything.
//   - unlimited: true is Limits.Unlimited; shadow_mode is Rule.Shadow;
//     replaces is Rule.Replaces; share_threshold is Rule.Shared;
//     detailed_metric is Rule.DetailedMetric; quota_mode (over-limit
//     results reported, never enforced) is taken as shadow mode;
//     value_to_metric, which only names metrics, is accepted and ignored.
//   - A descriptor without rate_limit and without nested descriptors is a
//     Rule that limits nothing: matching it stops the search, so the
//     descriptor is not limited (envoyproxy/ratelimit's whitelist).
//   - Matching is envoyproxy/ratelimit's: a request descriptor of N
//     entries matches only at depth N, the most specific entry first
//     (key and value, then a prefix, then the key alone) at each level
//     (see Rule).
//   - Rules keep the empty Store, the default store: the engine keeps them in Redis if it has a
//     Redis store, as envoyproxy/ratelimit does, and fails open when
//     Redis fails, as Envoy does by default.
//
// One difference: envoyproxy/ratelimit counts a request a descriptor
// refuses in the other descriptors' windows too (unless
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT is set); the engine never counts
// a refused request (see Engine.Check), as that setting does.
//
// The checks are envoyproxy/ratelimit's (an empty domain or key, a
// duplicate descriptor, an unknown field or unit, a unit with unlimited,
// an empty or self-referring replaces), with every error naming its file,
// line and field, and every error reported. A wildcard "*" anywhere but
// at the end of a value is refused rather than taken literally.
func parseEnvoy(name string, data []byte) (*Policy, error) {
	var errs errList
	root, w := parseYAML(name, data, &errs)
	if root == nil {
		if len(errs.errs) == 0 {
			errs.add(Pos{File: name, Line: 1}, "", "empty file: want domain and descriptors")
		}
		return nil, errs.err()
	}
	e := &envoyDecoder{w: w}
	p := e.policy(root)
	if !w.exhausted {
		validate(p, &errs)
	}
	errs.sort()
	if err := errs.err(); err != nil {
		return nil, err
	}
	return p, nil
}

type envoyDecoder struct {
	w *walker
}

func (e *envoyDecoder) policy(root *yaml.Node) *Policy {
	w := e.w
	dom := &Domain{envoy: true, Override: Override{Algorithm: admit.AlgFixedWindow, Store: storeDefault}, src: &source{pos: w.pos(root)}}
	var descs *yaml.Node
	hasDomain := false
	ok := w.fields(root, "", envoyTopFields, func(key string, vn *yaml.Node, fpath string) {
		switch key {
		case "domain":
			hasDomain = true
			dom.src.set("domain", fpath, w.pos(vn))
			s, ok := w.str(vn, fpath)
			if ok && s == "" {
				w.fail(vn, fpath, "config file cannot have empty domain")
			}
			if !ok || s == "" {
				dom.src.markBroken("domain")
			}
			dom.Name = s
		case "descriptors":
			descs = vn
		}
	})
	if !ok {
		return &Policy{}
	}
	if !hasDomain {
		w.fail(w.resolve(root, ""), "domain", "missing domain")
		dom.src.markBroken("domain")
	}
	if descs != nil && !w.null(descs, "descriptors") {
		e.descriptors(dom, descs, "descriptors", nil, dom.Name+".")
	}
	return &Policy{Domains: []*Domain{dom}}
}

// descriptors decodes a list of descriptors below the path of matchers
// parent, whose full key is parentKey.
func (e *envoyDecoder) descriptors(dom *Domain, n *yaml.Node, path string, parent []Matcher, parentKey string) {
	w := e.w
	seen := map[string]int{} // composite key -> line
	w.list(n, path, false, func(i int, item *yaml.Node, ipath string) {
		ed, ok := e.descriptorFields(item, ipath)
		if !ok {
			return
		}
		m, final, ok := e.descriptorMatcher(&ed, item, ipath)
		if !ok {
			return
		}
		full := parentKey + final
		if line, dup := seen[final]; dup {
			w.fail(w.resolve(item, ipath), ipath, "duplicate descriptor composite key '%s' (first at line %d)", truncate(full), line)
			return
		}
		seen[final] = w.line(item, ipath)
		match := append(append([]Matcher(nil), parent...), m)
		if len(match) > maxEntries {
			w.fail(w.resolve(item, ipath), ipath, "descriptors nested deeper than %d levels", maxEntries)
			return
		}
		src := &source{path: ipath, pos: w.pos(item)}
		src.set("match", ipath, w.pos(item))
		r := &Rule{Name: full, Match: match, Shadow: ed.shadow || ed.quotaMode, Shared: ed.shareThresh, DetailedMetric: ed.detailed, src: src}
		hasNested := ed.nested != nil && !w.null(ed.nested, keyPath(ipath, "descriptors"))
		switch {
		case ed.rl != nil:
			if !e.rateLimit(r, ed.rl, keyPath(ipath, "rate_limit")) {
				return
			}
			dom.Rules = append(dom.Rules, r)
		case !hasNested:
			dom.Rules = append(dom.Rules, r) // a whitelisted descriptor
		}
		if hasNested {
			e.descriptors(dom, ed.nested, keyPath(ipath, "descriptors"), match, full+".")
		}
	})
}

// envoyDescriptor is a descriptor as written: its fields, and the nodes
// that its checks name.
type envoyDescriptor struct {
	key, value            string
	hasKey, hasValue      bool
	rl, nested            *yaml.Node
	shadow, quotaMode     bool
	detailed, shareThresh bool
	keyN, valueN          *yaml.Node
}

// descriptorFields decodes the fields of the descriptor at item; it
// reports false if item is not a mapping of descriptor fields.
func (e *envoyDecoder) descriptorFields(item *yaml.Node, ipath string) (envoyDescriptor, bool) {
	w := e.w
	var ed envoyDescriptor
	ok := w.fields(item, ipath, envoyDescFields, func(k string, vn *yaml.Node, fpath string) {
		switch k {
		case "key":
			ed.hasKey, ed.keyN = true, vn
			ed.key, _ = w.str(vn, fpath)
		case "value":
			ed.hasValue, ed.valueN = true, vn
			ed.value, _ = w.str(vn, fpath)
		case "rate_limit":
			ed.rl = vn
		case "descriptors":
			ed.nested = vn
		case "shadow_mode":
			ed.shadow, _ = w.boolean(vn, fpath)
		case "detailed_metric":
			ed.detailed, _ = w.boolean(vn, fpath)
		case "quota_mode":
			ed.quotaMode, _ = w.boolean(vn, fpath)
		case "value_to_metric":
			w.boolean(vn, fpath)
		case "share_threshold":
			ed.shareThresh, _ = w.boolean(vn, fpath)
		}
	})
	return ed, ok
}

// descriptorMatcher returns the matcher of descriptor ed (at item) and its
// part of the full key, reporting an empty key and a wildcard anywhere but
// at the end of the value; it reports false for those.
func (e *envoyDecoder) descriptorMatcher(ed *envoyDescriptor, item *yaml.Node, ipath string) (Matcher, string, bool) {
	w := e.w
	if !ed.hasKey || ed.key == "" {
		at := ed.keyN
		if at == nil {
			at = w.resolve(item, ipath)
		}
		w.fail(at, keyPath(ipath, "key"), "descriptor has empty key")
		return Matcher{}, "", false
	}
	key, value := ed.key, ed.value
	m := Matcher{Key: key}
	final := key
	if ed.hasValue && value != "" {
		final += "_" + value
		switch j := strings.IndexByte(value, '*'); {
		case j < 0:
			m.Kind, m.Value = MatchExact, value
		case j == len(value)-1:
			m.Kind, m.Value = MatchPrefix, value[:j]
		default:
			w.fail(ed.valueN, keyPath(ipath, "value"), "wildcard %q: only a trailing * (a prefix) is supported", truncate(value))
			return Matcher{}, "", false
		}
	}
	return m, final, true
}

// rateLimit decodes a rate_limit block into r; it reports whether it is
// valid.
func (e *envoyDecoder) rateLimit(r *Rule, n *yaml.Node, path string) bool {
	w := e.w
	var (
		unitStr            string
		hasUnit, unlimited bool
		rpu                int64
		unitN, rpuN        *yaml.Node
		replaces           []string
		replaceNodes       []*yaml.Node
		good               = true
	)
	ok := w.fields(n, path, envoyLimitFields, func(key string, vn *yaml.Node, fpath string) {
		var ok bool
		switch key {
		case "unit":
			hasUnit, unitN = true, vn
			unitStr, ok = w.str(vn, fpath)
		case "requests_per_unit":
			rpuN = vn
			rpu, ok = w.integer(vn, fpath, 0, math.MaxUint32)
		case "unlimited":
			unlimited, ok = w.boolean(vn, fpath)
		case "name":
			r.Alias, ok = w.str(vn, fpath)
			r.src.set("name", fpath, w.pos(vn))
		case "replaces":
			ok = w.list(vn, fpath, false, func(i int, item *yaml.Node, ipath string) {
				var name string
				has := false
				w.fields(item, ipath, envoyReplaceFields, func(key string, vn *yaml.Node, fp string) {
					has = true
					name, _ = w.str(vn, fp)
				})
				if !has || name == "" {
					w.fail(w.resolve(item, ipath), ipath, "should not have an empty replaces entry")
					good = false
					return
				}
				replaces = append(replaces, name)
				replaceNodes = append(replaceNodes, item)
				r.src.set(fmt.Sprintf("replaces[%d]", len(replaces)-1), ipath, w.pos(item))
			})
		}
		good = good && ok
	})
	if !ok || !good {
		return false
	}
	unit, uerr := envoyunit.Parse(unitStr)
	switch {
	case unlimited && hasUnit && uerr == nil:
		w.fail(unitN, keyPath(path, "unit"), "should not specify rate limit unit when unlimited")
		return false
	case unlimited:
		r.Unlimited = true
	case !hasUnit:
		at := w.resolve(n, path)
		w.fail(at, path, "invalid rate limit unit '': want second, minute, hour, day, week, month or year")
		return false
	case uerr != nil:
		w.fail(unitN, keyPath(path, "unit"), "invalid rate limit unit '%s': want second, minute, hour, day, week, month or year", truncate(unitStr))
		return false
	default:
		l, _ := envoyunit.Limit(uint32(rpu), unit)
		r.Rate = &l
		r.Algorithm = admit.AlgFixedWindow
		if rpuN != nil {
			r.src.set("rate", keyPath(path, "requests_per_unit"), w.pos(rpuN))
		}
	}
	for i, name := range replaces {
		if name == r.Alias {
			w.fail(replaceNodes[i], fmt.Sprintf("%s.replaces[%d]", path, i), "replaces should not contain name of same descriptor")
			return false
		}
	}
	r.Replaces = replaces
	return true
}
