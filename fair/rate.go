package fair

import (
	"context"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/defaults"
	"github.com/admit-go/admit/internal/timeline"
)

// RateLanes shares one rate limit, the budget, among lanes of different
// priority, each with a reserved share, so that traffic of low priority
// can use what traffic of high priority leaves unused without ever taking
// the high priority's share from it.
//
// # Model
//
// A budget of R events per period P with burst B, and lanes with shares
// s_i (S their sum), is split into one GCRA limit per lane: lane i gets R
// × s_i/S events per P (exactly: the rates add up to R) and a burst B_i of
// ⌊B × s_i/S⌋, the events left by the rounding going one each to the first
// lanes (the bursts add up to B). Each lane keeps a reserve K_i =
// ⌈reserve × B_i⌉ of its burst (RateLanesConfig.Reserve, half by default).
//
// A request of n events in lane i is admitted:
//
//  1. by lane i's own limit, if it admits n: lane i may always use all of
//     its share;
//  2. otherwise by borrowing: by the first lane j that lane i may borrow
//     from (RateLanesConfig.Borrowing; the lowest priority asked first) that has n
//     events available beyond its reserve (available - n >= K_j) and is
//     not holding; n events are then taken from lane j's limit;
//  3. otherwise it is refused. If lane i's own limit could ever admit n,
//     lane i holds: it lends nothing until it admits a request again or
//     its limit is full (so a request larger than its reserve is not
//     starved by borrowers taking each event as it comes back).
//
// Every event admitted is taken from exactly one lane's limit, so over
// any interval of length t the lanes together admit at most B + R×t/P
// events, as one GCRA limit of the budget would. And since borrowers can
// take from a lane only what lies beyond its reserve, and nothing while it
// holds:
//
//   - Traffic arriving in a lane finds at once at least K_i events of its
//     own (fewer only if the lane itself used them), and then gets the
//     lane's full rate R × s_i/S, whatever the other lanes do, for as long
//     as its demand keeps up with that rate: such a lane never has more
//     than K_i events available, so nobody can borrow from it. So
//     high-priority traffic arriving during a flood of low-priority
//     traffic gets at least its share within one period (K_i plus a
//     period's worth of its rate).
//   - A lane's traffic never gets more than its own share plus what the
//     lanes it may borrow from leave unused (beyond their reserves).
//
// With BorrowUp (the default), a lane of low priority cannot borrow from
// a lane of higher priority at all; with BorrowAny it can, within the
// bounds above; with BorrowNone the lanes are independent limits.
//
// Decisions are admit.Decisions of Kind admit.KindRate: Limit is the
// lane's own share (rate and burst), Remaining what the lane could admit
// right now (its own events plus what it could borrow), RetryAfter the
// time until this request could be admitted, by the lane's own limit or a
// lender's, if nothing else happens meanwhile (admit.InfDuration if it
// never can be: n larger than the lane's burst and than what any lender
// could lend), ResetAfter the time until the lane's own limit is full.
// Rule is "lane", or "name/lane" (with a Name).
//
// A RateLanes is safe for concurrent use: one mutex guards the lanes, and
// a decision does not allocate. It starts no goroutine. The zero
// RateLanes is not usable; create one with NewRateLanes.
type RateLanes struct {
	mu     sync.Mutex
	lanes  []rateLane
	byName map[string]int
	def    int // -1: none
	borrow Borrowing
	clock  admit.Clock
	sys    bool
}

type rateLane struct {
	name    string
	rule    string
	limit   admit.Limit
	p       algo.Params // own limit
	lend    algo.Params // own limit less the reserve: what a lender checks
	canLend bool
	st      algo.GCRA
	hold    int64 // lends nothing before this instant
	lenders []int
	maxN    int64 // the largest request that can ever be admitted
}

var (
	_ admit.KeyedLimiter = (*RateLanes)(nil)
	_ admit.Refunder     = (*RateLanes)(nil)
)

