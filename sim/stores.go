package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/lanekey"
	"github.com/admit-go/admit/internal/stores"
	"github.com/admit-go/admit/policy"
)

// The stores of a run. Each instance's engine keeps the rules of the
// local store in a memory of its own, as admit serve does; the rules of
// the policy's shared stores (redis, and the default store of
// envoyproxy/ratelimit's files) go to one sharedStore per name, which
// every instance's engine asks (in Traffic.Store "local", to a localShare
// of each instance instead).

// defaultStore is the store the rules naming none are kept in, as admit
// serve does with a Redis: envoyproxy/ratelimit's rules, and inline limits.
const defaultStore = "redis"

// sharedStore is a shared store simulated in memory: one set of
// limiters, built on the first Spec of each name and handed to every
// instance asking with it again, that fails while a Fault of its name is
// on. It is a policy.Backend.
type sharedStore struct {
	name   string
	clk    *clock
	faults [][2]int64 // [from, to) in nanoseconds
	rates  map[string]admit.KeyedLimiter
	slots  map[string]admit.Slots
}

func newSharedStore(name string, clk *clock, faults []Fault) *sharedStore {
	s := &sharedStore{name: name, clk: clk, rates: map[string]admit.KeyedLimiter{}, slots: map[string]admit.Slots{}}
	for _, f := range faults {
		if f.Store == "" || f.Store == name {
			s.faults = append(s.faults, [2]int64{int64(f.From), int64(f.To)})
		}
	}
	return s
}

// down reports whether the store is failing now.
func (s *sharedStore) down() bool {
	now := s.clk.at()
	for _, f := range s.faults {
		if now >= f[0] && now < f[1] {
			return true
		}
	}
	return false
}

// errDown is the error of a call to a store that is down.
func (s *sharedStore) errDown() error {
	return fmt.Errorf("sim: store %q does not answer (a fault of the traffic file): %w", s.name, errStoreDown)
}

var errStoreDown = errors.New("store down")

// specKey tells the limiters of a store apart: by kind, name, and what
// they enforce.
func specKey(kind string, s policy.Spec) string {
	return fmt.Sprintf("%s\x00%s\x00%v\x00%+v\x00%v\x00%v\x00%v\x00%v", kind, s.Name, s.Algorithm, s.Limit, s.Period, s.Location, s.WeekStart, s.Share)
}

func (s *sharedStore) rate(kind string, sp policy.Spec, build func(policy.Spec) (admit.KeyedLimiter, error)) (admit.KeyedLimiter, error) {
	k := specKey(kind, sp)
	if l, ok := s.rates[k]; ok {
		return l, nil
	}
	l, err := build(sp)
	if err != nil {
		return nil, err
	}
	f := &faultyLimiter{lim: l, s: s}
	s.rates[k] = f
	return f, nil
}

func (s *sharedStore) Rate(sp policy.Spec) (admit.KeyedLimiter, error) {
	if sp.Share != nil {
		return s.rate("share", sp, newBudgetShares)
	}
	return s.rate("rate", sp, memory{}.Rate)
}

func (s *sharedStore) Quota(sp policy.Spec) (admit.KeyedLimiter, error) {
	return s.rate("quota", sp, memory{}.Quota)
}

func (s *sharedStore) Slots(sp policy.Spec) (admit.Slots, error) {
	k := specKey("slots", sp)
	if l, ok := s.slots[k]; ok {
		return l, nil
	}
	l, err := memory{}.Slots(sp)
	if err != nil {
		return nil, err
	}
	f := &faultySlots{slots: l, s: s}
	s.slots[k] = f
	return f, nil
}

func (s *sharedStore) Shared() bool { return true }

// faultyLimiter is a limiter of a sharedStore: its limiter, failing while
// the store is down.
type faultyLimiter struct {
	lim admit.KeyedLimiter
	s   *sharedStore
}

func (f *faultyLimiter) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if f.s.down() {
		return admit.Decision{}, f.s.errDown()
	}
	return f.lim.Allow(ctx, r)
}

func (f *faultyLimiter) Refund(ctx context.Context, r admit.Request) error {
	if f.s.down() {
		return f.s.errDown()
	}
	if rf, ok := f.lim.(admit.Refunder); ok {
		return rf.Refund(ctx, r)
	}
	return nil
}

func (f *faultyLimiter) Reset(ctx context.Context, key string) error {
	if rs, ok := f.lim.(admit.Resetter); ok {
		return rs.Reset(ctx, key)
	}
	return nil
}

