package quota

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/calendar"
	"github.com/admit-go/admit/internal/defaults"
	"github.com/admit-go/admit/internal/timeline"
)

// Quota counts events per key per calendar period: at most N events for
// each key in each period (hour, day, week, month or year) of the calendar
// of a time zone. The whole N is available when a period starts, and
// nothing comes back until the next period starts; then the count starts
// over from zero. A request of n events for a key is admitted iff the
// events already admitted for the key in the current period, plus n, are
// at most N; admitted, they are counted. A denied request counts nothing.
// Allow never admits part of a request; AllowAtMost admits what remains of
// the period, up to n.
//
// Allow(ctx, admit.Request{Key: key, N: n}) decides on the Quota's Clock;
// the request's At gives an explicit instant instead, and its Limit.Rate a
// size per call (so one Quota serves every tier of a plan). Refund gives
// back events that a later check refused, and Reset forgets a key. A Quota
// is an admit.KeyedLimiter, admit.Refunder, admit.Resetter and
// admit.PartialAllower.
//
// # Time
//
// A quota follows the wall clock: periods are calendar periods (see
// Period.Bounds for how they are computed, daylight-saving changes
// included), and instants are read as their wall-clock time, not their
// monotonic reading. Instants before 1970 count as 1970 and after 2116 as
// 2116, as in package admit.
//
// The current period of a Quota is the latest period holding an instant
// any call (Allow or Refund) was made at; it never
// moves back. An instant earlier than its start (the wall clock stepped
// back, or a Request's At was an older instant) is decided in the current
// period, against the key's count there, whatever the key: going back in
// time never resets or refills a quota. RetryAfter and ResetAfter are
// still measured from the instant given (so they exceed the period's
// length then). A step of the wall clock forward across the end of a
// period starts the next period. Tests that replay instants should use a
// Quota per timeline.
//
// # Memory
//
// A Quota holds a key (its period and its count, with the key: about 100
// bytes plus the key's length) from its first admitted event. Once the
// key's period has ended the key is the same as a new one, and it is
// forgotten lazily, without a goroutine (two keys are looked at on each
// insertion of a key, and all of them when the cap is reached), which
// changes no decision, even when time goes back (because of the rule
// above). Peeks and denials of a key not held store nothing.
//
// The number of keys held is capped (Config.MaxKeys). At the cap, a new key
// is refused with an error wrapping admit.ErrTooManyKeys unless a key of an
// ended period can be forgotten; the Observer sees the refusal (Decided)
// and the number of keys (Tracked). A Quota never forgets a key whose
// period is still running: that would give the key its whole quota again,
// silently. Size the cap for the keys active in one period.
//
// Keys are arbitrary byte strings up to a maximum length
// (Config.MaxKeyLength). They are spread over shards by a seeded hash, so
// goroutines deciding on different keys rarely share a lock.
//
// The zero Quota is not usable; create one with New. A Quota is safe for
// concurrent use: goroutines deciding on one key at one instant admit
// exactly N events between them.
type Quota struct {
	limit     int64
	period    Period
	loc       *time.Location
	weekStart time.Weekday
	clock     admit.Clock
	name      string
	obs       admit.Observer
	maxKeyLen int
	errFull   error

	// cur is the current period: the latest any decision was made in. It
	// only moves forward.
	cur calendar.Latest
	t   *table
	// trackAt is the number of keys from which an insertion reports them
	// to the Observer again (see observe).
	trackAt atomic.Int64
}

// New returns a Quota configured by cfg, with no key held yet. The error
// wraps admit.ErrInvalidConfig and names the field.
func New(cfg Config) (*Quota, error) {
	o, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	q := &Quota{
		limit:     cfg.Limit,
		period:    cfg.Period,
		loc:       o.loc,
		weekStart: o.weekStart,
		clock:     defaults.Clock(cfg.Options),
		name:      cfg.Name,
		obs:       cfg.Observer,
		maxKeyLen: o.maxKeyLen,
		errFull:   fmt.Errorf("%w: quota: %d keys are held, none of them from an ended period", admit.ErrTooManyKeys, o.maxKeys),
		t:         newTable(o.maxKeys),
	}
	if q.obs != nil {
		q.obs.Tracked(q.name, 0)
	}
	return q, nil
}