// NewRateLanes returns cfg.Lanes sharing the rate limit cfg.Budget (see
// RateLanes for the model), full. It fails with an error wrapping
// admit.ErrInvalidLimit if the budget is invalid, unlimited or zero, or if
// a lane's share of it is outside the domain of admit.Limit; and
// admit.ErrInvalidConfig for lanes it cannot use (see Lane; the message
// says "fair: invalid lanes"), including a budget whose burst is too small
// to give each lane one event, and for another field outside its domain.
func NewRateLanes(cfg RateLanesConfig) (*RateLanes, error) {
	budget, lanes := cfg.Budget, cfg.Lanes
	if err := budget.Validate(); err != nil {
		return nil, err
	}
	if budget.Rate == admit.Inf || budget.Rate == 0 {
		return nil, fmt.Errorf("%w: budget %v: want a positive, limited rate", admit.ErrInvalidLimit, budget)
	}
	if budget.Burst == 0 {
		budget.Burst = budget.Rate
	}
	sum, byName, err := checkLanes(lanes)
	if err != nil {
		return nil, err
	}
	c, err := checkConfig(cfg.Options, cfg.Borrowing, cfg.Reserve, cfg.DefaultLane, byName)
	if err != nil {
		return nil, err
	}
	bursts, err := split(budget.Burst, lanes, sum, "burst")
	if err != nil {
		return nil, err
	}
	clock := defaults.Clock(cfg.Options)
	r := &RateLanes{
		lanes:  make([]rateLane, len(lanes)),
		byName: byName,
		def:    c.def,
		borrow: c.borrow,
		clock:  clock,
		sys:    clock == admit.SystemClock,
	}
	for i, l := range lanes {
		rate, period, ok := shareOf(budget.Rate, int64(budget.Period), l.Share, sum)
		lim := admit.Limit{Rate: rate, Period: time.Duration(period), Burst: bursts[i]}
		if !ok {
			return nil, fmt.Errorf("%w: lane %q: its share of %v cannot be represented", admit.ErrInvalidLimit, l.Name, budget)
		}
		if err := lim.Validate(); err != nil {
			return nil, fmt.Errorf("lane %q: %w", l.Name, err)
		}
		p, _ := algo.Compile(rate, period, bursts[i])
		ln := rateLane{name: l.Name, rule: rule(c.name, l.Name), limit: lim, p: p}
		if keep := reserveOf(bursts[i], c.reserve); keep < bursts[i] {
			ln.lend, _ = algo.Compile(rate, period, bursts[i]-keep)
			ln.canLend = true
		}
		r.lanes[i] = ln
	}
	for i := range r.lanes {
		l := &r.lanes[i]
		l.lenders = c.borrow.lenders(i, len(lanes))
		l.maxN = l.p.Burst
		for _, j := range l.lenders {
			if r.lanes[j].canLend {
				l.maxN = max(l.maxN, r.lanes[j].lend.Burst)
			}
		}
	}
	return r, nil
}

// shareOf returns the rate share/sum of rate per period, as a rate per a
// period: rate×share/g per period×sum/g, reduced. ok is false if either
// overflows.
func shareOf(rate, period, share, sum int64) (r, p int64, ok bool) {
	g := gcd(share, sum)
	share, sum = share/g, sum/g
	g = gcd(rate, sum)
	rate, sum = rate/g, sum/g
	hi, lo := bits.Mul64(uint64(rate), uint64(share))
	if hi != 0 || lo > 1<<63-1 {
		return 0, 0, false
	}
	phi, plo := bits.Mul64(uint64(period), uint64(sum))
	if phi != 0 || plo > 1<<63-1 {
		return 0, 0, false
	}
	return int64(lo), int64(plo), true
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// lane returns the index of the lane key selects.
func lane(byName map[string]int, def int, key string) (int, error) {
	if i, ok := byName[key]; ok {
		return i, nil
	}
	if def >= 0 {
		return def, nil
	}
	return -1, fmt.Errorf("%w: %q", ErrUnknownLane, truncate(key))
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func (r *RateLanes) now() int64 {
	if r.sys {
		return timeline.Now()
	}
	return timeline.Nanos(r.clock.Now())
}

// Allow decides whether req.N events of the lane named req.Key may
// happen at req.At (the clock's now when zero), and if so takes them from
// the lane's own limit or a lender's (see RateLanes). It never waits.
// req.Limit is not used: each lane has its own limit. N = 0 is always
// admitted and takes nothing. The error is non-nil only for bad input,
// with a Decision that denies with RetryAfter admit.InfDuration: a lane
// that does not exist (ErrUnknownLane, unless
// RateLanesConfig.DefaultLane) or N < 0 (admit.ErrInvalidCost). Allow
// makes RateLanes an admit.KeyedLimiter.
func (r *RateLanes) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	return r.allowKey(r.at(req.At), req.Key, req.N)
}

// at returns t on the time line, or the clock's now if t is zero.
func (r *RateLanes) at(t time.Time) int64 {
	if t.IsZero() {
		return r.now()
	}
	return timeline.Nanos(t)
}

func (r *RateLanes) allowKey(t int64, key string, n int64) (admit.Decision, error) {
	i, err := lane(r.byName, r.def, key)
	if err != nil {
		return admit.Decision{RetryAfter: admit.InfDuration}, err
	}
	l := &r.lanes[i]
	if n < 0 {
		return admit.Decision{Limit: l.limit, RetryAfter: admit.InfDuration, Rule: l.rule}, fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, n)
	}
	r.mu.Lock()
	d := r.decide(t, i, n)
	r.mu.Unlock()
	return d, nil
}

