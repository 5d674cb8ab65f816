package quota_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/quota"
)

func load(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("time.LoadLocation(%q): %v", name, err)
	}
	return loc
}

func newQuota(t testing.TB, cfg quota.Config) *quota.Quota {
	t.Helper()
	q, err := quota.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return q
}

// step is one call of a timeline: Allow of n for key at instant at (under
// Limit.Rate = limit when limit > 0) and the decision expected.
type step struct {
	at      time.Time
	key     string
	n       int64
	limit   int64 // 0: the quota's own
	allowed bool
	remain  int64
	retry   time.Duration
	reset   time.Duration
	period  time.Duration // Limit.Period
}

func run(t *testing.T, q *quota.Quota, steps []step) {
	t.Helper()
	for i, s := range steps {
		key := s.key
		if key == "" {
			key = "k"
		}
		var d admit.Decision
		var err error
		if s.limit > 0 {
			d, err = q.Allow(context.Background(), admit.Request{Key: key, N: s.n, Limit: admit.Limit{Rate: s.limit}, At: s.at})
		} else {
			d, err = q.Allow(context.Background(), admit.Request{Key: key, N: s.n, At: s.at})
		}
		if err != nil {
			t.Fatalf("step %d: AllowAt(%v, %q, %d): %v", i, s.at, key, s.n, err)
		}
		limit := s.limit
		if limit == 0 {
			limit = q.Limit()
		}
		want := admit.Decision{
			Allowed:    s.allowed,
			Limit:      admit.Limit{Rate: limit, Period: s.period, Burst: limit},
			Remaining:  s.remain,
			RetryAfter: s.retry,
			ResetAfter: s.reset,
			Kind:       admit.KindQuota,
		}
		if d != want {
			t.Errorf("step %d: AllowAt(%v, %q, %d)\n = %+v\nwant %+v", i, s.at.UTC(), key, s.n, d, want)
		}
	}
}

const (
	day  = 24 * time.Hour
	inf  = admit.InfDuration
	nano = time.Nanosecond
)

func TestDailyUTC(t *testing.T) {
	q := newQuota(t, quota.Config{Limit: 3, Period: quota.Day})
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	run(t, q, []step{
		{at: d0.Add(-nano), n: 3, allowed: true, remain: 0, reset: nano, period: day},
		{at: d0.Add(-nano), n: 1, remain: 0, retry: nano, reset: nano, period: day},
		{at: d0, n: 1, allowed: true, remain: 2, reset: day, period: day},
		{at: d0.Add(time.Hour), n: 2, allowed: true, remain: 0, reset: 23 * time.Hour, period: day},
		{at: d0.Add(time.Hour), n: 0, allowed: true, remain: 0, reset: 23 * time.Hour, period: day},
		{at: d0.Add(day - nano), n: 1, remain: 0, retry: nano, reset: nano, period: day},
		{at: d0.Add(day), n: 1, allowed: true, remain: 2, reset: day, period: day},
		// More than the quota: never, and it takes nothing.
		{at: d0.Add(day), n: 4, remain: 2, retry: inf, reset: day, period: day},
		// Another key is counted on its own.
		{at: d0.Add(day), key: "other", n: 3, allowed: true, remain: 0, reset: day, period: day},
	})
}

