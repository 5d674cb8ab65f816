package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/adaptive"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/lanekey"
)

// perKey holds one instance of an adaptive limiter (or of lanes) per key
// of a rule: one alone when every descriptor the rule matches has the
// same key, else a map, created on first use. At most max keys are held;
// a new key beyond it takes the place of an idle one (one whose
// forgetting loses no request in flight), found among a few dozen, and
// forgotten with what it had learnt: that key starts again from the
// initial limit. If none is idle, the request fails with errTooManyKeys.
// A perKey is safe for concurrent use.
type perKey[T any] struct {
	one   T
	multi bool
	newT  func() T
	idle  func(T) bool
	max   int
	mu    sync.RWMutex
	m     map[string]T
}

// evictScan is how many keys a full perKey looks at for an idle one.
const evictScan = 64

func newPerKey[T any](single bool, max int, newT func() T, idle func(T) bool) *perKey[T] {
	p := &perKey[T]{multi: !single, newT: newT, idle: idle, max: max}
	if single {
		p.one = newT()
	} else {
		p.m = map[string]T{}
	}
	return p
}

// get returns the instance of key, making it if there is none.
func (p *perKey[T]) get(key string) (T, error) {
	if !p.multi {
		return p.one, nil
	}
	p.mu.RLock()
	v, ok := p.m[key]
	p.mu.RUnlock()
	if ok {
		return v, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m[key]; ok {
		return v, nil
	}
	if len(p.m) >= p.max {
		victim, found := "", false
		n := 0
		for k, x := range p.m {
			if p.idle(x) {
				victim, found = k, true
				break
			}
			if n++; n == evictScan {
				break
			}
		}
		if !found {
			var zero T
			return zero, fmt.Errorf("%w: %d keys, none idle", errTooManyKeys, len(p.m))
		}
		delete(p.m, victim)
	}
	v = p.newT()
	p.m[strings.Clone(key)] = v
	return v, nil
}

// lookup returns the instance of key, if there is one.
func (p *perKey[T]) lookup(key string) (T, bool) {
	if !p.multi {
		return p.one, true
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.m[key]
	return v, ok
}

// boxes is a free list of boxes of type T, so that a grant allocates
// nothing once the list holds as many as are in flight (as internal/stores does for slots).
type boxes[T any] struct {
	mu   sync.Mutex
	free []*T
}

func (b *boxes[T]) get() *T {
	b.mu.Lock()
	if n := len(b.free); n > 0 {
		x := b.free[n-1]
		b.free[n-1] = nil
		b.free = b.free[:n-1]
		b.mu.Unlock()
		return x
	}
	b.mu.Unlock()
	return new(T)
}

// maxFree bounds the free list of a boxes.
const maxFree = 1024

func (b *boxes[T]) put(x *T) {
	b.mu.Lock()
	if len(b.free) < maxFree {
		b.free = append(b.free, x)
	}
	b.mu.Unlock()
}

// maxKeysOf returns the cap on the keys of a rule's adaptive limit.
func (e *Engine) maxKeysOf() int {
	if e.o.maxKeys > 0 {
		return e.o.maxKeys
	}
	return defaultMaxAdaptiveKeys
}

// gradientSlots is an adaptive_concurrency limit: an adaptive.Gradient per
// key, as an admit.Slots whose grants are Finishers.
type gradientSlots struct {
	keys  *perKey[*adaptive.Gradient]
	clock admit.Clock
	boxes boxes[tokenBox]
	floor float64 // the lowest limit, in slots (for admit serve's metrics)
}

func (e *Engine) buildGradient(c *clayer, a *AdaptiveConcurrency, single bool) error {
	cfg := a.config()
	cfg.Options = admit.Options{Clock: e.o.clock, Name: c.label}
	if _, err := adaptive.NewGradient(cfg); err != nil {
		return err
	}
	s := &gradientSlots{clock: e.o.clock, floor: float64(max(a.Min, 1))}
	s.keys = newPerKey(single, e.maxKeysOf(), func() *adaptive.Gradient {
		g, _ := adaptive.NewGradient(cfg) // checked above
		return g
	}, func(g *adaptive.Gradient) bool {
		st := g.Stats()
		return st.InFlight == 0 && st.Waiting == 0
	})
	c.slots, c.shortKey, c.class = s, true, classAdaptiveSlots
	c.limit = admit.Limit{Rate: a.initial(), Burst: a.initial()}
	return nil
}

func (s *gradientSlots) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	g, err := s.keys.get(r.Key)
	if err != nil {
		return nil, admit.Decision{RetryAfter: admit.InfDuration, Kind: admit.KindConcurrency}, err
	}
	tok, d, err := g.TryAcquireN(s.clock.Now(), r.N)
	if err != nil {
		if errors.Is(err, admit.ErrExceedsBurst) {
			// More slots than max: never admitted, a refusal.
			return nil, d, nil
		}
		return nil, d, err
	}
	if tok == (adaptive.Token{}) {
		return nil, d, nil
	}
	b := s.boxes.get()
	b.tok, b.s = tok, s
	return b, d, nil
}

// tokenBox holds a Gradient's Token for a compose.Held, which gives it
// back once and forgets it; the box then goes back to its free list.
type tokenBox struct {
	tok adaptive.Token
	s   *gradientSlots
}

// Release reports a success, with the latency measured by the engine's
// clock (as adaptive.Token.Release does).
func (b *tokenBox) Release() {
	tok := b.tok
	if tok == (adaptive.Token{}) {
		return
	}
	b.tok = adaptive.Token{}
	tok.Release()
	b.s.boxes.put(b)
}

// Finish reports the outcome: a drop if failed, else a success.
func (b *tokenBox) Finish(failed bool) {
	tok := b.tok
	if tok == (adaptive.Token{}) {
		return
	}
	b.tok = adaptive.Token{}
	tok.Finish(failed)
	b.s.boxes.put(b)
}

// aimdLimiter is an adaptive_rate limit: an adaptive.AIMD per key, as a
// admit.KeyedLimiter, admit.Refunder and compose.Learner.
type aimdLimiter struct {
	keys  *perKey[*adaptive.AIMD]
	clock admit.Clock
	boxes boxes[aimdBox]
	floor float64 // the lowest rate, in events per second (for admit serve's metrics)
}

func (e *Engine) buildAIMD(c *clayer, a *AdaptiveRate, single bool) error {
	cfg := a.config()
	cfg.Options = admit.Options{Clock: e.o.clock, Name: c.label}
	if _, err := adaptive.NewAIMD(cfg); err != nil {
		return err
	}
	period := a.Period
	if period <= 0 {
		period = time.Second
	}
	s := &aimdLimiter{clock: e.o.clock, floor: float64(max(a.Min, 1)) * float64(time.Second) / float64(period)}
	s.keys = newPerKey(single, e.maxKeysOf(), func() *adaptive.AIMD {
		x, _ := adaptive.NewAIMD(cfg) // checked above
		return x
	}, func(x *adaptive.AIMD) bool {
		// Full (nothing used): forgetting it loosens nothing but the rate
		// it learnt.
		return x.DecideN(s.clock.Now(), 0).ResetAfter == 0
	})
	c.lim, c.learn, c.shortKey = s, s, true
	c.limit = a.limit()
	return nil
}

func (s *aimdLimiter) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	a, err := s.keys.get(r.Key)
	if err != nil {
		return admit.Decision{RetryAfter: admit.InfDuration}, err
	}
	return a.Layer().Allow(ctx, r)
}