func (f *faultyLimiter) Healthy() bool { return !f.s.down() }

// faultySlots are the slots of a sharedStore, failing while it is down.
type faultySlots struct {
	slots admit.Slots
	s     *sharedStore
}

func (f *faultySlots) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	if f.s.down() {
		return nil, admit.Decision{}, f.s.errDown()
	}
	return f.slots.TryAcquire(ctx, r)
}

func (f *faultySlots) Healthy() bool { return !f.s.down() }

// localShare keeps the rules of a shared store on each instance, in
// memory, with 1/n of each limit: a fleet without a shared store.
type localShare struct{ n int }

func (l localShare) share(sp policy.Spec) (policy.Spec, error) {
	lim, err := sp.Limit.Share(l.n)
	if err != nil {
		return sp, fmt.Errorf("sim: the share of %s among %d instances: %w", sp.Name, l.n, err)
	}
	sp.Limit = lim
	return sp, nil
}

func (l localShare) Rate(sp policy.Spec) (admit.KeyedLimiter, error) {
	sp, err := l.share(sp)
	if err != nil {
		return nil, err
	}
	return memory{}.Rate(sp)
}

// Quota and Slots share their counts, rounded up (Limit.Share would
// stretch a quota's period or a cap's burst).
func (l localShare) Quota(sp policy.Spec) (admit.KeyedLimiter, error) {
	sp.Limit.Rate = ceilDiv(sp.Limit.Rate, int64(l.n))
	return memory{}.Quota(sp)
}

func (l localShare) Slots(sp policy.Spec) (admit.Slots, error) {
	sp.Limit.Rate = ceilDiv(sp.Limit.Rate, int64(l.n))
	return memory{}.Slots(sp)
}

func (l localShare) Shared() bool { return false }

func ceilDiv(a, b int64) int64 {
	if a <= 0 || a == admit.Inf {
		return a
	}
	return (a-1)/b + 1
}

// storeNames returns the stores the policy's rules name, other than the
// local one, and the default store.
func storeNames(p *policy.Policy) []string {
	seen := map[string]bool{defaultStore: true}
	names := []string{defaultStore}
	add := func(s string) {
		if s != "" && s != policy.StoreLocal && s != "default" && !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
	}
	for _, d := range p.Domains {
		add(d.Override.Store)
		for _, r := range d.Rules {
			add(r.Store)
		}
	}
	return names
}

// memory keeps limiters in memory, as policy/backends.Memory does (which
// would bring Redis's client into this package).
type memory struct{}

func (memory) Rate(s policy.Spec) (admit.KeyedLimiter, error)  { return stores.Rate(stores.Spec(s)) }
func (memory) Quota(s policy.Spec) (admit.KeyedLimiter, error) { return stores.Quota(stores.Spec(s)) }
func (memory) Slots(s policy.Spec) (admit.Slots, error)        { return stores.Slots(stores.Spec(s)) }
func (memory) Shared() bool                                    { return false }

// budgetShares is a budget shared by weight (policy's share:) kept in the
// simulated store, as redisstore keeps one: one fair.Share per budget,
// the request's key naming the tenant and the budget (internal/lanekey).
type budgetShares struct {
	cfg    fair.ShareConfig
	shares map[string]*fair.Share
}

func newBudgetShares(sp policy.Spec) (admit.KeyedLimiter, error) {
	cfg := *sp.Share
	cfg.Options = admit.Options{Clock: sp.Clock, Name: sp.Name}
	if _, err := fair.NewShare(cfg); err != nil {
		return nil, err
	}
	return &budgetShares{cfg: cfg, shares: map[string]*fair.Share{}}, nil
}

// of returns the share of the budget r's key names, and r for its tenant.
func (b *budgetShares) of(r admit.Request) (*fair.Share, admit.Request) {
	tenant, budget := lanekey.Split(r.Key)
	sh := b.shares[budget]
	if sh == nil {
		sh, _ = fair.NewShare(b.cfg) // checked by newBudgetShares
		b.shares[budget] = sh
	}
	r.Key = tenant
	return sh, r
}

func (b *budgetShares) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	sh, r := b.of(r)
	return sh.Allow(ctx, r)
}

func (b *budgetShares) Refund(ctx context.Context, r admit.Request) error {
	sh, r := b.of(r)
	return sh.Refund(ctx, r)
}
