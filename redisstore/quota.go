package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/calendar"
	"github.com/admit-go/admit/internal/timeline"
	"github.com/admit-go/admit/quota"
	"github.com/redis/go-redis/v9"
)

//go:embed internal/lua/quota.lua
var quotaSource string

var quotaScript = redis.NewScript(quotaSource)

// quotaGrace is how long a Quota's count outlives its period in Redis: a
// key expires (PEXPIREAT) at its period's end plus quotaGrace, on Redis's
// clock, so that a check from a client whose instant is slightly behind
// (Request.At), or a Redis whose clock stepped back, still finds the count
// instead of a fresh one.
const quotaGrace = time.Minute

// Quota counts events per key per calendar period in Redis: at most N
// events for each key in each period (hour, day, week, month or year) of
// the calendar of a time zone, shared by every process using the same
// Redis and quota name. It is the Redis version of package quota's Quota,
// whose model, periods (quota.Period.Bounds, daylight-saving changes
// included) and decisions it follows: the whole N is available when a
// period starts, nothing comes back until the next one starts, a request
// of n events is admitted iff the events counted in the period plus n are
// at most N, and a denied request counts nothing.
//
// # Durability
//
// A key's count lives in Redis under a name that holds its period's start
// (see Keys), so it outlives the processes that count: a restarted
// service, or another instance, sees the count so far. The count expires
// (PEXPIREAT) a minute after its period ends, on Redis's clock (so that a
// client whose instant is slightly behind still finds it), and
// no later than Config.MinTTL from the last write.
//
// # Time
//
// The period must be known before the script runs, because it names the
// Redis key (and, in a cluster, a key must be named before the call). So
// Allow and Refund (of a Request without At) guess the period from the
// local clock, and
// the script checks the guess against Redis's clock (TIME): if they
// disagree, which happens only when the clocks differ across a period
// boundary, nothing is changed and the call is repeated in the period
// holding Redis's instant. So Redis's clock alone decides, as for every
// limiter of this package, and the clocks of the clients do not matter;
// RetryAfter and ResetAfter are measured from Redis's instant, to the
// microsecond.
//
// A Request with an explicit At is decided at the caller's instant, for
// exact tests and callers that keep their own time line, with package
// quota's rule for time going back: each Quota value remembers the latest
// period it decided an explicit instant in, and decides an earlier instant
// in that period, so a time line that steps back never finds a quota
// refilled. That memory is per Quota value (per process), and the calls on
// Redis's clock neither read nor move it. Keys written at explicit
// instants still expire on Redis's clock: set Config.MinTTL of the Store when
// the instants are not close to Redis's time (in tests).
//
// # Decisions
//
// Decisions are admit.Decisions of Kind admit.KindQuota, with Limit
// {Rate: N, Burst: N, Period: the length of the period decided in} (23 or
// 25 hours on the days the clocks change); Remaining, the events left in
// the period; RetryAfter, 0 when allowed, admit.InfDuration if n > N, else
// the time until the period ends; and ResetAfter, the time until the
// period ends if anything is counted in it, else 0. n = 0 is a peek. A
// denial is a Decision, not an error.
//
// # Keys
//
// The count of key K of a quota named Q in the period of kind P (hour,
// day, week, month, year) starting at S seconds since the Unix epoch is
// at
//
//	<prefix>{<tag>}:quota:<Q>:<P>@<S>:<K>
//
// with the hash tag of K, so one key's counts live in one slot. Quotas of
// one name and period kind share their counts: give different quotas
// different names.
//
// A Quota is safe for concurrent use: calls on one key admit exactly N
// events per period between them, from any number of processes. Each call
// is one round trip to Redis (two when the clocks disagree as above), not
// through the Store's pipelines, bounded by the Store's timeout
// (Config.Timeout) and ctx. Create it with Store.Quota.
type Quota struct {
	s         *Store
	limit     int64
	period    quota.Period
	loc       *time.Location
	weekStart time.Weekday
	name      string
	obs       admit.Observer
	head      string // ":quota:<name>:<period>@"

	// cur is the latest period an explicit instant was decided in; it
	// only moves forward.
	cur calendar.Latest

	// guess is the local clock, which guesses the period of Redis's
	// instant (a test sets it off).
	guess func() time.Time
}

