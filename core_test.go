package admit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// epoch is a wall-clock instant aligned on a day, so minute and hour windows
// start on it.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return epoch.Add(d) }

func mustNew(t testing.TB, a Algorithm, l Limit) Limiter {
	t.Helper()
	lim, err := New(a, l)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// TestConcurrentExact: many goroutines on one limiter at the same instants
// admit exactly what one goroutine admits.
func TestConcurrentExact(t *testing.T) {
	const goroutines, perInstant, instants = 8, 4, 300
	for _, l := range []Limit{PerSecond(100).WithBurst(20), PerSecond(3).WithBurst(5), PerMinute(1000)} {
		for _, a := range Algorithms() {
			serial, par := mustNew(t, a, l), mustNew(t, a, l)
			for i := 0; i < instants; i++ {
				now := at(time.Duration(i) * 7 * time.Millisecond)
				want := 0
				for j := 0; j < goroutines*perInstant; j++ {
					if serial.AllowN(now, 1) {
						want++
					}
				}
				var got atomic.Int64
				var wg sync.WaitGroup
				for g := 0; g < goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for j := 0; j < perInstant; j++ {
							if par.AllowN(now, 1) {
								got.Add(1)
							}
						}
					}()
				}
				wg.Wait()
				if int(got.Load()) != want {
					t.Fatalf("%v %v at instant %d: %d goroutines admitted %d, one admits %d", a, l, i, goroutines, got.Load(), want)
				}
			}
		}
	}
}

