package policy

// A rule's rate shared by tenants in proportion to their weights: the
// model (Share), its decoding and checks, and its layer in the engine.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/algo"
	"go.yaml.in/yaml/v3"
)

// Share makes a rule's rate a budget that tenants share in proportion to
// their weights, work-conserving (fair.Share; redisstore's Store.Share for
// a rule kept in Redis): the tenant of a request is the value of its
// descriptor's entry of key Key, and any value is a tenant. When the
// tenants ask more than the budget, each active tenant (one that asked
// within the last Idle) gets at least its weight's part of it; what an
// idle tenant leaves goes to the busy ones. The budget is the rule's rate
// per key made of the values of the other entries (a rule whose other
// entries match exact values, or Shared, has one budget), and the rate
// must be decided by GCRA.
//
// A rule with a Share limits by its rate only: no quota, concurrency cap,
// adaptive limit, lanes, tiers or prefetch (put them in rules of their
// own). It may be kept in memory or in a shared store (then with its
// failure policy, whose Fallback shares 1/LocalShare of the budget in
// memory).
//
// The zero Share gives every tenant of the last entry weight 1.
type Share struct {
	// Key is the key of the match entry whose value is the tenant; empty
	// means the key of the last entry.
	Key string
	// Weights are the weights of tenants, by value: from 1 to 2^20.
	Weights map[string]int64
	// Default is the weight of the tenants Weights does not list, from 1
	// to 2^20; 0 means 1.
	Default int64
	// Idle is how long a tenant stays active after its last request, at
	// most (fair.ShareConfig.Idle): from 2ns to an hour; 0 means a
	// second.
	Idle time.Duration
}

// key returns the key of the entry whose value is the tenant of rule r.
func (sh *Share) key(r *Rule) string {
	if sh.Key == "" && len(r.Match) > 0 {
		return r.Match[len(r.Match)-1].Key
	}
	return sh.Key
}

// weight returns the weight function of fair.ShareConfig.
func (sh *Share) weight() func(string) int64 {
	def := sh.Default
	if def == 0 {
		def = 1
	}
	weights := make(map[string]int64, len(sh.Weights))
	for k, v := range sh.Weights {
		weights[k] = v
	}
	return func(tenant string) int64 {
		if w, ok := weights[tenant]; ok {
			return w
		}
		return def
	}
}

// describe returns the Share as text, for the print of its layer.
func (sh *Share) describe() string {
	names := make([]string, 0, len(sh.Weights))
	for k := range sh.Weights {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "share default=%d idle=%v weights=", sh.Default, sh.Idle)
	for _, k := range names {
		fmt.Fprintf(&b, "%q:%d,", k, sh.Weights[k])
	}
	return b.String()
}

var shareFields = []string{"key", "weights", "default", "idle"}

// share decodes a rule's share, recording the positions of its fields in
// src.
func (d *decoder) share(n *yaml.Node, path string, src *source) *Share {
	w := d.w
	if w.resolve(n, path) == nil {
		return nil
	}
	sh := &Share{}
	w.fields(n, path, shareFields, func(key string, vn *yaml.Node, fpath string) {
		src.set("share."+key, fpath, w.pos(vn))
		switch key {
		case "key":
			sh.Key, _ = w.nonEmpty(vn, fpath)
		case "weights":
			sh.Weights = map[string]int64{}
			w.mapping(vn, fpath, func(name string, kn, wn *yaml.Node) {
				wp := keyPath(fpath, name)
				src.set("share.weights:"+name, wp, w.pos(kn))
				if x, ok := w.integer(wn, wp, 1, algo.ShareMaxWeight); ok {
					sh.Weights[name] = x
				}
			})
		case "default":
			sh.Default, _ = w.integer(vn, fpath, 1, algo.ShareMaxWeight)
		case "idle":
			if idle, ok := w.duration(vn, fpath, 2); ok && idle > time.Hour {
				w.fail(vn, fpath, "idle %v is too long (the maximum is 1h)", idle)
			} else {
				sh.Idle = idle
			}
		}
	})
	return sh
}