func (s *aimdLimiter) Refund(ctx context.Context, r admit.Request) error {
	a, ok := s.keys.lookup(r.Key)
	if !ok {
		return nil
	}
	// AIMD.Layer's limiter is an admit.Refunder (its doc comment says so,
	// and adaptive's TestLayerCapabilities holds it).
	return a.Layer().(admit.Refunder).Refund(ctx, r)
}

// Track returns a Finisher reporting the outcome of a request the AIMD of
// key admitted, with its latency from now.
func (s *aimdLimiter) Track(key string, n int64) compose.Finisher {
	a, ok := s.keys.lookup(key)
	if !ok {
		return nil
	}
	b := s.boxes.get()
	b.a, b.s, b.start = a, s, s.clock.Now()
	return b
}

// aimdBox is what an aimdLimiter Tracks of an admitted request, for a
// compose.Held.
type aimdBox struct {
	a     *adaptive.AIMD
	s     *aimdLimiter
	start time.Time
}

// Release reports nothing: the request was refused by a later layer, or
// its outcome is unknown.
func (b *aimdBox) Release() {
	if b.a == nil {
		return
	}
	b.a = nil
	b.s.boxes.put(b)
}

// Finish reports the outcome: Dropped if failed, else Succeeded, with the
// latency since Track.
func (b *aimdBox) Finish(failed bool) {
	a := b.a
	if a == nil {
		return
	}
	b.a = nil
	o := adaptive.Succeeded
	if failed {
		o = adaptive.Dropped
	}
	now := b.s.clock.Now()
	a.FeedbackAt(now, o, max(now.Sub(b.start), 0))
	b.s.boxes.put(b)
}

