package policy

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/limits"
	"github.com/admit-go/admit/internal/policyfmt"
)

// Bounds of a policy.
const (
	// maxNameLength is the longest rule, domain or tier name, and key
	// prefix, in bytes: 256.
	maxNameLength = policyfmt.MaxNameLength
	// maxEntries is the most entries a rule matches (and so the deepest
	// descriptor a rule can match).
	maxEntries = 32
)

// Validate checks p and returns nil or an Errors listing every problem:
// empty or duplicate names (domains, rules), rules that can never match
// (a key the domain does not declare, a match identical to an earlier
// rule's, a prefix taken by an earlier rule's shorter prefix, an exempt
// value that is the only value the rule matches), limits outside their
// domain (see admit.Limit, ParseRate, Quota), contradictions (a rule
// with both tiers and limits, unlimited with a limit, a failure policy on
// a rule kept in memory, a local share without the fallback policy, a
// prefetch of a rule kept in memory, of a quota, a concurrency cap or a
// sliding log, or of blocks larger than the burst),
// tier tables without their default tier or assigning values to tiers
// they do not define, and replaces naming no rule. The loaders run it, so
// a loaded Policy is valid; NewEngine runs it too.
func (p *Policy) Validate() error {
	var errs errList
	validate(p, &errs)
	return errs.err()
}

type validator struct {
	errs   *errList
	names  map[string]*Rule
	tables map[*TierTable]bool
	srcs   map[*Rule]*source
}

// src returns where r was defined (a path made up for a rule built in Go).
func (v *validator) src(r *Rule) *source {
	if s := v.srcs[r]; s != nil {
		return s
	}
	return r.src
}

func (v *validator) at(src *source, field, format string, args ...any) {
	path, pos := src.at(field)
	v.errs.add(pos, path, fmt.Sprintf(format, args...))
}

func validate(p *Policy, errs *errList, tables ...*TierTable) {
	v := &validator{errs: errs, names: map[string]*Rule{}, tables: map[*TierTable]bool{}, srcs: map[*Rule]*source{}}
	domains := map[string]*source{}
	for i, d := range p.Domains {
		if d == nil {
			v.at(&source{path: fmt.Sprintf("domains[%d]", i)}, "", "nil domain")
			continue
		}
		src := d.src
		if src == nil {
			src = &source{path: fmt.Sprintf("domains[%d]", i)}
		}
		switch {
		case src.isBroken("domain"):
		case d.Name == "":
			v.at(src, "domain", "missing domain name")
		case domains[d.Name] != nil:
			_, first := domains[d.Name].at("domain")
			v.at(src, "domain", "duplicate domain %q (first at %s)", truncate(d.Name), first)
		default:
			v.name(src, "domain", d.Name)
			domains[d.Name] = src
		}
		seen := map[string]bool{}
		for j, k := range d.Keys {
			f := fmt.Sprintf("keys[%d]", j)
			switch {
			case k == "":
				v.at(src, f, "empty key")
			case seen[k]:
				v.at(src, f, "duplicate key %q", truncate(k))
			}
			seen[k] = true
		}
		v.override(d, src)
		for j, r := range d.Rules {
			rsrc := &source{path: fmt.Sprintf("%s.rules[%d]", src.path, j)}
			if src.path == "" {
				rsrc.path = fmt.Sprintf("rules[%d]", j)
			}
			if r == nil {
				v.at(rsrc, "", "nil rule")
				continue
			}
			if r.src != nil {
				rsrc = r.src
			}
			v.srcs[r] = rsrc
			v.rule(d, r, rsrc, seen)
		}
		v.replaces(d)
		v.tree(d)
	}
	for _, t := range tables {
		if !v.tables[t] {
			v.tables[t] = true
			v.table(t)
		}
	}
}

// name checks a name's length and characters.
func (v *validator) name(src *source, field, name string) {
	if len(name) > maxNameLength {
		v.at(src, field, "name of %d bytes is longer than the maximum of %d", len(name), maxNameLength)
		return
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			v.at(src, field, "name %q holds a control character", truncate(name))
			return
		}
	}
}

func (v *validator) override(d *Domain, src *source) {
	o := d.Override
	if int(o.Algorithm) >= len(admit.Algorithms()) {
		v.at(src, "overrides.algorithm", "unknown algorithm %v", o.Algorithm)
	}
	v.storeFailure(src, "overrides.", o.Store, o.Failure)
	v.overridePrefetch(&o, src)
}