// ruleShare checks the share of rule r: of the rule's own rate, by GCRA,
// alone, with a tenant among its match entries and weights in range.
func (v *validator) ruleShare(r *Rule, src *source, matchKeys map[string]int) {
	sh := r.Share
	if sh == nil || src.isBroken("limits") {
		return
	}
	l := &r.Limits
	const alone = "share divides a rate among tenants and limits by nothing else"
	switch {
	case r.Tiers != nil:
		v.at(src, "share", "share divides the rule's own rate among tenants, and a rule with tiers has none: give rate, not tiers")
	case l.Quota != nil:
		v.at(src, "share", "%s: a quota is not shared by weights; put the quota in a rule of its own", alone)
	case l.Concurrency != nil:
		v.at(src, "share", "%s: a concurrency cap is not shared by weights; put the cap in a rule of its own (or use lanes)", alone)
	case l.adaptive() || l.Unlimited:
		v.at(src, "share", "%s: put adaptive limits, lanes and unlimited in rules of their own", alone)
	case l.Rate == nil:
		v.at(src, "share", "share needs a rate to divide among tenants (rate: 1000/s)")
	case len(l.Rates) > 0:
		v.at(src, "share", "share divides one rate among tenants, and the rule has %d: give one rate, or put the others in a rule of their own", len(l.Rates)+1)
	case l.Rate.Rate == admit.Inf || l.Rate.Rate == 0:
		v.at(src, "rate", "a shared rate must be limited and not zero, got %v", *l.Rate)
	case l.Algorithm != admit.AlgGCRA:
		v.at(src, "algorithm", "a shared rate is decided by gcra, not %v", l.Algorithm)
	}
	if key := sh.key(r); !src.isBroken("match") && len(r.Match) > 0 {
		if _, ok := matchKeys[key]; !ok {
			v.at(src, "share.key", "no match entry has key %q, whose value would be the tenant", truncate(key))
		}
	}
	for _, name := range sortedKeys(sh.Weights) {
		if x := sh.Weights[name]; x < 1 || x > algo.ShareMaxWeight {
			f := "share.weights:" + name
			if src == nil || src.fields[f].path == "" {
				f = "share.weights." + name // a Policy built in Go
			}
			v.at(src, f, "weight %d of %q: want 1 to %d", x, truncate(name), algo.ShareMaxWeight)
		}
	}
	if sh.Default < 0 || sh.Default > algo.ShareMaxWeight {
		v.at(src, "share.default", "default weight %d: want 1 to %d (or 0 for 1)", sh.Default, algo.ShareMaxWeight)
	}
	if sh.Idle < 0 || sh.Idle == 1 || sh.Idle > time.Hour {
		v.at(src, "share.idle", "idle %v: want 2ns to 1h (or 0 for 1s)", sh.Idle)
	}
}

// shareLayer builds the layer of the rate of rule r, compiled as cr,
// shared by its tenants (r.Share), in store st with failure policy f.
func (b *builder) shareLayer(r *Rule, cr *crule, rate admit.Limit, st store, f Failure, label string) (*clayer, error) {
	sh := r.Share
	idx, only, err := laneOf(r, sh.key(r))
	if err != nil {
		return nil, fmt.Errorf("%w: share: %v", ErrInvalidPolicy, err)
	}
	c, err := b.layer(admit.KindRate, label, st, f, fmt.Sprintf("rate %v %s tenant=%d only=%v", rate, sh.describe(), idx, only), func(c *clayer) error {
		c.lanes, c.lane, c.laneOnly = true, idx, only
		return b.e.buildShare(c, rate, sh, st, f, only)
	})
	if err != nil {
		return nil, err
	}
	c.limit = rate
	if c.limit.Burst == 0 {
		c.limit.Burst = c.limit.Rate
	}
	return c, nil
}

// laneOf returns the index of the match entry of rule r with key, whose
// value picks a lane or a tenant, and whether the other entries make no
// key (one budget).
func laneOf(r *Rule, key string) (idx int, only bool, err error) {
	idx, only = -1, r.Shared
	if !only {
		only = true
		for _, m := range r.Match {
			if m.Key != key && m.Kind != MatchExact {
				only = false
			}
		}
	}
	for i, m := range r.Match {
		if m.Key == key {
			return i, only, nil
		}
	}
	return -1, false, fmt.Errorf("no match entry has key %q", key)
}

// buildShare sets the limiter of c: budget shared by the tenants of sh, in
// memory (fair.Share per key of the budget), or in the shared store st
// (Spec.Share) behind failure policy f, whose Fallback shares this
// instance's part of the budget in memory.
func (e *Engine) buildShare(c *clayer, budget admit.Limit, sh *Share, st store, f Failure, single bool) error {
	cfg := fair.ShareConfig{
		Options:    admit.Options{Clock: e.o.clock, Name: c.label},
		Budget:     budget,
		Weight:     sh.weight(),
		Idle:       sh.Idle,
		MaxTenants: e.maxKeysOf(),
	}
	if !st.shared {
		lim, err := e.localShare(cfg, single)
		c.lim, c.shortKey = lim, true
		return err
	}
	s := e.spec(c.label)
	s.Limit, s.Share = budget, &cfg
	lim, err := st.b.Rate(s)
	if err != nil {
		return err
	}
	return e.keyedLimiter(c, lim, st, f, func(Backend) (admit.KeyedLimiter, error) {
		local := cfg
		local.Name = c.label + "/fallback"
		var err error
		if local.Budget, err = budget.Share(share(f)); err != nil {
			return nil, err
		}
		return e.localShare(local, single)
	})
}

// localShare returns a fair.Share of cfg per key of the budget.
func (e *Engine) localShare(cfg fair.ShareConfig, single bool) (admit.KeyedLimiter, error) {
	if _, err := fair.NewShare(cfg); err != nil {
		return nil, err
	}
	clock := e.o.clock
	s := &perBudget[*fair.Share]{}
	s.keys = newPerKey(single, e.maxKeysOf(), func() *fair.Share {
		x, _ := fair.NewShare(cfg) // checked above
		return x
	}, func(x *fair.Share) bool {
		// The budget full: forgetting it loses at most what its tenants
		// had used of their shares.
		d, _ := x.Allow(context.Background(), admit.Request{At: clock.Now()})
		return d.ResetAfter == 0
	})
	return s, nil
}