// TestAccuracy offers 10× the rate for 10 simulated seconds (one request
// each millisecond, both ends included) and checks each algorithm admits
// exactly what its documented formula says.
func TestAccuracy(t *testing.T) {
	const span = 10 * time.Second
	for _, l := range []Limit{PerSecond(100), PerSecond(100).WithBurst(20), PerSecond(3).WithBurst(2), PerSecond(7), Limit{Rate: 250, Period: 2500 * time.Millisecond, Burst: 40}} {
		T := float64(l.Period) / float64(l.Rate)
		w := time.Duration(float64(l.Burst) * T)
		want := map[Algorithm]int64{
			// B + ⌊t/T⌋: the bucket bound, reached.
			AlgGCRA:        l.Burst + int64(float64(span)/T+1e-9),
			AlgTokenBucket: l.Burst + int64(float64(span)/T+1e-9),
			AlgLeakyBucket: l.Burst + int64(float64(span)/T+1e-9),
		}
		if w%time.Millisecond == 0 {
			// Each window of W (aligned on epoch) admits its first B
			// requests; the window starting at 10s gets one request.
			full := int64(span / w)
			last := min(l.Burst, int64((span-time.Duration(full)*w)/time.Millisecond)+1)
			want[AlgFixedWindow] = full*l.Burst + last
			// The log admits B at the start of each cycle of W.
			want[AlgSlidingLog] = full*l.Burst + last
		}
		for a, n := range want {
			lim := mustNew(t, a, l)
			var got int64
			for d := time.Duration(0); d <= span; d += time.Millisecond {
				if lim.AllowN(at(d), 1) {
					got++
				}
			}
			if got != n {
				t.Errorf("%v %v: admitted %d in %v, want exactly %d", a, l, got, span, n)
			}
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	for _, l := range []Limit{PerSecond(1000), PerSecond(3)} {
		for _, a := range Algorithms() {
			lim := mustNew(t, a, l)
			i := 0
			f := func() {
				i++
				now := at(time.Duration(i) * time.Millisecond)
				lim.AllowN(now, 1)
				lim.DecideN(now, 1)
			}
			for j := 0; j < 10000; j++ { // grow the sliding log first
				f()
			}
			if n := testing.AllocsPerRun(1000, f); n != 0 {
				t.Errorf("%v %v: %v allocs per AllowN+DecideN", a, l, n)
			}
		}
	}
	g, _ := NewGCRA(PerSecond(1000))
	if n := testing.AllocsPerRun(1000, func() { r := g.ReserveN(at(0), 1); r.CancelAt(at(0)) }); n != 0 {
		t.Errorf("GCRA ReserveN+Cancel: %v allocs", n)
	}
	tb, _ := NewTokenBucket(PerSecond(1000))
	if n := testing.AllocsPerRun(1000, func() {
		r := tb.ReserveN(at(0), 1)
		r.CancelAt(at(0))
		tb.AllowN(at(0), 0)
	}); n != 0 {
		t.Errorf("TokenBucket ReserveN+Cancel+AllowN(0): %v allocs", n)
	}
}

func TestDegenerateLimits(t *testing.T) {
	for _, a := range Algorithms() {
		deny, all := mustNew(t, a, Limit{}), mustNew(t, a, Unlimited)
		for i := 0; i < 3; i++ {
			now := at(time.Duration(i) * time.Hour)
			if deny.AllowN(now, 1) {
				t.Errorf("%v: zero limit allowed", a)
			}
			if d := deny.DecideN(now, 1); d.Allowed || d.RetryAfter != InfDuration {
				t.Errorf("%v: zero limit decided %+v", a, d)
			}
			if d := deny.DecideN(now, 0); !d.Allowed {
				t.Errorf("%v: zero limit denied a peek: %+v", a, d)
			}
			if !all.AllowN(now, 1<<30) {
				t.Errorf("%v: unlimited denied", a)
			}
			if d := all.DecideN(now, 5); !d.Allowed || d.Limit != Unlimited {
				t.Errorf("%v: unlimited decided %+v", a, d)
			}
		}
		lim := mustNew(t, a, PerSecond(5))
		if lim.AllowN(epoch, -1) {
			t.Errorf("%v: negative n allowed", a)
		}
		if d := lim.DecideN(epoch, -1); d.Allowed || d.RetryAfter != InfDuration {
			t.Errorf("%v: negative n decided %+v", a, d)
		}
		if d := lim.DecideN(epoch, 6); d.Allowed || d.RetryAfter != InfDuration || d.Remaining != 5 {
			t.Errorf("%v: n > burst decided %+v", a, d)
		}
		// Far-off and pre-1970 instants neither panic nor overflow.
		for _, now := range []time.Time{{}, time.Unix(-1<<40, 0), time.Unix(1<<40, 0), time.Unix(0, 0)} {
			lim.AllowN(now, 1)
			if d := lim.DecideN(now, 1); d.RetryAfter < 0 || d.ResetAfter < 0 {
				t.Errorf("%v at %v: %+v", a, now, d)
			}
		}
	}
}

func TestSetLimit(t *testing.T) {
	// Tokens carry over for the token bucket and GCRA, capped at the new
	// burst; the leaky bucket keeps its level.
	for _, a := range []Algorithm{AlgGCRA, AlgTokenBucket, AlgLeakyBucket} {
		lim := mustNew(t, a, PerSecond(10))
		for i := 0; i < 6; i++ {
			lim.AllowN(epoch, 1)
		}
		// 4 left of 10. Raise to 20/s burst 20.
		if err := lim.SetLimitAt(epoch, PerSecond(20)); err != nil {
			t.Fatal(err)
		}
		want := int64(4)
		if a == AlgLeakyBucket {
			want = 14 // level 6 of 20
		}
		if d := lim.DecideN(epoch, 0); d.Remaining != want || d.Limit != PerSecond(20) {
			t.Errorf("%v after raise: %+v, want Remaining %d", a, d, want)
		}
		// Lower to 2/s burst 2: at most 2 left.
		if err := lim.SetLimitAt(epoch, PerSecond(2)); err != nil {
			t.Fatal(err)
		}
		if d := lim.DecideN(epoch, 0); d.Remaining != 0 && d.Remaining != 2 {
			t.Errorf("%v after lower: %+v", a, d)
		}
		if err := lim.SetLimitAt(epoch, Limit{Rate: -3}); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("%v: SetLimit(invalid) = %v", a, err)
		}
		if lim.Limit() != PerSecond(2) {
			t.Errorf("%v: invalid SetLimit changed the limit to %v", a, lim.Limit())
		}
	}
	// The windows keep their counts.
	for _, a := range []Algorithm{AlgFixedWindow, AlgSlidingWindow, AlgSlidingLog} {
		lim := mustNew(t, a, PerMinute(10))
		for i := 0; i < 6; i++ {
			lim.AllowN(at(time.Second), 1)
		}
		if err := lim.SetLimitAt(at(2*time.Second), PerMinute(20)); err != nil {
			t.Fatal(err)
		}
		if d := lim.DecideN(at(2*time.Second), 0); d.Remaining != 14 {
			t.Errorf("%v after raise: %+v, want Remaining 14", a, d)
		}
	}
}

func TestGCRAFastAndSlowPathsAgree(t *testing.T) {
	// 1000/s has T = 1ms (the CAS path); 1000/999ms has T = 999/1000 ms
	// (the locked path). Scaled by 999/1000 in time they must agree.
	fast, _ := NewGCRA(PerSecond(1000).WithBurst(10))
	slow, _ := NewGCRA(Limit{Rate: 1000, Period: 999 * time.Millisecond, Burst: 10})
	for i := 0; i < 5000; i++ {
		d := time.Duration(i*37%1000) * time.Microsecond * time.Duration(i/1000+1)
		d = time.Duration(i)*300*time.Microsecond + d/1000
		f := fast.DecideN(at(d), i%4)
		s := slow.DecideN(at(d*999/1000), i%4)
		if f.Allowed != s.Allowed || f.Remaining != s.Remaining {
			t.Fatalf("step %d: fast %+v slow %+v", i, f, s)
		}
	}
}

func TestReserveAndCancel(t *testing.T) {
	for _, a := range []Algorithm{AlgGCRA, AlgTokenBucket} {
		var res func(time.Time, int) Reservation
		lim := mustNew(t, a, PerSecond(10).WithBurst(2))
		switch l := lim.(type) {
		case *GCRA:
			res = l.ReserveN
		case *TokenBucket:
			res = l.ReserveN
		}
		r1 := res(epoch, 2)
		if !r1.OK() || r1.DelayFrom(epoch) != 0 {
			t.Fatalf("%v: r1 %+v", a, r1)
		}
		r2 := res(epoch, 1) // waits 100ms
		if d := r2.DelayFrom(epoch); !r2.OK() || d != 100*time.Millisecond {
			t.Fatalf("%v: r2 delay %v", a, d)
		}
		if !r2.TimeToAct().Equal(at(100 * time.Millisecond)) {
			t.Errorf("%v: r2 time to act %v", a, r2.TimeToAct())
		}
		r3 := res(epoch, 1) // waits 200ms
		if d := r3.DelayFrom(epoch); d != 200*time.Millisecond {
			t.Fatalf("%v: r3 delay %v", a, d)
		}
		// Cancelling r3 (the latest) gives its token back: a new
		// reservation waits 200ms again.
		r3.CancelAt(epoch)
		r3.CancelAt(epoch) // harmless
		if d := res(epoch, 1).DelayFrom(epoch); d != 200*time.Millisecond {
			t.Fatalf("%v: after cancel, delay %v, want 200ms", a, d)
		}
		// Cancelling r2, relied on by the later one, gives nothing back.
		r2.CancelAt(epoch)
		if d := res(epoch, 1).DelayFrom(epoch); d != 300*time.Millisecond {
			t.Fatalf("%v: after cancelling a relied-on reservation, delay %v, want 300ms", a, d)
		}
		if r := res(epoch, 3); r.OK() || r.DelayFrom(epoch) != InfDuration {
			t.Errorf("%v: reserve above burst OK", a)
		}
		// A reservation whose time has come cannot be cancelled.
		r4 := res(at(time.Hour), 2)
		r4.CancelAt(at(time.Hour + time.Second))
		if d := lim.DecideN(at(time.Hour), 0); d.Remaining != 0 {
			t.Errorf("%v: used reservation refunded: %+v", a, d)
		}
	}
}

func TestWaitN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, a := range []Algorithm{AlgGCRA, AlgTokenBucket} {
			lim := mustNew(t, a, PerSecond(10).WithBurst(1))
			wait := func(ctx context.Context, n int) error {
				if g, ok := lim.(*GCRA); ok {
					return g.WaitN(ctx, n)
				}
				return lim.(*TokenBucket).WaitN(ctx, n)
			}
			ctx := context.Background()
			start := time.Now()
			for i := 0; i < 5; i++ {
				if err := wait(ctx, 1); err != nil {
					t.Fatal(err)
				}
			}
			// The first is immediate, then one per 100ms.
			if got := time.Since(start); got < 400*time.Millisecond || got > 401*time.Millisecond {
				t.Errorf("%v: 5 waits took %v, want 400ms", a, got)
			}
			if err := wait(ctx, 2); !errors.Is(err, ErrExceedsBurst) {
				t.Errorf("%v: WaitN above burst = %v", a, err)
			}
			if err := wait(ctx, -1); !errors.Is(err, ErrInvalidCost) {
				t.Errorf("%v: WaitN(-1) = %v", a, err)
			}
			// A deadline before the slot fails at once and takes nothing.
			dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			t0 := time.Now()
			err := wait(dctx, 1)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrDeadline) || time.Since(t0) != 0 {
				t.Errorf("%v: WaitN past deadline = %v after %v", a, err, time.Since(t0))
			}
			// A cancelled wait gives its reservation back.
			cctx, cancel := context.WithCancel(ctx)
			go func() {
				time.Sleep(30 * time.Millisecond)
				cancel()
			}()
			if err := wait(cctx, 1); !errors.Is(err, context.Canceled) {
				t.Errorf("%v: cancelled WaitN = %v", a, err)
			}
			t1 := time.Now()
			if err := wait(ctx, 1); err != nil || time.Since(t1) != 70*time.Millisecond {
				t.Errorf("%v: after a cancelled wait, next wait took %v (%v), want 70ms", a, time.Since(t1), err)
			}
			if err := wait(cctx, 1); !errors.Is(err, context.Canceled) {
				t.Errorf("%v: WaitN with done ctx = %v", a, err)
			}
		}
	})
}