func (v *validator) storeFailure(src *source, prefix string, s string, f Failure) {
	if s != storeDefault && !validStoreName(s) {
		v.at(src, prefix+"store", "invalid store name %q", truncate(s))
	}
	if s == StoreLocal && f != (Failure{}) {
		v.at(src, prefix+"failure", "a failure policy applies to rules kept in Redis (store: redis), and this one is local")
	}
	if f.Policy > Fallback {
		v.at(src, prefix+"failure", "unknown failure policy %v", f.Policy)
	}
	switch {
	case f.LocalShare < 0:
		v.at(src, prefix+"failure.local_share", "local_share %d is negative", f.LocalShare)
	case f.LocalShare > 0 && f.Policy != Fallback:
		v.at(src, prefix+"failure.local_share", "local_share applies to the fallback policy, and the policy is %v", f.Policy)
	}
	if f.Timeout < 0 {
		v.at(src, prefix+"failure.timeout", "timeout %v is negative", f.Timeout)
	}
	if f.Threshold < 0 {
		v.at(src, prefix+"failure.threshold", "threshold %d is negative", f.Threshold)
	}
	if f.ProbeInterval < 0 {
		v.at(src, prefix+"failure.probe_interval", "probe_interval %v is negative", f.ProbeInterval)
	}
	if f.RetryAfter < 0 {
		v.at(src, prefix+"failure.retry_after", "retry_after %v is negative", f.RetryAfter)
	}
}

// rule checks rule r of domain d, whose fields src locates; keys are
// the domain's keys, if it names some.
func (v *validator) rule(d *Domain, r *Rule, src *source, keys map[string]bool) {
	v.ruleName(r, src)
	matchKeys := v.ruleMatch(r, src, keys)
	v.ruleLimits(d, r, src, matchKeys)
	v.ruleShare(r, src, matchKeys)
	if r.Tiers != nil && !v.tables[r.Tiers] {
		v.tables[r.Tiers] = true
		v.table(r.Tiers)
	}
	if !src.isBroken("store") {
		v.storeFailure(src, "", r.Store, r.Failure)
	}
	v.rulePrefetch(r, src)
	v.ruleDelay(r, src)
	v.ruleExempt(r, src, matchKeys)
	v.ruleReplaces(r, src)
}

// ruleName checks a rule's name: given, unique in the policy, and a valid
// name.
func (v *validator) ruleName(r *Rule, src *source) {
	switch first, dup := v.names[r.Name]; {
	case src.isBroken("name"):
		// The loader said why.
	case r.Name == "":
		v.at(src, "name", "missing name")
	case dup:
		_, p := v.src(first).at("name")
		v.at(src, "name", "duplicate rule name %q (first at %s)", truncate(r.Name), p)
	default:
		v.name(src, "name", r.Name)
		v.names[r.Name] = r
	}
}

// ruleMatch checks a rule's matchers against the domain's keys, if it
// names some, and returns the index of the first matcher of each key.
func (v *validator) ruleMatch(r *Rule, src *source, keys map[string]bool) map[string]int {
	matchKeys := map[string]int{}
	switch {
	case src.isBroken("match"):
	case len(r.Match) == 0:
		v.at(src, "match", "missing match: a rule matches descriptors by their entries")
	case len(r.Match) > maxEntries:
		v.at(src, "match", "%d entries is more than the maximum of %d", len(r.Match), maxEntries)
	}
	for i, m := range r.Match {
		f := fmt.Sprintf("match[%d]", i)
		switch {
		case src.isBroken("match"):
		case m.Key == "":
			v.at(src, f, "empty key")
		case m.Kind > MatchPrefix:
			v.at(src, f, "unknown match kind %v", m.Kind)
		case len(keys) > 0 && !keys[m.Key]:
			v.at(src, f, "key %q is not among the domain's keys (%s): no descriptor has it, so the rule can never match", truncate(m.Key), strings.Join(sortedKeys(keys), ", "))
		}
		if _, dup := matchKeys[m.Key]; !dup {
			matchKeys[m.Key] = i
		}
	}
	return matchKeys
}

// ruleLimits checks a rule's limits: its tier key with a tier table, else
// its own limits.
func (v *validator) ruleLimits(d *Domain, r *Rule, src *source, matchKeys map[string]int) {
	switch {
	case src.isBroken("limits"):
	case r.Tiers != nil:
		if !r.Limits.empty() {
			v.at(src, "tiers", "a rule with tiers takes its limits from its tier table: remove its own limits")
		}
		tk := r.TierKey
		if tk == "" && len(r.Match) > 0 {
			tk = r.Match[len(r.Match)-1].Key
		}
		if _, ok := matchKeys[tk]; !ok && len(r.Match) > 0 {
			v.at(src, "tier_key", "no match entry has key %q, whose value would pick the tier", truncate(tk))
		}
	default:
		if r.TierKey != "" {
			v.at(src, "tier_key", "tier_key without tiers")
		}
		if r.Limits.empty() {
			if !d.envoy {
				v.at(src, "", "limits nothing: give rate, quota, concurrency, adaptive_concurrency, adaptive_rate, lanes, tiers or unlimited")
			}
		} else {
			v.limits(&r.Limits, src, "")
			v.memoryOnly(r, src, matchKeys)
		}
	}
}

