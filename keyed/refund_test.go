package keyed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
)

func refund(t testing.TB, lim *keyed.Limiter, at time.Time, key string, n int64) {
	t.Helper()
	if err := lim.Refund(ctx, admit.Request{Key: key, N: n, At: at}); err != nil {
		t.Fatalf("RefundAt(%q, %d): %v", key, n, err)
	}
}

func TestRefund(t *testing.T) {
	for _, alg := range admit.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			lim := mustNew(t, keyed.Config{Algorithm: alg, Limit: admit.PerSecond(5)})
			// A key that is not stored is full: nothing to give back,
			// and nothing is stored.
			refund(t, lim, admittest.Epoch, "a", 3)
			if lim.Len() != 0 {
				t.Fatalf("a refund stored a key: Len = %d", lim.Len())
			}
			if d := allow(t, lim, admittest.Epoch, "a", 3); !d.Allowed || d.Remaining != 2 {
				t.Fatalf("AllowAt: %+v", d)
			}
			refund(t, lim, admittest.Epoch, "a", 2)
			if d := allow(t, lim, admittest.Epoch, "a", 0); d.Remaining != 4 {
				t.Fatalf("after giving back 2 of 3: %+v", d)
			}
			refund(t, lim, admittest.Epoch, "a", 100)
			if d := allow(t, lim, admittest.Epoch, "a", 0); d.Remaining != 5 || d.ResetAfter != 0 {
				t.Fatalf("after giving back 100: %+v, want full (5, no reset)", d)
			}
			refund(t, lim, admittest.Epoch, "a", 0) // does nothing
			if d := allow(t, lim, admittest.Epoch, "a", 5); !d.Allowed {
				t.Fatalf("the whole burst after the refunds: %+v", d)
			}
			// Under a per-call limit.
			pro := admit.PerSecond(50)
			if d, err := lim.Allow(ctx, admit.Request{Key: "b", N: 40, Limit: pro, At: admittest.Epoch}); err != nil || d.Remaining != 10 {
				t.Fatalf("Allow(Limit, At): %+v, %v", d, err)
			}
			if err := lim.Refund(ctx, admit.Request{Key: "b", N: 30, Limit: pro, At: admittest.Epoch}); err != nil {
				t.Fatal(err)
			}
			if d, _ := lim.Allow(ctx, admit.Request{Key: "b", N: 0, Limit: pro, At: admittest.Epoch}); d.Remaining != 40 {
				t.Fatalf("after Refund(Limit, At): %+v", d)
			}
		})
	}
}

// TestRefundWindows: the window algorithms give back nothing in a later
// window than the one the events were counted in.
func TestRefundWindows(t *testing.T) {
	for _, alg := range []admit.Algorithm{admit.AlgFixedWindow, admit.AlgSlidingWindow, admit.AlgSlidingLog} {
		lim := mustNew(t, keyed.Config{Algorithm: alg, Limit: admit.PerSecond(4)})
		allow(t, lim, admittest.Epoch, "k", 4)
		refund(t, lim, admittest.Epoch.Add(time.Second), "k", 4)
		d := allow(t, lim, admittest.Epoch.Add(time.Second), "k", 0)
		switch alg {
		case admit.AlgSlidingWindow: // the previous window still weighs in full at its end
			if d.Remaining != 0 {
				t.Errorf("%v: %+v", alg, d)
			}
		default:
			if d.Remaining != 4 {
				t.Errorf("%v: %+v", alg, d)
			}
		}
		// And half a window in: a sliding window's previous count weighs
		// half, untouched by the refund.
		if alg == admit.AlgSlidingWindow {
			if d := allow(t, lim, admittest.Epoch.Add(1500*time.Millisecond), "k", 0); d.Remaining != 2 {
				t.Errorf("%v half a window on: %+v", alg, d)
			}
		}
	}
}

// TestRefundUndoesAdmission: on random forward timelines, a limiter that
// admits requests and gives some back at once decides every other request
// as a limiter that only peeked at those does, for every algorithm, own and
// per-call limits, with and without eager forgetting.
func TestRefundUndoesAdmission(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	limits := []admit.Limit{admit.PerSecond(5), {Rate: 3, Period: time.Second, Burst: 7}, admit.PerMinute(10), {Rate: 7, Period: 13 * time.Millisecond}}
	for _, alg := range admit.Algorithms() {
		for _, grace := range []time.Duration{0, -1} { // the default grace, and none
			for trial := range 20 {
				l := limits[rng.IntN(len(limits))]
				perCall := trial%2 == 1
				a := mustNew(t, keyed.Config{Algorithm: alg, Limit: l, ForgetAfter: grace, Shards: 1})
				b := mustNew(t, keyed.Config{Algorithm: alg, Limit: l, ForgetAfter: grace, Shards: 1})
				do := func(lim *keyed.Limiter, now time.Time, key string, n int64) admit.Decision {
					if perCall {
						d, err := lim.Allow(ctx, admit.Request{Key: key, N: n, Limit: l, At: now})
						if err != nil {
							t.Fatal(err)
						}
						return d
					}
					return allow(t, lim, now, key, n)
				}
				now := admittest.Epoch
				for i := range 200 {
					now = now.Add(time.Duration(rng.Int64N(int64(l.Period) / int64(l.Rate) * 2)))
					key := fmt.Sprint("k", rng.IntN(3))
					n := int64(rng.IntN(4))
					if rng.IntN(3) == 0 {
						da := do(a, now, key, n)
						if !da.Allowed {
							do(b, now, key, n)
							continue
						}
						if perCall {
							if err := a.Refund(ctx, admit.Request{Key: key, N: n, Limit: l, At: now}); err != nil {
								t.Fatal(err)
							}
						} else {
							refund(t, a, now, key, n)
						}
						do(b, now, key, 0)
						continue
					}
					da, db := do(a, now, key, n), do(b, now, key, n)
					if da != db {
						t.Fatalf("%v %v grace %v per-call %v, request %d (%s n=%d at +%v): %+v, without the refunded requests %+v",
							alg, l, grace, perCall, i, key, n, now.Sub(admittest.Epoch), da, db)
					}
				}
			}
		}
	}
}

