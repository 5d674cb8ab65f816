package admit

import (
	"sync"
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// meter is the locked wrapper shared by the limiters that only decide
// (no reservations): a mutex around a step function's state.
type meter[S any] struct {
	mu     sync.Mutex
	p      algo.Params
	limit  Limit
	st     S
	clock  Clock
	name   string
	step   func(s *S, p *algo.Params, now, n int64) algo.Result
	rebase func(s *S, old, new *algo.Params, now int64)
}

func (m *meter[S]) init(fn string, l Limit, window bool, opts []Options) error {
	p, err := l.compile()
	if err != nil {
		return err
	}
	if window {
		if err := p.CheckWindow(); err != nil {
			return wrapLimit(l, err)
		}
	}
	s, err := buildOptions(fn, opts)
	if err != nil {
		return err
	}
	m.p, m.limit, m.clock, m.name = p, l.normal(), s.clock, s.name
	return nil
}

func (m *meter[S]) allowN(now time.Time, n int) bool { return m.allowAt(nanos(now), n) }

func (m *meter[S]) allowAt(t int64, n int) bool {
	if n < 0 {
		return false
	}
	m.mu.Lock()
	ok := m.step(&m.st, &m.p, t, int64(n)).Allowed
	m.mu.Unlock()
	return ok
}

func (m *meter[S]) decideN(now time.Time, n int) Decision { return m.decideAt(nanos(now), n) }

func (m *meter[S]) decideAt(t int64, n int) Decision {
	if n < 0 {
		return invalidCost(m.getLimit(), m.name)
	}
	m.mu.Lock()
	r := m.step(&m.st, &m.p, t, int64(n))
	l := m.limit
	m.mu.Unlock()
	return decision(r, l, m.name)
}

func (m *meter[S]) getLimit() Limit {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.limit
}

func (m *meter[S]) setLimitAt(now time.Time, l Limit, window bool) error {
	p, err := l.compile()
	if err != nil {
		return err
	}
	if window {
		if err := p.CheckWindow(); err != nil {
			return wrapLimit(l, err)
		}
	}
	t := nanos(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rebase(&m.st, &m.p, &p, t)
	m.p, m.limit = p, l.normal()
	return nil
}

// The step functions of the value-state algorithms, in the pointer form
// meter calls.

func bucketStep(s *algo.Bucket, p *algo.Params, now, n int64) (r algo.Result) {
	*s, r = algo.BucketStep(*s, p, now, n)
	return r
}

func fixedWindowStep(s *algo.FixedWindow, p *algo.Params, now, n int64) (r algo.Result) {
	*s, r = algo.FixedWindowStep(*s, p, now, n)
	return r
}

func slidingWindowStep(s *algo.SlidingWindow, p *algo.Params, now, n int64) (r algo.Result) {
	*s, r = algo.SlidingWindowStep(*s, p, now, n)
	return r
}

func slidingWindowApproxStep(s *algo.SlidingWindow, p *algo.Params, now, n int64) (r algo.Result) {
	*s, r = algo.SlidingWindowApproxStep(*s, p, now, n)
	return r
}

func slidingLogStep(s *algo.SlidingLog, p *algo.Params, now, n int64) algo.Result {
	return s.SlidingLogStep(p, now, n)
}

func rebaseWith[S any](f func(S, *algo.Params, *algo.Params, int64) S) func(*S, *algo.Params, *algo.Params, int64) {
	return func(s *S, old, new *algo.Params, now int64) { *s = f(*s, old, new, now) }
}