// ruleExempt checks a rule's exemptions: each of a key the rule matches,
// with values, and not exempting all that the rule matches.
func (v *validator) ruleExempt(r *Rule, src *source, matchKeys map[string]int) {
	for _, e := range r.Exempt {
		if src.isBroken("exempt") || src.isBroken("match") {
			break
		}
		f := "exempt:" + e.Key
		i, ok := matchKeys[e.Key]
		switch {
		case e.Key == "":
			v.at(src, f, "empty key")
			continue
		case !ok:
			v.at(src, f, "no match entry has key %q: the exemption can never apply", truncate(e.Key))
			continue
		case len(e.Values) == 0:
			v.at(src, f, "no values")
		}
		if m := r.Match[i]; m.Kind == MatchExact {
			for _, val := range e.Values {
				if val == m.Value || exemptRange(val, m.Value) {
					v.at(src, f, "the rule matches only %s %q, which is exempt: it can never apply", m.Key, truncate(m.Value))
					break
				}
			}
		}
	}
}

// ruleReplaces checks the names a rule replaces: not empty, and not its
// own.
func (v *validator) ruleReplaces(r *Rule, src *source) {
	for i, name := range r.Replaces {
		f := fmt.Sprintf("replaces[%d]", i)
		switch {
		case name == "":
			v.at(src, f, "empty name")
		case name == r.alias():
			v.at(src, f, "a rule cannot replace itself")
		}
	}
}

// exemptRange reports whether exemption value e is a CIDR prefix holding
// the IP address value.
func exemptRange(e, value string) bool {
	p, err := netip.ParsePrefix(e)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(value)
	return err == nil && p.Contains(a.Unmap())
}

func (r *Rule) alias() string {
	if r.Alias != "" {
		return r.Alias
	}
	return r.Name
}

// limits checks the limits of a rule or tier; prefix is the tier's field
// prefix ("" for a rule).
func (v *validator) limits(l *Limits, src *source, prefix string) {
	if l.Unlimited && (l.Rate != nil || l.Quota != nil || l.Concurrency != nil) {
		v.at(src, prefix+"unlimited", "unlimited contradicts the rate, quota or concurrency also given")
	} else if l.Unlimited && l.adaptive() {
		v.at(src, prefix+"unlimited", "unlimited contradicts the adaptive_concurrency, adaptive_rate or lanes also given")
	}
	if int(l.Algorithm) >= len(admit.Algorithms()) {
		v.at(src, prefix+"algorithm", "unknown algorithm %v", l.Algorithm)
	} else if l.Rate != nil && len(l.Rates) == 0 {
		if c := limits.Compile(l.Algorithm, *l.Rate); c.Err != nil {
			v.at(src, prefix+"rate", "invalid rate %v for %v: %s", *l.Rate, l.Algorithm, limitReason(c.Err))
		}
	} else if len(l.Rates) > 0 {
		v.rates(l, src, prefix)
	}
	if q := l.Quota; q != nil {
		if err := checkCount(q.Limit, "a quota"); err != nil {
			v.at(src, prefix+"quota", "%v", err)
		}
		if q.Period.String() == fmt.Sprintf("Period(%d)", uint8(q.Period)) {
			v.at(src, prefix+"quota", "unknown period %v", q.Period)
		}
		if q.WeekStart < 0 || q.WeekStart > 6 {
			v.at(src, prefix+"quota", "unknown week start %d", q.WeekStart)
		}
	}
	if c := l.Concurrency; c != nil {
		if err := checkCount(c.Max, "a concurrency cap"); err != nil {
			v.at(src, prefix+"concurrency", "%v", err)
		}
		if c.Lease < 0 {
			v.at(src, prefix+"concurrency", "lease %v is negative", c.Lease)
		}
	}
}