// TestRefundConcurrent: goroutines that admit and give back at one instant
// leave every key full.
func TestRefundConcurrent(t *testing.T) {
	for _, alg := range admit.Algorithms() {
		lim := mustNew(t, keyed.Config{Algorithm: alg, Limit: admit.PerSecond(10), Shards: 2})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 300 {
					key := fmt.Sprint("key", (g+i)%3)
					n := int64(1 + i%3)
					d, err := lim.Allow(ctx, admit.Request{Key: key, N: n, At: admittest.Epoch})
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						if err := lim.Refund(ctx, admit.Request{Key: key, N: n, At: admittest.Epoch}); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		for k := range 3 {
			if d := allow(t, lim, admittest.Epoch, fmt.Sprint("key", k), 0); d.Remaining != 10 {
				t.Errorf("%v key%d: %+v, want full", alg, k, d)
			}
		}
	}
}

func TestRefundBadInput(t *testing.T) {
	lim := mustNew(t, keyed.Config{Limit: admit.PerSecond(2), MaxKeyLength: 8})
	allow(t, lim, admittest.Epoch, "a", 2)
	for name, err := range map[string]error{
		"negative n":     lim.Refund(ctx, admit.Request{Key: "a", N: -1, At: admittest.Epoch}),
		"negative n now": lim.Refund(ctx, admit.Request{Key: "a", N: -1}),
		"per-call n":     lim.Refund(ctx, admit.Request{Key: "a", N: -1, Limit: admit.PerSecond(2), At: admittest.Epoch}),
		"per-call n now": lim.Refund(ctx, admit.Request{Key: "a", N: -1, Limit: admit.PerSecond(2)}),
	} {
		if !errors.Is(err, admit.ErrInvalidCost) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := lim.Refund(ctx, admit.Request{Key: "123456789", N: 1, At: admittest.Epoch}); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("long key: %v", err)
	}
	for _, l := range []admit.Limit{{Rate: -1, Period: time.Second}, {Rate: 5}} {
		if err := lim.Refund(ctx, admit.Request{Key: "a", N: 1, Limit: l, At: admittest.Epoch}); !errors.Is(err, admit.ErrInvalidLimit) {
			t.Errorf("limit %+v: %v", l, err)
		}
	}
	// Nothing was given back by the bad calls.
	if d := allow(t, lim, admittest.Epoch, "a", 1); d.Allowed {
		t.Errorf("a bad refund gave capacity back: %+v", d)
	}
}

// TestRefundClock: Refund and Refund(Limit) read the limiter's clock.
func TestRefundClock(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	lim := mustNew(t, keyed.Config{Options: admit.Options{Clock: clk}, Algorithm: admit.AlgFixedWindow, Limit: admit.PerMinute(3)})
	lim.Allow(ctx, admit.Request{Key: "k", N: 3})
	clk.Advance(time.Minute) // the next window: nothing comes back
	if err := lim.Refund(ctx, admit.Request{Key: "k", N: 3}); err != nil {
		t.Fatal(err)
	}
	if d, _ := lim.Allow(ctx, admit.Request{Key: "k", N: 0, At: admittest.Epoch}); d.Remaining != 0 {
		t.Fatalf("a refund in the next window gave back: %+v", d)
	}
	clk.Set(admittest.Epoch.Add(30 * time.Second))
	if err := lim.Refund(ctx, admit.Request{Key: "k", N: 2, Limit: admit.PerMinute(3)}); err != nil {
		t.Fatal(err)
	}
	if d, _ := lim.Allow(ctx, admit.Request{Key: "k", N: 0, At: admittest.Epoch}); d.Remaining != 2 {
		t.Fatalf("after Refund(Limit) in the window: %+v", d)
	}
}

func TestRefundZeroAllocs(t *testing.T) {
	for _, alg := range admit.Algorithms() {
		lim := mustNew(t, keyed.Config{Algorithm: alg, Limit: admit.PerSecond(1e6)})
		now := time.Now()
		allow(t, lim, now, "existing", 1)
		if avg := testing.AllocsPerRun(1000, func() {
			lim.Allow(ctx, admit.Request{Key: "existing", N: 1, At: now})
			lim.Refund(ctx, admit.Request{Key: "existing", N: 1, At: now})
		}); avg != 0 {
			t.Errorf("%v: AllowAt and RefundAt allocate %v times", alg, avg)
		}
		if avg := testing.AllocsPerRun(1000, func() {
			lim.Refund(ctx, admit.Request{Key: "existing", N: 1, Limit: admit.PerSecond(1e6), At: now})
			lim.Refund(ctx, admit.Request{Key: "missing", N: 1, At: now})
			lim.Refund(context.Background(), admit.Request{Key: "existing", N: 1})
		}); avg != 0 {
			t.Errorf("%v: refunds allocate %v times", alg, avg)
		}
	}
}