// Limit returns the quota's size: events per key per period.
func (q *Quota) Limit() int64 { return q.limit }

// Period returns the kind of period the quota counts over.
func (q *Quota) Period() Period { return q.period }

// Location returns the time zone whose calendar the periods follow.
func (q *Quota) Location() *time.Location { return q.loc }

// PeriodAt returns the period holding instant t, in the quota's location:
// start <= t < end. It is q.Period().Bounds(t, location, week start), and
// does not depend on the instants decided so far.
func (q *Quota) PeriodAt(t time.Time) (start, end time.Time) {
	return q.period.Bounds(t, q.loc, q.weekStart)
}

// Len returns the number of keys the quota holds state for.
func (q *Quota) Len() int { return int(q.t.count.Load()) }

// Allow decides whether r.N events may happen for r.Key at instant r.At
// (the quota's clock when r.At is zero), and if so counts them in the
// current period. r.Limit.Rate, unless r.Limit is zero, replaces the
// quota's own size N for this call (its Period and Burst are ignored): one
// Quota then serves the keys of every tier, each call giving the size of
// its key's tier. A key's count carries over when its size changes within
// a period: a key that used 500 events and is then checked against a
// limit of 100 has Remaining 0.
//
// The Decision's Kind is admit.KindQuota; its Limit is {Rate: N, Burst: N,
// Period: the length of the period decided in} (a day can last 23 or 25
// hours, a month 28 to 31 days); Remaining is N minus the events counted
// in the period (0 if that is negative, after a smaller per-call size);
// ResetAfter is the time until the period ends if anything is counted in
// it, else 0; and RetryAfter is 0 when allowed, else the time until the
// period ends, when the count starts over. All are exact to the
// nanosecond. A denial is a Decision with Allowed false, not an error.
//
// r.N = 0 is a peek: allowed, counting nothing (nor storing the key), it
// reports Remaining and ResetAfter. r.N > N is denied with RetryAfter
// admit.InfDuration: it can never be admitted (as package admit decides
// n > burst; it is a denial, not an error).
//
// The error is non-nil only when the request could not be decided; it is
// then refused (Allowed false) and nothing is counted: r.N < 0 (an error
// wrapping admit.ErrInvalidCost, RetryAfter InfDuration), a per-call size
// below 1 (admit.ErrInvalidLimit), a key longer than the maximum
// (admit.ErrKeyTooLong, RetryAfter InfDuration), or a new key beyond the cap (admit.ErrTooManyKeys,
// RetryAfter until the period ends, when keys are freed). ctx is not used
// by the in-memory Quota (deciding never waits); it is there so that
// every backend has the signature of admit.KeyedLimiter.
func (q *Quota) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	_, d, err := q.decide(q.at(r.At), r.Key, q.size(r.Limit), r.N, false)
	return d, err
}

// AllowAtMost admits as many of r.N events as remain for r.Key in the
// period at r.At (the quota's clock when zero), under the size r.Limit.Rate
// (the quota's own when r.Limit is zero), from 0 to r.N, counts them and
// returns how many (admit.PartialAllower). More than the size is never
// refused: at most what remains is granted. The Decision is the key's after
// the grant: Allowed when anything was granted (or r.N is 0, a peek),
// Remaining what still remains in the period, RetryAfter 0 when all r.N
// were granted and otherwise the time until the period ends (when one
// more event fits), and ResetAfter as for Allow. Errors are Allow's, and
// then nothing is granted. ctx is not used.
func (q *Quota) AllowAtMost(ctx context.Context, r admit.Request) (int64, admit.Decision, error) {
	return q.decide(q.at(r.At), r.Key, q.size(r.Limit), r.N, true)
}

// size returns the size of a request: l.Rate, or the quota's own for the
// zero Limit.
func (q *Quota) size(l admit.Limit) int64 {
	if l != (admit.Limit{}) {
		return l.Rate
	}
	return q.limit
}