func TestDaylightSavingParis(t *testing.T) {
	paris := load(t, "Europe/Paris")
	q := newQuota(t, quota.Config{Limit: 2, Period: quota.Day, Location: paris})
	spring := time.Date(2025, 3, 30, 0, 0, 0, 0, paris)  // 23h: 2025-03-29T23:00Z
	autumn := time.Date(2025, 10, 26, 0, 0, 0, 0, paris) // 25h: 2025-10-25T22:00Z
	run(t, q, []step{
		{at: spring.Add(-nano), n: 2, allowed: true, remain: 0, reset: nano, period: day},
		{at: spring, n: 1, allowed: true, remain: 1, reset: 23 * time.Hour, period: 23 * time.Hour},
		// 01:59:59 CET, 1ns before the clocks jump to 03:00 CEST.
		{at: time.Date(2025, 3, 30, 0, 59, 59, 999999999, time.UTC), n: 1, allowed: true, remain: 0, reset: 21*time.Hour + nano, period: 23 * time.Hour},
		{at: time.Date(2025, 3, 30, 3, 0, 0, 0, paris), n: 1, remain: 0, retry: 21 * time.Hour, reset: 21 * time.Hour, period: 23 * time.Hour},
		{at: spring.Add(23*time.Hour - nano), n: 1, remain: 0, retry: nano, reset: nano, period: 23 * time.Hour},
		{at: spring.Add(23 * time.Hour), n: 1, allowed: true, remain: 1, reset: day, period: day},

		{at: autumn, n: 2, allowed: true, remain: 0, reset: 25 * time.Hour, period: 25 * time.Hour},
		// 02:30 CEST and 02:30 CET, an hour apart, are the same day.
		{at: time.Date(2025, 10, 26, 0, 30, 0, 0, time.UTC), n: 1, remain: 0, retry: 22*time.Hour + 30*time.Minute, reset: 22*time.Hour + 30*time.Minute, period: 25 * time.Hour},
		{at: time.Date(2025, 10, 26, 1, 30, 0, 0, time.UTC), n: 1, remain: 0, retry: 21*time.Hour + 30*time.Minute, reset: 21*time.Hour + 30*time.Minute, period: 25 * time.Hour},
		{at: autumn.Add(25*time.Hour - nano), n: 1, remain: 0, retry: nano, reset: nano, period: 25 * time.Hour},
		{at: autumn.Add(25 * time.Hour), n: 1, allowed: true, remain: 1, reset: day, period: day},
	})
	if s, e := q.PeriodAt(spring); !s.Equal(spring) || e.Sub(s) != 23*time.Hour || s.Location() != paris {
		t.Errorf("PeriodAt(%v) = [%v, %v)", spring, s, e)
	}
}

func TestDaylightSavingNewYork(t *testing.T) {
	ny := load(t, "America/New_York")
	spring := time.Date(2025, 3, 9, 0, 0, 0, 0, ny)
	autumn := time.Date(2025, 11, 2, 0, 0, 0, 0, ny)
	q := newQuota(t, quota.Config{Limit: 1, Period: quota.Day, Location: ny})
	run(t, q, []step{
		{at: spring.Add(12 * time.Hour), n: 1, allowed: true, remain: 0, reset: 11 * time.Hour, period: 23 * time.Hour},
		{at: spring.Add(23*time.Hour - nano), n: 1, remain: 0, retry: nano, reset: nano, period: 23 * time.Hour},
		{at: autumn.Add(nano), n: 1, allowed: true, remain: 0, reset: 25*time.Hour - nano, period: 25 * time.Hour},
		{at: autumn.Add(25*time.Hour - nano), n: 1, remain: 0, retry: nano, reset: nano, period: 25 * time.Hour},
		{at: autumn.Add(25 * time.Hour), n: 1, allowed: true, remain: 0, reset: day, period: day},
	})
	// An hourly quota: 01:00-02:00 happens twice on 2 November, one
	// period of two hours.
	h := newQuota(t, quota.Config{Limit: 1, Period: quota.Hour, Location: ny})
	one := time.Date(2025, 11, 2, 5, 0, 0, 0, time.UTC) // 01:00 EDT
	run(t, h, []step{
		{at: one, n: 1, allowed: true, remain: 0, reset: 2 * time.Hour, period: 2 * time.Hour},
		{at: one.Add(90 * time.Minute), n: 1, remain: 0, retry: 30 * time.Minute, reset: 30 * time.Minute, period: 2 * time.Hour},
		{at: one.Add(2 * time.Hour), n: 1, allowed: true, remain: 0, reset: time.Hour, period: time.Hour},
	})
}