// Quota returns a quota configured by cfg, whose counts live in the
// store's Redis. The error wraps admit.ErrInvalidConfig and names the
// field ("invalid period" for an invalid cfg.Period, "invalid quota size"
// if cfg.Limit is not in [1, 2^53]).
func (s *Store) Quota(cfg QuotaConfig) (*Quota, error) {
	if err := checkQuota(cfg.Limit); err != nil {
		return nil, invalid("Limit", "%w", err)
	}
	period := cfg.Period
	if period < quota.Hour || period > quota.Year {
		return nil, invalid("Period", "%v: invalid period: want Hour, Day, Week, Month or Year", period)
	}
	weekStart := time.Monday
	if cfg.WeekStart != nil {
		if weekStart = *cfg.WeekStart; weekStart < time.Sunday || weekStart > time.Saturday {
			return nil, invalid("WeekStart", "%d: want time.Sunday to time.Saturday", int(weekStart))
		}
	}
	if err := checkName(cfg.Name); err != nil {
		return nil, err
	}
	loc := cfg.Location
	if loc == nil {
		loc = time.UTC
	}
	return &Quota{
		s:         s,
		limit:     cfg.Limit,
		period:    period,
		loc:       loc,
		weekStart: weekStart,
		name:      cfg.Name,
		obs:       cfg.Observer,
		head:      ":quota:" + cfg.Name + ":" + period.String() + "@",
		guess:     time.Now,
	}, nil
}

func checkQuota(n int64) error {
	if n < 1 || n > maxExact {
		return fmt.Errorf("%w: redisstore: invalid quota size %d: want 1 to 2^53 events per period", admit.ErrInvalidLimit, n)
	}
	return nil
}

// Limit returns the quota's size: events per key per period.
func (q *Quota) Limit() int64 { return q.limit }

// Period returns the kind of period the quota counts over.
func (q *Quota) Period() quota.Period { return q.period }

// Location returns the time zone whose calendar the periods follow.
func (q *Quota) Location() *time.Location { return q.loc }

// PeriodAt returns the period holding instant t, in the quota's location:
// start <= t < end. It is q.Period().Bounds(t, location, week start).
func (q *Quota) PeriodAt(t time.Time) (start, end time.Time) {
	return q.period.Bounds(t, q.loc, q.weekStart)
}

// Allow decides whether r.N events may happen for r.Key at instant r.At,
// or now on Redis's clock when r.At is zero (see Quota on time), and if so
// counts them. r.Limit.Rate, unless r.Limit is zero, replaces the quota's
// own size for this call (its Period and Burst are ignored), so that one
// Quota serves every tier of a plan; a key's count carries over when its
// size changes within a period. The Decision is described on Quota; with
// an explicit r.At, RetryAfter and ResetAfter are measured from it, to the
// nanosecond. r.N = 0 is a peek: allowed, counting nothing, it reports
// Remaining and ResetAfter. r.N above the size is denied with RetryAfter
// admit.InfDuration (a denial, not an error, as in package quota).
//
// The error is non-nil when nothing was decided, and the request is then
// refused with RetryAfter admit.InfDuration: bad input (r.N < 0:
// admit.ErrInvalidCost; a size outside [1, 2^53]: admit.ErrInvalidLimit, a bad request;
// admit.ErrKeyTooLong), Redis failing (ErrStore), ctx ending (its error) or a
// closed Store (admit.ErrClosed).
func (q *Quota) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	_, d, err := q.decide(ctx, wallInstant(r.At), r.Key, q.size(r.Limit), r.N, false)
	return d, err
}