func (v *validator) table(t *TierTable) {
	src := t.src
	if src == nil {
		src = &source{path: "tier_tables." + t.Name}
	}
	if len(t.Tiers) == 0 {
		v.at(src, "tiers", "no tiers")
	}
	switch _, ok := t.Tiers[t.Default]; {
	case src.isBroken("default"):
	case t.Default == "":
		v.at(src, "default", "missing default: the tier of values the table does not assign")
	case !ok:
		v.at(src, "default", "default tier %q is not defined (tiers: %s)", truncate(t.Default), strings.Join(sortedKeys(t.Tiers), ", "))
	}
	for _, name := range sortedKeys(t.Tiers) {
		tier := t.Tiers[name]
		f := "tier:" + name
		switch {
		case tier == nil:
			v.at(src, f, "nil tier")
			continue
		case tier.Name != name:
			v.at(src, f, "tier %q is named %q", truncate(name), truncate(tier.Name))
		case src.isBroken(f):
			continue
		}
		v.name(src, f, name)
		if tier.Limits.empty() {
			v.at(src, f, "tier %q limits nothing: give rate, quota, concurrency or unlimited", truncate(name))
			continue
		}
		v.limits(&tier.Limits, src, f+".")
		if tier.Limits.adaptive() {
			v.at(src, f, "tier %q has adaptive_concurrency, adaptive_rate or lanes, which only a rule may have", truncate(name))
		}
	}
	for _, val := range sortedKeys(t.Assign) {
		if tier := t.Assign[val]; t.Tiers[tier] == nil {
			v.at(src, "assign:"+val, "tier %q is not defined (tiers: %s)", truncate(tier), strings.Join(sortedKeys(t.Tiers), ", "))
		}
	}
}

// replaces checks that the names rules replace exist (in this package's
// format; envoyproxy/ratelimit does not check).
func (v *validator) replaces(d *Domain) {
	if d.envoy {
		return
	}
	aliases := map[string]bool{}
	for _, r := range d.Rules {
		if r != nil {
			aliases[r.alias()] = true
		}
	}
	for _, r := range d.Rules {
		if r == nil {
			continue
		}
		for i, name := range r.Replaces {
			if name != "" && name != r.alias() && !aliases[name] {
				v.at(v.src(r), fmt.Sprintf("replaces[%d]", i), "no rule of domain %q is named %q", truncate(d.Name), truncate(name))
			}
		}
	}
}

// vnode is a node of the matching tree Validate builds to find rules
// that can never match.
type vnode struct {
	exact  map[entryKey]*vnode
	prefix []*vedge
	any    map[string]*vnode
	rule   *Rule
}

type vedge struct {
	key, prefix string
	node        *vnode
	first       *Rule // the rule that made the edge
}

type entryKey struct{ key, value string }

// tree builds the domain's matching tree and reports rules that can never
// match: the same match as an earlier rule, or a path through a prefix
// that an earlier, shorter prefix takes first.
func (v *validator) tree(d *Domain) {
	root := &vnode{}
	for _, r := range d.Rules {
		if r == nil || len(r.Match) == 0 || len(r.Match) > maxEntries {
			continue
		}
		if v.src(r).isBroken("match") {
			continue
		}
		n := root
		var by *vedge       // the earlier prefix edge that shadows r's path
		var shadowed string // the prefix of r it shadows
		for _, m := range r.Match {
			switch m.Kind {
			case MatchExact:
				if n.exact == nil {
					n.exact = map[entryKey]*vnode{}
				}
				k := entryKey{m.Key, m.Value}
				if n.exact[k] == nil {
					n.exact[k] = &vnode{}
				}
				n = n.exact[k]
			case MatchPrefix:
				var e *vedge
				for _, x := range n.prefix {
					if x.key != m.Key {
						continue
					}
					if x.prefix == m.Value {
						e = x
						break
					}
					if by == nil && strings.HasPrefix(m.Value, x.prefix) {
						by, shadowed = x, m.Value
					}
				}
				if e == nil {
					e = &vedge{key: m.Key, prefix: m.Value, node: &vnode{}, first: r}
					n.prefix = append(n.prefix, e)
				}
				n = e.node
			default:
				if n.any == nil {
					n.any = map[string]*vnode{}
				}
				if n.any[m.Key] == nil {
					n.any[m.Key] = &vnode{}
				}
				n = n.any[m.Key]
			}
		}
		switch {
		case n.rule != nil:
			_, p := v.src(n.rule).at("match")
			v.at(v.src(r), "match", "can never match: rule %q (at %s) has the same match", truncate(n.rule.Name), p)
		case by != nil && !d.envoy:
			v.at(v.src(r), "match", "can never match: values starting with %q are taken first by the prefix %q of rule %q (put the longer prefix first)", truncate(shadowed), truncate(by.prefix), truncate(by.first.Name))
		default:
			n.rule = r
		}
	}
}