// The key of a lanes layer is the lane (the value of the lane_key entry),
// length-prefixed, then the key of the budget.

// splitLane splits the key of a lanes layer into the lane and the key of
// the budget.
func splitLane(key string) (lane, budget string) { return lanekey.Split(key) }

// perBudget is a limit of budgets shared by lanes or tenants (a
// fair.RateLanes or fair.Share per key of the budget), as an
// admit.KeyedLimiter and admit.Refunder whose keys are those of a lanes
// layer (see splitLane).
type perBudget[T interface {
	admit.KeyedLimiter
	admit.Refunder
}] struct {
	keys *perKey[T]
}

func (e *Engine) buildRateLanes(c *clayer, l *Lanes, single bool) error {
	cfg := l.rateConfig()
	cfg.Options = admit.Options{Clock: e.o.clock, Name: c.label}
	if _, err := fair.NewRateLanes(cfg); err != nil {
		return err
	}
	clock := e.o.clock
	s := &perBudget[*fair.RateLanes]{}
	s.keys = newPerKey(single, e.maxKeysOf(), func() *fair.RateLanes {
		r, _ := fair.NewRateLanes(cfg) // checked above
		return r
	}, func(r *fair.RateLanes) bool {
		// Every lane full: forgetting it changes no decision.
		now := clock.Now()
		for _, ln := range l.Lanes {
			if d, _ := r.Allow(context.Background(), admit.Request{Key: ln.Name, At: now}); d.ResetAfter != 0 {
				return false
			}
		}
		return true
	})
	c.lim, c.shortKey = s, true
	c.limit = *l.Budget
	if c.limit.Burst == 0 {
		c.limit.Burst = c.limit.Rate
	}
	return nil
}

func (s *perBudget[T]) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	lane, budget := splitLane(req.Key)
	r, err := s.keys.get(budget)
	if err != nil {
		return admit.Decision{RetryAfter: admit.InfDuration}, err
	}
	req.Key = lane
	return r.Allow(ctx, req)
}

func (s *perBudget[T]) Refund(ctx context.Context, req admit.Request) error {
	lane, budget := splitLane(req.Key)
	r, ok := s.keys.lookup(budget)
	if !ok {
		return nil
	}
	req.Key = lane
	return r.Refund(ctx, req)
}

// slotLanes is a lanes limit with concurrency: a fair.SlotLanes per key
// of the budget, as an admit.Slots.
type slotLanes struct {
	keys  *perKey[*fair.SlotLanes]
	boxes boxes[lanePermitBox]
}

func (e *Engine) buildSlotLanes(c *clayer, l *Lanes, single bool) error {
	cfg := l.slotConfig()
	cfg.Options = admit.Options{Name: c.label}
	if _, err := fair.NewSlotLanes(cfg); err != nil {
		return err
	}
	s := &slotLanes{}
	s.keys = newPerKey(single, e.maxKeysOf(), func() *fair.SlotLanes {
		x, _ := fair.NewSlotLanes(cfg) // checked above
		return x
	}, func(x *fair.SlotLanes) bool {
		for _, st := range x.Stats() {
			if st.Used != 0 || st.Lent != 0 {
				return false
			}
		}
		return true
	})
	c.slots, c.shortKey = s, true
	c.limit = admit.Limit{Rate: l.Concurrency, Burst: l.Concurrency}
	return nil
}

func (s *slotLanes) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	lane, budget := splitLane(r.Key)
	x, err := s.keys.get(budget)
	if err != nil {
		return nil, admit.Decision{RetryAfter: admit.InfDuration, Kind: admit.KindConcurrency}, err
	}
	p, d, err := x.TryAcquire(ctx, lane, r.N)
	if err != nil {
		if errors.Is(err, admit.ErrExceedsBurst) {
			return nil, d, nil // never admitted: a refusal
		}
		return nil, d, err
	}
	if p == (fair.Permit{}) {
		return nil, d, nil
	}
	b := s.boxes.get()
	b.p, b.s = p, s
	return b, d, nil
}

// lanePermitBox holds a fair.Permit for a compose.Held.
type lanePermitBox struct {
	p fair.Permit
	s *slotLanes
}

func (b *lanePermitBox) Release() {
	p := b.p
	if p == (fair.Permit{}) {
		return
	}
	b.p = fair.Permit{}
	p.Release()
	b.s.boxes.put(b)
}
