// Package stores builds the limiters of policy rules in memory (package
// keyed, quota and concurrency) and in Redis (package redisstore) from a
// Spec, behind the root's contract (admit.KeyedLimiter, admit.Slots). It
// is the body of policy/backends' Memory and Redis, kept apart from
// package policy so that policy's own tests can use it (policy/backends
// imports policy; this package does not).
package stores

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/calendar"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/quota"
)

// Spec is policy.Spec, field for field (policy converts one to the other).
type Spec struct {
	Name      string
	Algorithm admit.Algorithm
	Limit     admit.Limit
	Period    calendar.Period
	Location  *time.Location
	WeekStart time.Weekday
	Lease     time.Duration
	Clock     admit.Clock
	Observer  admit.Observer
	MaxKeys   int
	Share     *fair.ShareConfig
}

// options are the settings of s every store shares.
func options(s *Spec) admit.Options {
	return admit.Options{Clock: s.Clock, Name: s.Name, Observer: s.Observer}
}

// errNoShare refuses a Spec with a Share in memory: the engine keeps the
// shares of the rules kept in memory itself (with fair.Share).
var errNoShare = fmt.Errorf("%w: stores: a share kept in memory is the engine's", admit.ErrInvalidConfig)

// Rate returns a keyed.Limiter of s (and refuses a Share: see
// policy.Spec).
func Rate(s Spec) (admit.KeyedLimiter, error) {
	if s.Share != nil {
		return nil, errNoShare
	}
	lim, err := keyed.New(keyed.Config{
		Options:   options(&s),
		Algorithm: s.Algorithm,
		Limit:     s.Limit,
		MaxKeys:   max(s.MaxKeys, 0),
	})
	if err != nil {
		return nil, err
	}
	return lim, nil
}

// Quota returns a quota.Quota of s: s.Limit.Rate events per s.Period.
func Quota(s Spec) (admit.KeyedLimiter, error) {
	q, err := quota.New(quota.Config{
		Options:   options(&s),
		Limit:     s.Limit.Rate,
		Period:    s.Period,
		Location:  s.Location,
		WeekStart: &s.WeekStart,
		MaxKeys:   max(s.MaxKeys, 0),
	})
	if err != nil {
		return nil, err
	}
	return q, nil
}

// Slots returns a concurrency.Limiter of s (s.Limit.Rate slots) as
// admit.Slots (as concurrency.Limiter.Slots, but for its Releasers, which
// are recycled (a free list, not a sync.Pool,
// so that the count of allocations is deterministic), so a grant
// allocates nothing once the list holds as many as are in flight.
func Slots(s Spec) (admit.Slots, error) {
	lim, err := concurrency.New(concurrency.Config{
		Options: options(&s),
		Max:     s.Limit.Rate,
		Lease:   max(s.Lease, 0),
		MaxKeys: max(s.MaxKeys, 0),
	})
	if err != nil {
		return nil, err
	}
	return &localSlots{c: lim}, nil
}

// localSlots adapts a concurrency.Limiter to admit.Slots.
type localSlots struct {
	c    *concurrency.Limiter
	mu   sync.Mutex
	free []*permitBox
}

// maxFree bounds the free list of a localSlots.
const maxFree = 1024

func (s *localSlots) get() *permitBox {
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return b
	}
	s.mu.Unlock()
	return &permitBox{s: s}
}

func (s *localSlots) put(b *permitBox) {
	s.mu.Lock()
	if len(s.free) < maxFree {
		s.free = append(s.free, b)
	}
	s.mu.Unlock()
}

// TryAcquire holds r.N slots for r.Key if they are free (r.Limit.Rate, if
// not zero, is the cap). More slots than the cap is a refusal, not an
// error: they could never be granted.
func (s *localSlots) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	p, d, err := s.c.TryAcquire(ctx, r)
	if err != nil {
		if errors.Is(err, admit.ErrExceedsBurst) {
			return nil, d, nil
		}
		return nil, d, err
	}
	if p == (concurrency.Permit{}) {
		return nil, d, nil
	}
	b := s.get()
	b.p = p
	return b, d, nil
}

// permitBox holds a Permit for a compose.Held, which releases it once and
// forgets it; the box then goes back to its free list.
type permitBox struct {
	p concurrency.Permit
	s *localSlots
}

func (b *permitBox) Release() {
	p := b.p
	if p == (concurrency.Permit{}) {
		return
	}
	b.p = concurrency.Permit{}
	p.Release()
	b.s.put(b)
}

// SlotCounts returns the slots held and the callers waiting, over all
// keys (enginehook.SlotCounter, for admit serve's status page).
func (s *localSlots) SlotCounts() (inFlight, waiting int64) {
	st := s.c.Stats()
	return st.InFlight, int64(st.Waiting)
}