// decide decides a request of n >= 0 events of lane i at t. It requires
// r.mu.
func (r *RateLanes) decide(t int64, i int, n int64) admit.Decision {
	l := &r.lanes[i]
	next, own := algo.GCRAStep(l.st, &l.p, t, n)
	d := admit.Decision{Limit: l.limit, Rule: l.rule, ResetAfter: time.Duration(own.ResetAfter)}
	if own.Allowed {
		if n > 0 {
			l.st, l.hold = next, 0
		}
		d.Allowed = true
		d.Remaining = own.Remaining + r.lendable(t, i)
		return d
	}
	retry := own.RetryAfter
	for _, j := range l.lenders {
		m := &r.lanes[j]
		if !m.canLend {
			continue
		}
		mnext, lent := algo.GCRAStep(m.st, &m.lend, t, n)
		if t < m.hold {
			if lent.RetryAfter != algo.Never {
				retry = min(retry, max(lent.RetryAfter, m.hold-t))
			}
			continue
		}
		if lent.Allowed {
			m.st, l.hold = mnext, 0
			d.Allowed = true
			d.Remaining = own.Remaining + r.lendable(t, i)
			return d
		}
		retry = min(retry, lent.RetryAfter)
	}
	if n <= l.p.Burst {
		// Hold until the lane is full or admits again.
		l.hold = l.st.At
		if l.st.Frac > 0 {
			l.hold++
		}
	}
	d.Remaining = own.Remaining + r.lendable(t, i)
	d.RetryAfter = time.Duration(retry)
	return d
}

// lendable returns what lane i could borrow at t. It requires r.mu.
func (r *RateLanes) lendable(t int64, i int) int64 {
	var sum int64
	for _, j := range r.lanes[i].lenders {
		m := &r.lanes[j]
		if !m.canLend || t < m.hold {
			continue
		}
		sum += algo.GCRAReport(m.st, &m.lend, t).Remaining
	}
	return sum
}

// Refund gives back req.N events admitted earlier in the lane named
// req.Key at req.At (the clock's now when zero), to the lane's own limit,
// as far as it allows (never beyond full). Events the lane borrowed come
// back to it rather than to their lender; the budget is kept all the
// same. The error is that of Allow for bad input. Refund makes RateLanes
// an admit.Refunder.
func (r *RateLanes) Refund(ctx context.Context, req admit.Request) error {
	return r.refundAt(r.at(req.At), req.Key, req.N)
}

func (r *RateLanes) refundAt(t int64, key string, n int64) error {
	i, err := lane(r.byName, r.def, key)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, n)
	}
	if n == 0 {
		return nil
	}
	r.mu.Lock()
	l := &r.lanes[i]
	l.st = algo.GCRARefund(l.st, &l.p, t, l.st, n)
	r.mu.Unlock()
	return nil
}

// Limit returns the reserved share of the lane named lane: its own rate
// and burst, and whether it exists.
func (r *RateLanes) Limit(lane string) (admit.Limit, bool) {
	i, ok := r.byName[lane]
	if !ok {
		return admit.Limit{}, false
	}
	return r.lanes[i].limit, true
}