// at returns instant t on the wall-clock time line, or the clock's now if
// t is zero.
func (q *Quota) at(t time.Time) int64 {
	if t.IsZero() {
		t = q.clock.Now()
	}
	return timeline.Wall(t)
}

// Refund gives back up to r.N events counted for r.Key in the current
// period at instant r.At (the quota's clock when zero), as if they had not
// been admitted: for a request that a later check refused after this quota
// admitted it. r.Limit is not needed (a count is given back whatever the
// size). Events counted in a period that has ended are not given back (the
// count started over anyway), and a refund never takes a count below zero.
// The error is non-nil only for bad input: r.N < 0 (admit.ErrInvalidCost)
// or a key longer than the maximum (admit.ErrKeyTooLong). ctx is not used.
func (q *Quota) Refund(ctx context.Context, r admit.Request) error {
	key, n := r.Key, r.N
	if err := q.checkInput(key, n); err != nil {
		return err
	}
	w := q.window(q.at(r.At))
	sh := q.t.shard(key)
	sh.mu.Lock()
	w = q.latest(w)
	if i := sh.find(key); i >= 0 {
		if s := refund(sh.slots[i].st, w, n); expired(s, w) {
			q.t.remove(sh, i)
		} else {
			sh.slots[i].st = s
		}
	}
	sh.mu.Unlock()
	return nil
}

// Reset forgets key, whose whole quota is then available again. Forgetting
// a key the quota does not hold does nothing. The error is always nil (ctx
// is not used): Reset has the signature of admit.Resetter.
func (q *Quota) Reset(ctx context.Context, key string) error {
	sh := q.t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if i := sh.find(key); i >= 0 {
		q.t.remove(sh, i)
	}
	return nil
}

// The contract of admit that a Quota meets.
var (
	_ admit.KeyedLimiter   = (*Quota)(nil)
	_ admit.Refunder       = (*Quota)(nil)
	_ admit.Resetter       = (*Quota)(nil)
	_ admit.PartialAllower = (*Quota)(nil)
)

// decide is Allow on the time line, under a size of limit, or AllowAtMost
// if partial is set; it returns the events granted (0 for Allow).
func (q *Quota) decide(now int64, key string, limit, n int64, partial bool) (int64, admit.Decision, error) {
	if n < 0 || limit < 1 || len(key) > q.maxKeyLen {
		d, err := q.refuse(now, key, limit, n)
		return 0, d, err
	}
	w := q.window(now)
	t := q.t
	sh := t.shard(key)
	evicted := 0
	for attempt := 0; ; attempt++ {
		sh.mu.Lock()
		w = q.latest(w)
		if i := sh.find(key); i >= 0 {
			st := &sh.slots[i].st
			next, r, g := advance(*st, w, now, n, limit, partial)
			if next.Used == 0 {
				t.remove(sh, i) // an ended period's count, not renewed
			} else {
				*st = next
			}
			sh.mu.Unlock()
			return g, q.decision(key, n, limit, r, evicted, false), nil
		}
		next, r, g := advance(state{}, w, now, n, limit, partial)
		if next.Used == 0 { // a peek or a denial: nothing to store
			sh.mu.Unlock()
			return g, q.decision(key, n, limit, r, evicted, false), nil
		}
		if t.add(sh, key, next) {
			evicted += t.sweepSome(sh, w, 2)
			sh.mu.Unlock()
			return g, q.decision(key, n, limit, r, evicted, true), nil
		}
		sh.mu.Unlock()
		if attempt > 0 {
			d, err := q.full(now, key, limit, n, w, evicted)
			return 0, d, err
		}
		// At the cap: forget the keys of ended periods, then try again.
		w = q.latest(w)
		evicted += t.reclaim(w)
	}
}

// advance is step, or grant if partial is set (step grants nothing).
func advance(s state, w window, now, n, limit int64, partial bool) (state, result, int64) {
	if partial {
		return grant(s, w, now, n, limit)
	}
	s, r := step(s, w, now, n, limit)
	return s, r, 0
}