func TestMidnightThatDoesNotExist(t *testing.T) {
	// America/Havana, 2025-03-09: 00:00 CST became 01:00 CDT. The day
	// starts at 01:00 (05:00 UTC) and lasts 23 hours; the day before
	// lasts 24, up to that instant.
	havana := load(t, "America/Havana")
	q := newQuota(t, quota.Config{Limit: 1, Period: quota.Day, Location: havana})
	gap := time.Date(2025, 3, 9, 5, 0, 0, 0, time.UTC)
	run(t, q, []step{
		{at: gap.Add(-nano), n: 1, allowed: true, remain: 0, reset: nano, period: day},
		{at: gap, n: 1, allowed: true, remain: 0, reset: 23 * time.Hour, period: 23 * time.Hour},
	})
	// time.Date normalizes the missing midnight to 23:00 of the 8th; the
	// quota does not start the 9th there.
	if td := time.Date(2025, 3, 9, 0, 0, 0, 0, havana); !td.Equal(gap.Add(-time.Hour)) {
		t.Logf("time.Date now returns %v for the missing midnight", td)
	}
	if s, _ := q.PeriodAt(gap.Add(-time.Hour)); s.Day() != 8 {
		t.Errorf("23:00 on the 8th is in the day starting %v", s)
	}
}

func TestMonthEnds(t *testing.T) {
	q := newQuota(t, quota.Config{Limit: 10, Period: quota.Month})
	jan31 := time.Date(2025, 1, 31, 23, 59, 59, 999999999, time.UTC)
	feb1 := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	run(t, q, []step{
		{at: jan31, n: 10, allowed: true, remain: 0, reset: nano, period: 31 * day},
		{at: jan31, n: 1, remain: 0, retry: nano, reset: nano, period: 31 * day},
		{at: feb1, n: 4, allowed: true, remain: 6, reset: 28 * day, period: 28 * day},
		{at: time.Date(2025, 2, 28, 12, 0, 0, 0, time.UTC), n: 7, remain: 6, retry: 12 * time.Hour, reset: 12 * time.Hour, period: 28 * day},
		{at: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), n: 7, allowed: true, remain: 3, reset: 31 * day, period: 31 * day},
		{at: time.Date(2025, 4, 30, 0, 0, 0, 0, time.UTC), n: 1, allowed: true, remain: 9, reset: day, period: 30 * day},
	})
	leap := newQuota(t, quota.Config{Limit: 1, Period: quota.Month})
	feb29 := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	run(t, leap, []step{
		{at: feb29, n: 1, allowed: true, remain: 0, reset: day, period: 29 * day},
		{at: feb29.Add(day - nano), n: 1, remain: 0, retry: nano, reset: nano, period: 29 * day},
		{at: feb29.Add(day), n: 1, allowed: true, remain: 0, reset: 31 * day, period: 31 * day},
	})
	dec := newQuota(t, quota.Config{Limit: 1, Period: quota.Month})
	run(t, dec, []step{
		{at: time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC), n: 1, allowed: true, remain: 0, reset: time.Hour, period: 31 * day},
		{at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), n: 1, allowed: true, remain: 0, reset: 31 * day, period: 31 * day},
	})
}

func TestWeekStart(t *testing.T) {
	sat := time.Date(2025, 1, 4, 12, 0, 0, 0, time.UTC) // a Saturday
	sun := sat.Add(day)
	mon := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	monday := newQuota(t, quota.Config{Limit: 1, Period: quota.Week}) // the default
	run(t, monday, []step{
		{at: sat, n: 1, allowed: true, remain: 0, reset: mon.Sub(sat), period: 7 * day},
		{at: sun, n: 1, remain: 0, retry: mon.Sub(sun), reset: mon.Sub(sun), period: 7 * day},
		{at: mon, n: 1, allowed: true, remain: 0, reset: 7 * day, period: 7 * day},
	})
	sunday := newQuota(t, quota.Config{Limit: 1, Period: quota.Week, WeekStart: new(time.Sunday)})
	sun0 := time.Date(2025, 1, 5, 0, 0, 0, 0, time.UTC)
	run(t, sunday, []step{
		{at: sat, n: 1, allowed: true, remain: 0, reset: sun0.Sub(sat), period: 7 * day},
		{at: sun0.Add(-nano), n: 1, remain: 0, retry: nano, reset: nano, period: 7 * day},
		{at: sun0, n: 1, allowed: true, remain: 0, reset: 7 * day, period: 7 * day},
	})
}