// AllowAtMost admits as many of r.N events as remain for r.Key in the
// period at r.At (now on Redis's clock when zero; see Quota on time), under
// the size r.Limit.Rate (the quota's own when r.Limit is zero), from 0 to
// r.N, counts them and returns how many (admit.PartialAllower), in one
// script call, atomically: it grants exactly as quota.Quota.AllowAtMost
// does. More than the size is never refused: at most what remains is
// granted. The Decision is the key's after the grant: Allowed when anything
// was granted (or r.N is 0, a peek), Remaining what still remains in the
// period, RetryAfter 0 when all r.N were granted and otherwise the time
// until the period ends (when one more event fits), and ResetAfter as for
// Allow. Errors are Allow's, and then nothing is granted (if ctx ends
// while the call is on its way, the events may still be counted).
func (q *Quota) AllowAtMost(ctx context.Context, r admit.Request) (int64, admit.Decision, error) {
	return q.decide(ctx, wallInstant(r.At), r.Key, q.size(r.Limit), r.N, true)
}

// size returns the size of a request: l.Rate, or the quota's own for the
// zero Limit.
func (q *Quota) size(l admit.Limit) int64 {
	if l != (admit.Limit{}) {
		return l.Rate
	}
	return q.limit
}

// wallInstant returns t as wall-clock nanoseconds since the Unix epoch, or
// -1 (Redis's clock) if t is zero.
func wallInstant(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return timeline.Wall(t)
}

// Refund gives back up to r.N events counted for r.Key in the current
// period, at instant r.At (Redis's clock when zero; the period is chosen
// as Allow chooses it), as if they had not been admitted: for a request
// that a later check refused after this quota admitted it. r.Limit is not
// needed. A refund never takes a count below zero, and events counted in
// a period that has ended are not given back. The error reports bad input
// (admit.ErrInvalidCost, admit.ErrKeyTooLong), Redis failing (ErrStore), ctx
// ending or a closed Store.
func (q *Quota) Refund(ctx context.Context, r admit.Request) error {
	return q.refund(ctx, wallInstant(r.At), r.Key, r.N)
}

// The contract of admit that a Quota meets.
var (
	_ admit.KeyedLimiter   = (*Quota)(nil)
	_ admit.Refunder       = (*Quota)(nil)
	_ admit.Resetter       = (*Quota)(nil)
	_ admit.PartialAllower = (*Quota)(nil)
)

// Reset forgets key's counts in the period holding the current time on the
// local clock and in the periods either side of it (so that a clock a
// little off does not matter), and in the latest period this Quota decided
// an explicit instant in: the whole quota is then available again. Counts
// of other periods written at explicit instants are left to expire.
func (q *Quota) Reset(ctx context.Context, key string) error {
	if err := q.checkInput(key, 0); err != nil {
		return err
	}
	if q.s.closed.Load() {
		return errClosed
	}
	w := q.bounds(timeline.Wall(q.guess()))
	keys := []string{
		q.redisKey(q.bounds(w.Start-1).Start, key),
		q.redisKey(w.Start, key),
		q.redisKey(w.End, key),
	}
	if p, ok := q.cur.Get(); ok {
		keys = append(keys, q.redisKey(p.Start, key))
	}
	return q.s.call(ctx, "quota", len(keys), func(ctx context.Context) error {
		return q.s.client.Del(ctx, keys...).Err()
	})
}

// decide is Allow under a size of limit at now (ns since the Unix epoch), or on Redis's
// clock if now < 0; or AllowAtMost if partial is set. It returns the
// events granted (0 for Allow).
func (q *Quota) decide(ctx context.Context, now int64, key string, limit, n int64, partial bool) (int64, admit.Decision, error) {
	err := checkQuota(limit)
	if err == nil {
		err = q.checkInput(key, n)
	}
	if err == nil && q.s.closed.Load() {
		err = errClosed
	}
	refusal := admit.Decision{
		Limit:      admit.Limit{Rate: limit, Burst: limit},
		RetryAfter: admit.InfDuration,
		Rule:       q.name,
		Kind:       admit.KindQuota,
	}
	if err != nil {
		if q.obs != nil {
			q.obs.Decided(admit.DecisionEvent{Limiter: q.name, Key: key, N: n, Decision: refusal})
		}
		return 0, refusal, err
	}
	op := "a"
	if partial {
		op = "p"
	}
	r, w, now, err := q.call(ctx, now, key, op, n, limit)
	if err != nil {
		return 0, refusal, err
	}
	used, allowed, short, granted := r[1], r[0] == 1, r[0] != 1, int64(0)
	if partial {
		if granted = r[0]; granted < 0 || granted > n {
			return 0, refusal, storeError(fmt.Errorf("a grant of %d events of %d", granted, n))
		}
		allowed, short = granted > 0 || n == 0, granted < n
	}
	d := admit.Decision{
		Allowed:   allowed,
		Limit:     admit.Limit{Rate: limit, Period: time.Duration(w.End - w.Start), Burst: limit},
		Remaining: max(limit-used, 0),
		Rule:      q.name,
		Kind:      admit.KindQuota,
	}
	switch {
	case !short: // all n admitted
	case n > limit && !partial:
		d.RetryAfter = admit.InfDuration
	default: // one more event fits when the period ends
		d.RetryAfter = time.Duration(w.End - now)
	}
	if used > 0 {
		d.ResetAfter = time.Duration(w.End - now)
	}
	if q.obs != nil {
		q.obs.Decided(admit.DecisionEvent{Limiter: q.name, Key: key, N: n, Decision: d})
	}
	return granted, d, nil
}