// window returns the period to decide an instant in: the current period
// if now is in it or earlier, else the period holding now, which becomes
// the current period.
func (q *Quota) window(now int64) window { return q.cur.Window(now, q.bounds) }

// bounds returns the period holding now.
func (q *Quota) bounds(now int64) window {
	start, end := q.period.Bounds(time.Unix(0, now), q.loc, q.weekStart)
	return window{Start: start.UnixNano(), End: end.UnixNano()}
}

// latest returns w, or the current period if another call has moved on
// past w since w was read. Called under the key's shard lock, it makes
// sure a key forgotten for having ended (by a call that held the lock
// before) is never decided in its ended period.
func (q *Quota) latest(w window) window { return q.cur.Newer(w) }

// decision builds the Decision of a step's result and reports it; added
// says that it stored a new key.
func (q *Quota) decision(key string, n, limit int64, r result, evicted int, added bool) admit.Decision {
	d := admit.Decision{
		Allowed:    r.Allowed,
		Limit:      admit.Limit{Rate: limit, Period: time.Duration(r.End - r.Start), Burst: limit},
		Remaining:  r.Remaining,
		RetryAfter: time.Duration(r.RetryAfter),
		ResetAfter: time.Duration(r.ResetAfter),
		Rule:       q.name,
		Kind:       admit.KindQuota,
	}
	q.observe(key, n, d, evicted, added, false)
	return d
}

// observe reports a decision, and the keys evicted to make it, to the
// observer; the number of keys held goes with evictions, always if force
// is set, and after an insertion (added) once it has grown by an eighth
// (and by one at least) since the last report, so that the count
// reported lags by an eighth at most, in O(log n) reports.
func (q *Quota) observe(key string, n int64, d admit.Decision, evicted int, added, force bool) {
	if q.obs == nil {
		return
	}
	q.obs.Decided(admit.DecisionEvent{Limiter: q.name, Key: key, N: n, Decision: d})
	if evicted > 0 {
		q.obs.Evicted(admit.EvictionEvent{Limiter: q.name, Reason: admit.EvictIdle, Keys: evicted})
	}
	if evicted > 0 || force || added && int64(q.Len()) >= q.trackAt.Load() {
		k := q.Len()
		q.trackAt.Store(int64(k + max(k/8, 1)))
		q.obs.Tracked(q.name, k)
	}
}

// full refuses a new key at the cap.
func (q *Quota) full(now int64, key string, limit, n int64, w window, evicted int) (admit.Decision, error) {
	d := admit.Decision{
		Limit:      admit.Limit{Rate: limit, Period: time.Duration(w.End - w.Start), Burst: limit},
		RetryAfter: time.Duration(w.End - now),
		Rule:       q.name,
		Kind:       admit.KindQuota,
	}
	q.observe(key, n, d, evicted, false, true)
	return d, q.errFull
}

// refuse answers a request with bad input.
func (q *Quota) refuse(now int64, key string, limit, n int64) (admit.Decision, error) {
	err := q.checkInput(key, n)
	if err == nil {
		err = fmt.Errorf("%w: quota: invalid quota size %d: a quota admits at least 1 event per period", admit.ErrInvalidLimit, limit)
	}
	// Report the period without making it the current one.
	var w window
	if p, ok := q.cur.Get(); ok && now < p.End {
		w = p
	} else {
		w = q.bounds(now)
	}
	d := admit.Decision{
		Limit:      admit.Limit{Rate: limit, Period: time.Duration(w.End - w.Start), Burst: limit},
		RetryAfter: admit.InfDuration,
		Rule:       q.name,
		Kind:       admit.KindQuota,
	}
	if q.obs != nil {
		q.obs.Decided(admit.DecisionEvent{Limiter: q.name, Key: key, N: n, Decision: d})
	}
	return d, err
}

func (q *Quota) checkInput(key string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, n)
	}
	if len(key) > q.maxKeyLen {
		return fmt.Errorf("%w: quota: %d bytes, the maximum is %d", admit.ErrKeyTooLong, len(key), q.maxKeyLen)
	}
	return nil
}