func TestTokens(t *testing.T) {
	g, _ := NewGCRA(PerSecond(10))
	b, _ := NewTokenBucket(PerSecond(10))
	lb, _ := NewLeakyBucket(PerSecond(10))
	for _, f := range []func(time.Time, int) bool{g.AllowN, b.AllowN, lb.AllowN} {
		f(epoch, 4)
	}
	now := at(50 * time.Millisecond)
	if got := g.TokensAt(now); got != 6.5 {
		t.Errorf("GCRA tokens %v, want 6.5", got)
	}
	if got := b.TokensAt(now); got != 6.5 {
		t.Errorf("TokenBucket tokens %v, want 6.5", got)
	}
	// The leaky bucket's level is 3.5: the room left is 6 whole events, and
	// once 6 are added (level 9.5), half an event's leak (50ms) makes room
	// for one more, not sooner.
	if d := lb.DecideN(now, 0); d.Remaining != 6 || !lb.AllowN(now, 6) || lb.AllowN(now, 1) {
		t.Errorf("leaky bucket at level 3.5: Remaining %d, want 6 (and 6 more admitted, not 7)", d.Remaining)
	}
	if d := lb.DecideN(now.Add(50*time.Millisecond-1), 1); d.Allowed || d.RetryAfter != 1 {
		t.Errorf("leaky bucket at level 9.5, 1ns before half an event leaked: %+v, want a denial for 1ns", d)
	}
	if !lb.AllowN(now.Add(50*time.Millisecond), 1) {
		t.Error("leaky bucket at level 9.5: no room after half an event leaked")
	}
	b.ReserveN(now, 10)
	if got := b.TokensAt(now); got != -3.5 {
		t.Errorf("TokenBucket tokens after overdraft %v, want -3.5", got)
	}
}