func (q *Quota) refund(ctx context.Context, now int64, key string, n int64) error {
	if err := q.checkInput(key, n); err != nil {
		return err
	}
	if q.s.closed.Load() {
		return errClosed
	}
	_, _, _, err := q.call(ctx, now, key, "r", n, 0)
	return err
}

// call runs the script for key at now (< 0: Redis's clock) and returns
// its reply, the period it was decided in and the instant it was decided
// at (ns).
func (q *Quota) call(ctx context.Context, now int64, key, op string, n, limit int64) ([]int64, calendar.Window, int64, error) {
	explicit := now >= 0
	var w calendar.Window
	if explicit {
		w = q.window(now)
	} else {
		w = q.bounds(timeline.Wall(q.guess()))
	}
	minTTL := strconv.FormatInt(int64((q.s.o.minTTL+time.Millisecond-1)/time.Millisecond), 10)
	for attempt := 0; ; attempt++ {
		at := ""
		if explicit {
			at = strconv.FormatInt(now/1000, 10)
		}
		expireAt := (w.End + int64(quotaGrace) + int64(time.Millisecond) - 1) / int64(time.Millisecond) // ms, rounded up
		r, err := q.s.evalInts(ctx, quotaScript, "quota", []string{q.redisKey(w.Start, key)}, 3,
			op, at, strconv.FormatInt(w.Start/1000, 10), strconv.FormatInt(w.End/1000, 10),
			strconv.FormatInt(n, 10), strconv.FormatInt(limit, 10),
			strconv.FormatInt(expireAt, 10), minTTL)
		if err != nil {
			return nil, w, 0, err
		}
		if explicit {
			return r, w, now, nil
		}
		redisNow := min(max(r[2], 0), algo.MaxTime/1000) * 1000
		if r[0] != -1 {
			return r, w, redisNow, nil
		}
		// The local clock guessed another period than Redis's clock
		// holds: name the key of Redis's period and call again.
		if attempt == 2 {
			return nil, w, 0, storeError(fmt.Errorf("the period of Redis's instant %v keeps changing", time.Unix(0, redisNow)))
		}
		w = q.bounds(redisNow)
	}
}

// redisKey is the key of key's count in the period starting at start (ns).
func (q *Quota) redisKey(start int64, key string) string {
	return q.s.prefix + "{" + tagOf(key) + "}" + q.head + strconv.FormatInt(start/1e9, 10) + ":" + key
}

// window returns the period to decide an explicit instant in: the latest
// one decided in if now is in it or earlier, else the period holding now,
// which becomes the latest.
func (q *Quota) window(now int64) calendar.Window { return q.cur.Window(now, q.bounds) }

// bounds returns the period holding now.
func (q *Quota) bounds(now int64) calendar.Window {
	start, end := q.period.Bounds(time.Unix(0, now), q.loc, q.weekStart)
	return calendar.Window{Start: start.UnixNano(), End: end.UnixNano()}
}

func (q *Quota) checkInput(key string, n int64) error { return q.s.checkInput(key, n) }