func TestHourAndYear(t *testing.T) {
	h := newQuota(t, quota.Config{Limit: 2, Period: quota.Hour})
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	run(t, h, []step{
		{at: t0.Add(59 * time.Minute), n: 2, allowed: true, remain: 0, reset: time.Minute, period: time.Hour},
		{at: t0.Add(time.Hour - nano), n: 1, remain: 0, retry: nano, reset: nano, period: time.Hour},
		{at: t0.Add(time.Hour), n: 1, allowed: true, remain: 1, reset: time.Hour, period: time.Hour},
	})
	y := newQuota(t, quota.Config{Limit: 5, Period: quota.Year})
	run(t, y, []step{
		{at: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC), n: 5, allowed: true, remain: 0, reset: day, period: 366 * day},
		{at: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), n: 5, allowed: true, remain: 0, reset: 365 * day, period: 365 * day},
	})
}

func TestFarFromUTC(t *testing.T) {
	// 2025-01-01T10:00Z is midnight on 2 January in Kiritimati (+14) and
	// 23:00 on 31 December in Pago Pago (-11).
	at := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	kiri := newQuota(t, quota.Config{Limit: 1, Period: quota.Day, Location: load(t, "Pacific/Kiritimati")})
	run(t, kiri, []step{
		{at: at.Add(-nano), n: 1, allowed: true, remain: 0, reset: nano, period: day},
		{at: at, n: 1, allowed: true, remain: 0, reset: day, period: day},
	})
	pago := newQuota(t, quota.Config{Limit: 1, Period: quota.Month, Location: load(t, "Pacific/Pago_Pago")})
	run(t, pago, []step{
		{at: at, n: 1, allowed: true, remain: 0, reset: time.Hour, period: 31 * day},
		{at: at.Add(time.Hour - nano), n: 1, remain: 0, retry: nano, reset: nano, period: 31 * day},
		{at: at.Add(time.Hour), n: 1, allowed: true, remain: 0, reset: 31 * day, period: 31 * day},
	})
}

func TestPerCallLimits(t *testing.T) {
	q := newQuota(t, quota.Config{Limit: 1000, Period: quota.Day}) // the tiers below ignore the 1000
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	run(t, q, []step{
		{at: d0, key: "free", limit: 3, n: 3, allowed: true, remain: 0, reset: day, period: day},
		{at: d0, key: "free", limit: 3, n: 1, remain: 0, retry: day, reset: day, period: day},
		{at: d0, key: "pro", limit: 100, n: 60, allowed: true, remain: 40, reset: day, period: day},
		// pro is downgraded: its 60 count against the new size.
		{at: d0, key: "pro", limit: 50, n: 1, remain: 0, retry: day, reset: day, period: day},
		{at: d0, key: "pro", limit: 50, n: 0, allowed: true, remain: 0, reset: day, period: day},
		// and upgraded.
		{at: d0, key: "pro", limit: 1000, n: 940, allowed: true, remain: 0, reset: day, period: day},
		{at: d0, key: "free", limit: 4, n: 1, allowed: true, remain: 0, reset: day, period: day},
		{at: d0, key: "free", n: 1, allowed: true, remain: 995, reset: day, period: day},
		{at: d0, key: "free", limit: 3, n: 5, remain: 0, retry: inf, reset: day, period: day},
	})
	if _, err := q.Allow(context.Background(), admit.Request{Key: "x", N: 1, Limit: admit.Limit{Rate: 0, Period: day}, At: d0}); !errors.Is(err, admit.ErrInvalidLimit) ||
		!strings.Contains(err.Error(), "invalid quota size 0") || errors.Is(err, admit.ErrInvalidConfig) {
		// A per-call size is a bad request (compose.IsFailure: not a
		// failure of the store, so no failure policy admits it), not a
		// config error.
		t.Errorf("limit 0: error %v, want admit.ErrInvalidLimit alone, saying the size", err)
	}
}

func TestPeekDoesNotStore(t *testing.T) {
	q := newQuota(t, quota.Config{Limit: 5, Period: quota.Day})
	d0 := time.Date(2025, 1, 1, 6, 0, 0, 0, time.UTC)
	run(t, q, []step{
		{at: d0, n: 0, allowed: true, remain: 5, period: day},
		{at: d0, n: 6, remain: 5, retry: inf, period: day},
	})
	if q.Len() != 0 {
		t.Errorf("a peek and a denial stored %d keys", q.Len())
	}
	run(t, q, []step{
		{at: d0, n: 2, allowed: true, remain: 3, reset: 18 * time.Hour, period: day},
		{at: d0.Add(time.Hour), n: 0, allowed: true, remain: 3, reset: 17 * time.Hour, period: day},
		{at: d0.Add(day), n: 0, allowed: true, remain: 5, period: day},
	})
}

