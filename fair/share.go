package fair

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/defaults"
	"github.com/admit-go/admit/internal/limits"
	"github.com/admit-go/admit/internal/timeline"
)

// Share shares one rate limit, the budget, among tenants in proportion to
// their weights, and gives what an idle tenant leaves to the busy ones.
// Tenants are not declared: any key of a request is a tenant (a customer,
// an API key), with the weight ShareConfig.Weight gives it.
//
// # Model
//
// The budget is a GCRA limit of R events per period P with burst B (T =
// P/R). A tenant is active while it has asked for events (admitted or not)
// within the last window or the one before; windows last half of
// ShareConfig.Idle (a second by default) and are aligned on the epoch, so
// a tenant leaves the active set between Idle/2 and Idle after its last
// request. With W the sum of the weights of the active tenants, the share
// of a tenant of weight w is a GCRA limit of R×w/W events per P with
// burst B×w/W (so the shares of the active tenants add up to the budget).
// A request of n events is admitted:
//
//  1. within its share, if both the budget and the tenant's share admit
//     n; both are charged;
//  2. otherwise beyond the reserve, if the budget admits n and still holds
//     at least K = ⌈B/2⌉ events after them; only the budget is charged;
//  3. otherwise it is refused.
//
// Every event admitted is taken from the budget, so over any interval of
// length t all tenants together are admitted at most B + ⌊t/T⌋ events, as
// one GCRA limit of the budget would admit. And since requests beyond a
// share can never take the budget's last K events:
//
//   - Work-conserving: while the budget holds more than K events, anyone
//     may use them, whatever its share. A tenant that goes idle leaves its
//     share in the budget, where the busy tenants take it at once (beyond
//     the reserve), and within Idle it leaves W, which raises their
//     shares.
//   - Fair under contention: a tenant whose demand is at least its share
//     gets at least its share R×w/W: when every active tenant asks more
//     than its share, each gets its share, so the admitted rates are in
//     the proportions of the weights (1:2:3 for weights 1, 2 and 3).
//   - Events admitted beyond a share are not held against the tenant
//     later: its share is charged only for what it took within it.
//
// A budget whose burst is 1 keeps its only event (K = 1) and lends
// nothing: each tenant then gets its share only.
//
// Decisions are admit.Decisions of Kind admit.KindRate whose Limit is the
// budget: Remaining is what the tenant could take at once (what the budget
// and its share both hold, or the budget beyond the reserve, whichever is
// more), RetryAfter the time until the request would be admitted if
// nothing else happened (admit.InfDuration if it never can be: n beyond
// the budget's burst, or beyond both the tenant's share of the burst and
// the budget's burst less the reserve), ResetAfter the time until the
// budget and the tenant's share are both full. Rule is the Share's Name.
//
// The arithmetic is exact, in integers: redisstore's Share decides with
// the same step function (in Lua), so a Share kept in Redis decides every
// request exactly as this one would.
//
// A Share is safe for concurrent use: one mutex guards the budget and its
// tenants, and the decision of a tenant it holds does not allocate. It
// holds the tenants that are active or whose share is not full, at most
// ShareConfig.MaxTenants; it forgets the others (which changes no
// decision) as it goes, without a goroutine. The zero Share is not usable;
// create one with NewShare.
type Share struct {
	mu      sync.Mutex
	sp      algo.ShareParams
	st      algo.ShareBudget
	tenants map[string]*algo.ShareTenant // never assigned to again: see Allow
	sweepAt int                          // sweep the tenants when a new one comes at this many
	max     int
	weight  func(string) int64
	budget  *limits.Compiled
	name    string
	clock   admit.Clock
	sys     bool
}

var (
	_ admit.KeyedLimiter = (*Share)(nil)
	_ admit.Refunder     = (*Share)(nil)
)

// Defaults of ShareConfig's fields.
const (
	defaultMaxTenants = 100_000
	minSweep          = 64
)

// NewShare returns a Share of cfg.Budget among tenants weighted by
// cfg.Weight (see Share for the model), full, having seen no tenant. It
// fails with an error wrapping admit.ErrInvalidLimit if the budget is
// invalid, unlimited or zero, and admit.ErrInvalidConfig for another field
// outside its domain.
func NewShare(cfg ShareConfig) (*Share, error) {
	c, sp, err := limits.Share(cfg.Budget, cfg.Idle)
	if err != nil {
		return nil, err
	}
	if cfg.MaxTenants < 0 {
		return nil, fmt.Errorf("%w: fair: MaxTenants %d: want 0 (%d) or more", admit.ErrInvalidConfig, cfg.MaxTenants, defaultMaxTenants)
	}
	clock := defaults.Clock(cfg.Options)
	s := &Share{
		sp:      sp,
		tenants: make(map[string]*algo.ShareTenant),
		sweepAt: minSweep,
		max:     cfg.MaxTenants,
		weight:  cfg.Weight,
		budget:  c,
		name:    cfg.Name,
		clock:   clock,
		sys:     clock == admit.SystemClock,
	}
	if s.max == 0 {
		s.max = defaultMaxTenants
	}
	return s, nil
}

