package concurrency

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

// TestRandomWithWaiters drives a Limiter with waiters through random
// sequences of blocking acquisitions, cancellations, releases and clock
// moves, and checks after each step, once every goroutine has settled, the
// internal invariants and that each key's in-flight count is what the
// Permits held say, never above the limit.
func TestRandomWithWaiters(t *testing.T) {
	for seed := range uint64(40) {
		synctest.Test(t, func(t *testing.T) {
			randomWithWaiters(t, seed)
		})
	}
}

type randomWaiter struct {
	key    string
	n      int64
	cancel context.CancelFunc
	done   bool
	p      Permit
}

func randomWithWaiters(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 99))
	const max = 4
	clk := admittest.NewManualClock(admittest.Epoch)
	cfg := Config{Options: admit.Options{Clock: clk}, Max: max}
	if seed%2 == 0 {
		cfg.Lease = time.Duration(1+r.IntN(5)) * time.Second
	}
	if seed%3 == 0 {
		cfg.MaxWait = time.Duration(1+r.IntN(5)) * time.Second
	}
	if seed%5 == 0 {
		cfg.MaxWaiters = 2
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"", "a", "b"}
	var ws []*randomWaiter
	results := make(chan struct {
		w *randomWaiter
		p Permit
	}, 1000)
	collect := func() {
		for {
			select {
			case res := <-results:
				res.w.done, res.w.p = true, res.p
			default:
				return
			}
		}
	}
	grants := 0
	for step := range 300 {
		switch op := r.IntN(10); {
		case op < 4: // a waiter
			w := &randomWaiter{key: keys[r.IntN(len(keys))], n: int64(1 + r.IntN(max))}
			ctx, cancel := context.WithCancel(context.Background())
			w.cancel = cancel
			ws = append(ws, w)
			go func() {
				p, d, err := l.Acquire(ctx, admit.Request{Key: w.key, N: w.n})
				if d.Allowed != (err == nil && p.id != 0) {
					t.Errorf("Acquire: %+v, %v, %+v", d, err, p)
				}
				results <- struct {
					w *randomWaiter
					p Permit
				}{w, p}
			}()
		case op < 6: // release
			if len(ws) > 0 {
				ws[r.IntN(len(ws))].p.Release()
			}
		case op < 7: // cancel
			if len(ws) > 0 {
				ws[r.IntN(len(ws))].cancel()
			}
		default: // time passes
			clk.Advance(time.Duration(r.IntN(2000)) * time.Millisecond)
		}
		synctest.Wait()
		l.Stats() // reclaims the expired leases, which may serve waiters
		synctest.Wait()
		collect()
		checkInvariants(t, l)
		for _, k := range keys {
			var held int64
			for _, w := range ws {
				if w.key == k && w.p.Held() {
					held += w.n
					grants++
				}
			}
			if got := inFlightOf(l, k); got != held || got > max {
				t.Fatalf("seed %d step %d: InFlight(%q) = %d, Permits hold %d", seed, step, k, got, held)
			}
		}
	}
	for _, w := range ws {
		w.cancel()
	}
	synctest.Wait()
	collect()
	for _, w := range ws {
		if !w.done {
			t.Fatalf("seed %d: a waiter is still waiting after its context was cancelled", seed)
		}
		w.p.Release()
	}
	checkInvariants(t, l)
	if st := l.Stats(); st.Keys != 0 || st.InFlight != 0 || st.Waiting != 0 || st.Holders != 0 {
		t.Fatalf("seed %d: Stats at the end: %+v", seed, st)
	}
	if n := clk.Timers(); n != 0 {
		t.Fatalf("seed %d: %d timers left", seed, n)
	}
	if grants == 0 {
		t.Fatalf("seed %d: no Permit ever held", seed)
	}
}