func TestResetAndRefund(t *testing.T) {
	q := newQuota(t, quota.Config{Limit: 5, Period: quota.Day})
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	run(t, q, []step{{at: d0, n: 5, allowed: true, remain: 0, reset: day, period: day}})
	if err := q.Refund(context.Background(), admit.Request{Key: "k", N: 2, At: d0}); err != nil {
		t.Fatal(err)
	}
	run(t, q, []step{{at: d0, n: 0, allowed: true, remain: 2, reset: day, period: day}})
	if err := q.Refund(context.Background(), admit.Request{Key: "k", N: 100, At: d0}); err != nil { // no lower than zero
		t.Fatal(err)
	}
	if q.Len() != 0 {
		t.Errorf("a key refunded to zero is still held (%d keys)", q.Len())
	}
	run(t, q, []step{
		{at: d0, n: 0, allowed: true, remain: 5, period: day},
		{at: d0.Add(day - time.Hour), n: 5, allowed: true, remain: 0, reset: time.Hour, period: day},
	})
	// A refund after the period ended gives nothing to the new period.
	if err := q.Refund(context.Background(), admit.Request{Key: "k", N: 3, At: d0.Add(day)}); err != nil {
		t.Fatal(err)
	}
	run(t, q, []step{{at: d0.Add(day), n: 5, allowed: true, remain: 0, reset: day, period: day}})
	ctx := context.Background()
	if n := q.Len(); n != 1 {
		t.Fatalf("holds %d keys before Reset, want 1", n)
	}
	if err := q.Reset(ctx, "k"); err != nil || q.Len() != 0 {
		t.Errorf("Reset did not forget the key: %v, %d keys", err, q.Len())
	}
	if q.Reset(ctx, "k") != nil || q.Reset(ctx, "never seen") != nil || q.Len() != 0 {
		t.Error("Reset of keys not held")
	}
	run(t, q, []step{{at: d0.Add(day), n: 5, allowed: true, remain: 0, reset: day, period: day}})
	if err := q.Refund(context.Background(), admit.Request{Key: "unknown", N: 1, At: d0}); err != nil {
		t.Errorf("refund of an unknown key: %v", err)
	}
}

func TestTimeGoesBackwards(t *testing.T) {
	q := newQuota(t, quota.Config{Limit: 3, Period: quota.Day})
	d1 := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	run(t, q, []step{
		{at: d1.Add(-time.Hour), n: 2, allowed: true, remain: 1, reset: time.Hour, period: day},
		{at: d1.Add(time.Hour), n: 2, allowed: true, remain: 1, reset: 23 * time.Hour, period: day},
		// The wall clock steps back two hours, into the day before: the
		// request is decided in the current day (2 January), against its
		// count. Durations run from the instant given.
		{at: d1.Add(-time.Hour), n: 1, allowed: true, remain: 0, reset: 25 * time.Hour, period: day},
		{at: d1.Add(-time.Hour), n: 1, remain: 0, retry: 25 * time.Hour, reset: 25 * time.Hour, period: day},
		// A key never seen is decided in the current period too.
		{at: d1.Add(-2 * day), key: "new", n: 3, allowed: true, remain: 0, reset: 3 * day, period: day},
		// Within the period, earlier instants count as usual.
		{at: d1, n: 1, remain: 0, retry: day, reset: day, period: day},
		{at: d1.Add(day), n: 3, allowed: true, remain: 0, reset: day, period: day},
	})
}

