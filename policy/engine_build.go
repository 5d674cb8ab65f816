package policy

// Compiling a policy for the Engine: domains into matching trees, rules and tiers into their layers.

import (
	"fmt"
	"net/netip"

	"github.com/admit-go/admit"
)

// builder compiles a policy.
type builder struct {
	e    *Engine
	prev map[string]*clayer
}

func (b *builder) domain(d *Domain, i int) (*cdomain, error) {
	e := b.e
	cd := &cdomain{name: d.Name, root: &cnode{}, shadow: d.Shadow || e.o.shadow}
	spec := d.Override
	// A store the engine lacks fails the domain's inline limits only,
	// when a request brings one (ErrNoStore).
	st, stErr := e.store(spec.Store)
	if !st.shared {
		spec.Failure = Failure{}
	}
	cd.ov = &overrides{e: e, domain: d.Name, spec: spec, store: st, storeErr: stErr}
	var errs errList
	if stErr == nil && spec.Prefetch != 0 {
		if err := e.canPrefetch(spec.Algorithm, st); err != nil {
			src := d.src
			if src == nil {
				src = &source{path: fmt.Sprintf("domains[%d]", i)}
			}
			path, pos, msg := errorAt(src, err, fmt.Sprintf("the inline limits of domain %q", truncate(d.Name)))
			errs.addErr(pos, path, msg, err)
		}
	}
	for j, r := range d.Rules {
		cr, err := b.rule(d, r)
		if err != nil {
			src := r.src
			if src == nil {
				src = &source{path: fmt.Sprintf("domains[%d].rules[%d]", i, j)}
			}
			path, pos, msg := errorAt(src, err, fmt.Sprintf("rule %q", truncate(r.Name)))
			errs.addErr(pos, path, msg, err)
			continue
		}
		if len(cr.replaces) > 0 {
			cd.replaces = true
		}
		cd.insert(r, cr)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return cd, nil
}

// insert adds a rule to the matching tree.
func (cd *cdomain) insert(r *Rule, cr *crule) {
	n := cd.root
	for _, m := range r.Match {
		n.children = true
		switch m.Kind {
		case MatchExact:
			if n.exact == nil {
				n.exact = map[entryKey]*cnode{}
			}
			k := entryKey{m.Key, m.Value}
			if n.exact[k] == nil {
				n.exact[k] = &cnode{}
			}
			n = n.exact[k]
		case MatchPrefix:
			var next *cnode
			for _, e := range n.prefix {
				if e.key == m.Key && e.prefix == m.Value {
					next = e.node
					break
				}
			}
			if next == nil {
				next = &cnode{}
				n.prefix = append(n.prefix, cedge{m.Key, m.Value, next})
			}
			n = next
		default:
			if n.any == nil {
				n.any = map[string]*cnode{}
			}
			if n.any[m.Key] == nil {
				n.any[m.Key] = &cnode{}
			}
			n = n.any[m.Key]
		}
	}
	n.rule = cr
}

// rule compiles rule r of domain d: its key, exemptions and layers (its
// own, or its tier table's).
func (b *builder) rule(d *Domain, r *Rule) (*crule, error) {
	cr := &crule{
		name:     r.Name,
		alias:    r.alias(),
		shadow:   r.Shadow,
		depth:    len(r.Match),
		replaces: append([]string(nil), r.Replaces...),
	}
	if d.envoy && r.Alias == "" {
		// envoyproxy/ratelimit replaces only limits with a name.
		cr.alias = ""
	}
	cr.constKey, cr.key = constKey(r)
	cr.exempt = exemptions(r)
	name := r.Store
	if r.Tiers == nil && r.Limits.adaptive() {
		name = StoreLocal // all of the rule, as Validate requires
	}
	store, err := b.e.store(name)
	if err != nil {
		return nil, err
	}
	if r.Tiers != nil {
		t, err := b.table(r, cr, store)
		if err != nil {
			return nil, err
		}
		cr.table = t
		return cr, nil
	}
	set, err := b.set(r, cr, "", &r.Limits, store)
	if err != nil {
		return nil, err
	}
	cr.own = set
	return cr, nil
}

// constKey reports whether every descriptor rule r matches has the same
// key (r is shared, or matches exact values only), and that key (empty for
// a shared rule).
func constKey(r *Rule) (same bool, key string) {
	same = r.Shared
	if !r.Shared {
		same = true
		for _, m := range r.Match {
			if m.Kind != MatchExact {
				same = false
			}
		}
		if same {
			var buf []byte
			for _, m := range r.Match {
				buf = appendValue(buf, m.Value)
			}
			key = string(buf)
		}
	}
	return same, key
}

// exemptions compiles the exemptions of rule r: the index of the match
// entry of each one's key (-1 if none), its values, and those that are
// address prefixes.
func exemptions(r *Rule) []cexempt {
	var exempt []cexempt
	for _, x := range r.Exempt {
		ce := cexempt{idx: -1, values: map[string]struct{}{}}
		for i, m := range r.Match {
			if m.Key == x.Key {
				ce.idx = i
				break
			}
		}
		for _, v := range x.Values {
			ce.values[v] = struct{}{}
			if p, err := netip.ParsePrefix(v); err == nil {
				ce.prefixes = append(ce.prefixes, p.Masked())
			}
		}
		exempt = append(exempt, ce)
	}
	return exempt
}

// table compiles the tier table of rule r, compiled as cr: it sets the
// index of the entry whose value picks the tier, and builds the layers of
// every tier.
func (b *builder) table(r *Rule, cr *crule, st store) (*ctable, error) {
	tk := r.TierKey
	if tk == "" {
		tk = r.Match[len(r.Match)-1].Key
	}
	for i, m := range r.Match {
		if m.Key == tk {
			cr.tierIdx = i
			break
		}
	}
	t := &ctable{assign: map[string]*cset{}}
	sets := map[string]*cset{}
	for _, name := range sortedKeys(r.Tiers.Tiers) {
		tier := r.Tiers.Tiers[name]
		set, err := b.set(r, cr, tier.Name, &tier.Limits, st)
		if err != nil {
			return nil, err
		}
		sets[name] = set
	}
	t.def = sets[r.Tiers.Default]
	for v, name := range r.Tiers.Assign {
		t.assign[v] = sets[name]
	}
	return t, nil
}

// set builds the layers of limits l of rule r, compiled as cr (of tier, if
// not empty).
func (b *builder) set(r *Rule, cr *crule, tier string, l *Limits, st store) (*cset, error) {
	s := &cset{tier: tier, unlimited: l.Unlimited}
	kinds := 0
	for _, has := range []bool{l.Rate != nil, l.Quota != nil, l.Concurrency != nil, l.AdaptiveConcurrency != nil, l.AdaptiveRate != nil, l.Lanes != nil} {
		if has {
			kinds++
		}
	}
	label := r.Name
	if tier != "" {
		label += "/" + tier
	}
	sub := func(kind string) string {
		if kinds > 1 {
			return label + "/" + kind
		}
		return label
	}
	failure := r.Failure
	if !st.shared {
		failure = Failure{}
	}
	if l.Rate != nil && r.Share != nil && tier == "" {
		c, err := b.shareLayer(r, cr, *l.Rate, st, failure, sub("rate"))
		if err != nil {
			return nil, err
		}
		s.layers = append(s.layers, c)
	} else if l.Rate != nil {
		def := fmt.Sprintf("rate %v %v prefetch %d delay %v", l.Algorithm, *l.Rate, r.Prefetch, r.Delay)
		if len(l.Rates) > 0 {
			def = fmt.Sprintf("rates %v %v", l.Algorithm, l.allRates())
		}
		c, err := b.layer(admit.KindRate, sub("rate"), st, failure, def, func(c *clayer) error {
			if len(l.Rates) > 0 {
				return b.e.buildRates(c, l.Algorithm, l.allRates(), st, failure)
			}
			c.delay = r.Delay
			return b.e.buildRate(c, l.Algorithm, *l.Rate, st, failure, r.Prefetch)
		})
		if err != nil {
			return nil, err
		}
		c.limit = *l.Rate
		if c.limit.Burst == 0 && c.limit.Rate != admit.Inf {
			c.limit.Burst = c.limit.Rate
		}
		s.layers = append(s.layers, c)
	}
	if q := l.Quota; q != nil {
		loc := "UTC"
		if q.Location != nil {
			loc = q.Location.String()
		}
		c, err := b.layer(admit.KindQuota, sub("quota"), st, failure, fmt.Sprintf("quota %d/%v %s %v", q.Limit, q.Period, loc, q.WeekStart), func(c *clayer) error {
			return b.e.buildQuota(c, q, st, failure)
		})
		if err != nil {
			return nil, err
		}
		c.limit, c.text = admit.Limit{Rate: q.Limit, Burst: q.Limit}, quotaText(q)
		s.layers = append(s.layers, c)
	}
	if cc := l.Concurrency; cc != nil {
		c, err := b.layer(admit.KindConcurrency, sub("concurrency"), st, failure, fmt.Sprintf("concurrency %d %v", cc.Max, cc.Lease), func(c *clayer) error {
			return b.e.buildConcurrency(c, cc, st, failure)
		})
		if err != nil {
			return nil, err
		}
		c.limit = admit.Limit{Rate: cc.Max, Burst: cc.Max}
		s.layers = append(s.layers, c)
	}
	if err := b.memoryOnly(r, cr, s, l, sub); err != nil {
		return nil, err
	}
	return s, nil
}

// memoryOnly adds the layers of the limits of l kept in memory only to s:
// adaptive ones and lanes (of a rule, never of a tier).
func (b *builder) memoryOnly(r *Rule, cr *crule, s *cset, l *Limits, sub func(string) string) error {
	single := cr.constKey
	if a := l.AdaptiveRate; a != nil {
		c, err := b.layer(admit.KindRate, sub("adaptive_rate"), store{name: StoreLocal}, Failure{}, fmt.Sprintf("%s single=%v", a.describe(), single), func(c *clayer) error {
			return b.e.buildAIMD(c, a, single)
		})
		if err != nil {
			return err
		}
		s.layers = append(s.layers, c)
	}
	if ln := l.Lanes; ln != nil {
		idx, only, err := laneOf(r, ln.laneKey(r))
		if err != nil {
			return fmt.Errorf("%w: lanes: %v", ErrInvalidPolicy, err)
		}
		kind := admit.KindRate
		if ln.Budget == nil {
			kind = admit.KindConcurrency
		}
		c, err := b.layer(kind, sub("lanes"), store{name: StoreLocal}, Failure{}, fmt.Sprintf("%s lane=%d only=%v", ln.describe(), idx, only), func(c *clayer) error {
			c.lanes, c.lane, c.laneOnly = true, idx, only
			if ln.Budget != nil {
				return b.e.buildRateLanes(c, ln, only)
			}
			return b.e.buildSlotLanes(c, ln, only)
		})
		if err != nil {
			return err
		}
		s.layers = append(s.layers, c)
	}
	if a := l.AdaptiveConcurrency; a != nil {
		c, err := b.layer(admit.KindConcurrency, sub("adaptive_concurrency"), store{name: StoreLocal}, Failure{}, fmt.Sprintf("%s single=%v", a.describe(), single), func(c *clayer) error {
			return b.e.buildGradient(c, a, single)
		})
		if err != nil {
			return err
		}
		s.layers = append(s.layers, c)
	}
	return nil
}

// layer returns the layer of this definition: the previous engine's if it
// had one (Config.Previous), else a new one built by build.
func (b *builder) layer(kind admit.Kind, label string, st store, f Failure, def string, build func(*clayer) error) (*clayer, error) {
	print := fmt.Sprintf("%s|%v|%s|%s|%+v", label, kind, st.name, def, f)
	if c := b.prev[print]; c != nil && (c.pf == nil || !c.pf.closed.Load()) {
		b.e.byPrint[print] = c
		return c, nil
	}
	if c := b.e.byPrint[print]; c != nil {
		return c, nil
	}
	c := &clayer{kind: kind, class: classOf(kind, st.shared), label: label, prefix: label + "/", print: print}
	if err := build(c); err != nil {
		return nil, err
	}
	b.e.byPrint[print] = c
	return c, nil
}