func (s *Share) now(t time.Time) int64 {
	switch {
	case !t.IsZero():
		return timeline.Nanos(t)
	case s.sys:
		return timeline.Now()
	}
	return timeline.Nanos(s.clock.Now())
}

// Allow decides whether req.N events of the tenant req.Key may happen at
// req.At (the clock's now when zero), and if so takes them from the budget
// (and from the tenant's share when they fit in it; see Share). It never
// waits. req.Limit is not used. N = 0 is a peek: always admitted, it takes
// nothing and does not make the tenant active. The error is non-nil only
// for bad input, with a Decision that denies with RetryAfter
// admit.InfDuration: N < 0 (admit.ErrInvalidCost), a weight outside [1,
// 2^20] (admit.ErrInvalidConfig), or a new tenant when MaxTenants are
// held and none can be forgotten (admit.ErrTooManyKeys). Allow makes Share
// an admit.KeyedLimiter.
func (s *Share) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	refusal := s.budget.Refusal(s.name)
	now, w, err := s.input(req)
	if err != nil {
		return refusal, err
	}
	s.mu.Lock()
	p, t := s.tenant(req.Key)
	if p == nil && req.N > 0 && len(s.tenants) >= s.sweepAt && !s.sweep(now) {
		s.mu.Unlock()
		return refusal, fmt.Errorf("%w: fair: %d tenants of a share, none idle", admit.ErrTooManyKeys, len(s.tenants))
	}
	b, t2, r := algo.ShareStep(s.st, t, &s.sp, now, req.N, w)
	s.st = b
	switch {
	case p != nil:
		// Through the pointer: assigning to the map again would make it
		// keep the caller's string as the key (Go updates string keys),
		// which may be a buffer the caller reuses.
		*p = t2
	case t2 != t:
		held := new(algo.ShareTenant) // (not &t2, which would put every t2 on the heap)
		*held = t2
		s.tenants[strings.Clone(req.Key)] = held
	}
	s.mu.Unlock()
	return s.budget.Decision(r, s.name), nil
}

// input checks req and returns its instant and the weight of its tenant.
func (s *Share) input(req admit.Request) (now, w int64, err error) {
	if req.N < 0 {
		return 0, 0, fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, req.N)
	}
	if w, err = limits.Weight(s.weight, req.Key); err != nil {
		return 0, 0, err
	}
	return algo.Clamp(s.now(req.At)), w, nil
}

// tenant returns where the state of tenant is held (nil if it is not) and
// the state. It requires s.mu.
func (s *Share) tenant(key string) (*algo.ShareTenant, algo.ShareTenant) {
	p := s.tenants[key]
	if p == nil {
		return nil, algo.ShareTenant{}
	}
	return p, *p
}

// sweep forgets the tenants whose state decides as a new tenant's would
// (not active, share full at now), and reports whether there is room for
// one more. It requires s.mu.
func (s *Share) sweep(now int64) bool {
	for k, t := range s.tenants {
		if t.Seen < s.st.Win-1 && (t.At < now || (t.At == now && t.Frac == 0)) {
			delete(s.tenants, k)
		}
	}
	s.sweepAt = max(2*len(s.tenants), minSweep)
	return len(s.tenants) < s.max
}

// Refund gives back req.N events admitted earlier to the tenant req.Key at
// req.At (the clock's now when zero): to the budget, and to the tenant's
// share at what they cost it now, as far as each allows (never beyond
// full). The error is that of Allow for bad input. Refund makes Share an
// admit.Refunder.
func (s *Share) Refund(ctx context.Context, req admit.Request) error {
	now, w, err := s.input(req)
	if err != nil {
		return err
	}
	s.mu.Lock()
	p, t := s.tenant(req.Key)
	b, t2 := algo.ShareUndo(s.st, t, &s.sp, now, req.N, w)
	s.st = b
	if p != nil {
		*p = t2
	}
	s.mu.Unlock()
	return nil
}