func TestInstantsOutsideTheTimeLine(t *testing.T) {
	q := newQuota(t, quota.Config{Limit: 1, Period: quota.Year})
	run(t, q, []step{
		// Before 1970 counts as 1970-01-01T00:00:00Z, durations included.
		{at: time.Date(1900, 6, 1, 0, 0, 0, 0, time.UTC), key: "a", n: 1, allowed: true, remain: 0, reset: 365 * day, period: 365 * day},
	})
	far := newQuota(t, quota.Config{Limit: 1, Period: quota.Year})
	d, err := far.Allow(context.Background(), admit.Request{Key: "a", N: 1, At: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil || !d.Allowed || d.Limit.Period != 366*day { // 2116 is a leap year
		t.Errorf("far future: %+v, %v", d, err)
	}
}

func TestUsesClock(t *testing.T) {
	clk := admittest.NewManualClock(time.Date(2025, 1, 1, 23, 0, 0, 0, time.UTC))
	q := newQuota(t, quota.Config{Options: admit.Options{Clock: clk, Name: "daily"}, Limit: 1, Period: quota.Day})
	ctx := context.Background()
	d, err := q.Allow(ctx, admit.Request{Key: "k", N: 1})
	if err != nil || !d.Allowed || d.Rule != "daily" || d.ResetAfter != time.Hour {
		t.Fatalf("Allow = %+v, %v", d, err)
	}
	if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 1, Limit: admit.Limit{Rate: 1}}); d.Allowed || d.RetryAfter != time.Hour {
		t.Fatalf("Allow(Limit) = %+v", d)
	}
	if err := q.Refund(ctx, admit.Request{Key: "k", N: 1}); err != nil {
		t.Fatal(err)
	}
	if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 1}); !d.Allowed {
		t.Fatalf("after Refund: %+v", d)
	}
	clk.Advance(time.Hour)
	if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 1}); !d.Allowed || d.ResetAfter != day {
		t.Fatalf("next day: %+v", d)
	}
}

func TestNewBadInput(t *testing.T) {
	weekday := func(d time.Weekday) *time.Weekday { return &d }
	tests := []struct {
		name string
		cfg  quota.Config
		want string // in the message
	}{
		{"zero quota", quota.Config{Limit: 0, Period: quota.Day}, "quota: Limit 0: invalid quota size"},
		{"negative quota", quota.Config{Limit: -5, Period: quota.Day}, "quota: Limit -5: invalid quota size"},
		{"zero period", quota.Config{Limit: 1, Period: 0}, "quota: Period Period(0): invalid period"},
		{"unknown period", quota.Config{Limit: 1, Period: quota.Year + 1}, "quota: Period Period(6): invalid period"},
		{"week start 7", quota.Config{Limit: 1, Period: quota.Week, WeekStart: weekday(7)}, "quota: WeekStart 7"},
		{"week start -1", quota.Config{Limit: 1, Period: quota.Week, WeekStart: weekday(-1)}, "quota: WeekStart -1"},
		{"negative max keys", quota.Config{Limit: 1, Period: quota.Day, MaxKeys: -1}, "quota: MaxKeys -1"},
		{"negative max key length", quota.Config{Limit: 1, Period: quota.Day, MaxKeyLength: -1}, "quota: MaxKeyLength -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := quota.New(tt.cfg)
			if q != nil || !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, %v; want an error wrapping admit.ErrInvalidConfig that says %q", q, err, tt.want)
			}
			if isQuota := strings.Contains(tt.name, "quota"); strings.Contains(err.Error(), "invalid quota size") != isQuota {
				t.Errorf("New = %v; says \"invalid quota size\": %v, want %v", err, !isQuota, isQuota)
			}
		})
	}
	// A zero location, clock or observer is the default.
	if _, err := quota.New(quota.Config{Limit: 1, Period: quota.Day}); err != nil {
		t.Errorf("New with the defaults: %v", err)
	}
}

func TestAllowBadInput(t *testing.T) {
	q := newQuota(t, quota.Config{Options: admit.Options{Name: "q"}, Limit: 5, Period: quota.Day, MaxKeyLength: 8})
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	refused := func(d admit.Decision) bool {
		return !d.Allowed && d.RetryAfter == inf && d.Rule == "q" && d.Kind == admit.KindQuota
	}
	if d, err := q.Allow(context.Background(), admit.Request{Key: "k", N: -1, At: d0}); !errors.Is(err, admit.ErrInvalidCost) || !refused(d) {
		t.Errorf("n = -1: %+v, %v", d, err)
	}
	if d, err := q.Allow(context.Background(), admit.Request{Key: "123456789", N: 1, At: d0}); !errors.Is(err, admit.ErrKeyTooLong) || !refused(d) {
		t.Errorf("long key: %+v, %v", d, err)
	}
	if d, err := q.Allow(context.Background(), admit.Request{Key: "k", N: 1, Limit: admit.Limit{Rate: -3}, At: d0}); !errors.Is(err, admit.ErrInvalidLimit) || !strings.Contains(err.Error(), "invalid quota size -3") || !refused(d) || d.Limit.Period != day {
		t.Errorf("limit -3: %+v, %v", d, err)
	}
	if err := q.Refund(context.Background(), admit.Request{Key: "k", N: -1, At: d0}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("refund -1: %v", err)
	}
	if err := q.Refund(context.Background(), admit.Request{Key: "123456789", N: 1, At: d0}); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("refund with a long key: %v", err)
	}
	if q.Len() != 0 {
		t.Errorf("bad input stored %d keys", q.Len())
	}
	// Keys of any bytes, up to the maximum length, are accepted.
	for _, key := range []string{"", "\x00", "\xff\xfe", "{a}:b", "12345678", "é"} {
		if d, err := q.Allow(context.Background(), admit.Request{Key: key, N: 5, At: d0}); err != nil || !d.Allowed {
			t.Errorf("key %q: %+v, %v", key, d, err)
		}
		if d, _ := q.Allow(context.Background(), admit.Request{Key: key, N: 1, At: d0}); d.Allowed {
			t.Errorf("key %q: not counted on its own", key)
		}
	}
}

func TestConcurrentOneKey(t *testing.T) {
	const limit, goroutines, tries = 1000, 32, 100
	q := newQuota(t, quota.Config{Limit: limit, Period: quota.Day})
	at := time.Date(2025, 5, 5, 5, 5, 5, 5, time.UTC)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range tries {
				d, err := q.Allow(context.Background(), admit.Request{Key: "shared", N: 1, At: at})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := admitted.Load(); got != limit {
		t.Errorf("admitted %d, want exactly %d", got, limit)
	}
}

// TestConcurrentManyKeys runs goroutines over shared keys with instants
// moving forward across periods (each goroutine on its own pace, so they
// disagree about the current period), with refunds and small caps, and
// checks that no key is ever admitted more than N in one period.
func TestConcurrentManyKeys(t *testing.T) {
	const limit = 7
	paris := load(t, "Europe/Paris")
	q := newQuota(t, quota.Config{Limit: limit, Period: quota.Hour, Location: paris, MaxKeys: 64})
	start := time.Date(2025, 10, 25, 23, 0, 0, 0, time.UTC) // across the autumn change
	type slot struct {
		key string
		end int64 // the period's end
	}
	var mu sync.Mutex
	admitted := map[slot]int64{}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			at := start
			for i := range 3000 {
				at = at.Add(time.Duration(g+1) * time.Second)
				key := fmt.Sprint("k", (i*7+g)%40)
				d, err := q.Allow(context.Background(), admit.Request{Key: key, N: int64(1 + i%3), At: at})
				if err != nil {
					if !errors.Is(err, admit.ErrTooManyKeys) {
						t.Error(err)
					}
					continue
				}
				if d.Allowed && d.ResetAfter > 0 {
					mu.Lock()
					admitted[slot{key, at.Add(d.ResetAfter).UnixNano()}] += int64(1 + i%3)
					mu.Unlock()
				}
				if i%50 == 0 {
					_ = q.Refund(context.Background(), admit.Request{Key: key, N: 0, At: at})
				}
			}
		})
	}
	wg.Wait()
	for s, n := range admitted {
		if n > limit {
			t.Errorf("key %s admitted %d in the period ending %v", s.key, n, time.Unix(0, s.end))
		}
	}
	if q.Len() > 64 {
		t.Errorf("holding %d keys, over the cap", q.Len())
	}
}

func TestAccessors(t *testing.T) {
	paris := load(t, "Europe/Paris")
	q := newQuota(t, quota.Config{Limit: 42, Period: quota.Month, Location: paris})
	if q.Limit() != 42 || q.Period() != quota.Month || q.Location() != paris || q.Len() != 0 {
		t.Errorf("accessors: %d %v %v %d", q.Limit(), q.Period(), q.Location(), q.Len())
	}
}
