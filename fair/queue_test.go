package fair

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

func mustQueue(t testing.TB, cfg QueueConfig) *Queue {
	t.Helper()
	q, err := NewQueue(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// checkGoroutines fails t if more goroutines run at its end than at its
// start.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		for range 200 {
			if runtime.NumGoroutine() <= before {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Errorf("goroutines: %d at start, %d at end", before, runtime.NumGoroutine())
	})
}

type result struct {
	flow string
	p    Permit
	d    admit.Decision
	err  error
}

// waitFor parks a caller of Acquire for flow, and returns once it waits
// (or has returned).
func waitFor(t *testing.T, q *Queue, c context.Context, flow string, n int64, out chan<- result) {
	t.Helper()
	before := q.Stats().Waiting
	done := make(chan struct{})
	go func() {
		p, d, err := q.Acquire(c, flow, n)
		out <- result{flow, p, d, err}
		close(done)
	}()
	for q.Stats().Waiting == before {
		select {
		case <-done:
			return
		default:
			time.Sleep(50 * time.Microsecond)
		}
	}
}

func TestNewQueueBadInput(t *testing.T) {
	for _, c := range []struct {
		max  int64
		want error
	}{
		{0, admit.ErrInvalidLimit},
		{-3, admit.ErrInvalidLimit},
	} {
		if q, err := NewQueue(QueueConfig{Max: c.max}); !errors.Is(err, c.want) || q != nil {
			t.Errorf("NewQueue(QueueConfig{Max: %d}): %v, %v", c.max, q, err)
		}
	}
	if _, err := NewQueue(QueueConfig{Options: admit.Options{Name: "q"}, Max: 1}); err != nil {
		t.Error(err)
	}
}

func TestQueueImmediate(t *testing.T) {
	q := mustQueue(t, QueueConfig{Options: admit.Options{Name: "db"}, Max: 3})
	p, d, err := q.TryAcquire(ctx, "a", 2)
	want := admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 3, Burst: 3}, Remaining: 1, Rule: "db", Kind: admit.KindConcurrency}
	if err != nil || d != want {
		t.Fatalf("%+v, %v", d, err)
	}
	if _, d, _ := q.TryAcquire(ctx, "b", 2); d.Allowed || d.RetryAfter != 0 {
		t.Fatalf("%+v", d)
	}
	if _, d, err := q.TryAcquire(ctx, "b", 4); !errors.Is(err, admit.ErrExceedsBurst) || d.RetryAfter != admit.InfDuration {
		t.Fatalf("%+v, %v", d, err)
	}
	if _, _, err := q.Acquire(ctx, "b", -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	if p0, d, err := q.Acquire(ctx, "b", 0); err != nil || !d.Allowed || p0 != (Permit{}) {
		t.Fatalf("%+v, %v", d, err)
	}
	if !p.Release() || p.Release() {
		t.Fatal("permit released other than once")
	}
	if st := q.Stats(); st != (QueueStats{}) {
		t.Fatalf("stats %+v", st)
	}
	if _, d, _ := q.TryAcquire(ctx, "b", 0); d.Limit != (admit.Limit{Rate: 3, Burst: 3}) || d.Remaining != 3 {
		t.Fatalf("a peek at the queue of 3 slots: %+v", d)
	}
	// With no waiting allowed, Acquire is TryAcquire.
	q0 := mustQueue(t, QueueConfig{Max: 1, MaxWaiters: -1})
	h, _, _ := q0.Acquire(ctx, "a", 1)
	if _, d, err := q0.Acquire(ctx, "a", 1); err != nil || d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	h.Release()
}

// TestQueueWeightedFair: two flows queue many requests for one slot; they
// are granted in the ratio of their weights, whatever the order and the
// numbers in which they queued.
func TestQueueWeightedFair(t *testing.T) {
	checkGoroutines(t)
	weights := map[string]float64{"gold": 3, "free": 1}
	q := mustQueue(t, QueueConfig{Max: 1, Weight: func(flow string) float64 { return weights[flow] }})
	hold, _, _ := q.TryAcquire(ctx, "x", 1)
	out := make(chan result, 200)
	// free queues 60 first, then gold 60.
	for range 60 {
		waitFor(t, q, ctx, "free", 1, out)
	}
	for range 60 {
		waitFor(t, q, ctx, "gold", 1, out)
	}
	if st := q.Stats(); st.Waiting != 120 || st.Flows != 2 {
		t.Fatalf("stats %+v", st)
	}
	hold.Release()
	var order []string
	for range 120 {
		r := <-out
		if r.err != nil || !r.d.Allowed {
			t.Fatalf("%+v", r)
		}
		order = append(order, r.flow)
		r.p.Release() // grants the next
	}
	// In every 4 consecutive grants of the first 80: 3 gold, 1 free.
	for i := 0; i+4 <= 80; i += 4 {
		gold := 0
		for _, f := range order[i : i+4] {
			if f == "gold" {
				gold++
			}
		}
		if gold != 3 {
			t.Fatalf("grants %d-%d: %v", i, i+3, order[i:i+4])
		}
	}
	if st := q.Stats(); st != (QueueStats{Waits: 120, Waited: st.Waited}) {
		t.Fatalf("stats %+v", st)
	}
}

// TestQueueHeavyNotOvertaken: the first waiter in tag order blocks those
// behind it until its slots are free, even if theirs are.
func TestQueueHeavyNotOvertaken(t *testing.T) {
	checkGoroutines(t)
	q := mustQueue(t, QueueConfig{Max: 4, Weight: func(flow string) float64 {
		if flow == "slow" {
			return 0.25
		}
		return 1
	}})
	a, _, _ := q.TryAcquire(ctx, "x", 2)
	b, _, _ := q.TryAcquire(ctx, "x", 2)
	out := make(chan result, 4)
	waitFor(t, q, ctx, "big", 2, out)  // finish tag 2
	waitFor(t, q, ctx, "slow", 1, out) // finish tag 4
	a.Release()                        // 2 free: big is served
	r := <-out
	if r.flow != "big" {
		t.Fatalf("got %s first", r.flow)
	}
	q2 := mustQueue(t, QueueConfig{Max: 4})
	c, _, _ := q2.TryAcquire(ctx, "x", 3)
	waitFor(t, q2, ctx, "big", 2, out)   // tag 2, needs 2 of the 1 free
	waitFor(t, q2, ctx, "small", 3, out) // tag 3
	waitFor(t, q2, ctx, "tiny", 1, out)  // tag 1: first, and fits
	if r := <-out; r.flow != "tiny" {
		t.Fatalf("got %s", r.flow)
	} else {
		defer r.p.Release()
	}
	// Now 0 free; big is first. Releasing c frees 3: big (2) is served,
	// and small (3) must wait for it, though tiny's release would let it
	// in alone.
	c.Release()
	if r := <-out; r.flow != "big" {
		t.Fatalf("got %s", r.flow)
	} else {
		r.p.Release()
	}
	if r := <-out; r.flow != "small" {
		t.Fatalf("got %s", r.flow)
	} else {
		r.p.Release()
	}
	r.p.Release()
	b.Release()
}

// TestQueueFull: a full queue lets a flow with an earlier tag displace the
// last waiter of the flow that queued most; a flow that would come last
// is refused.
func TestQueueFull(t *testing.T) {
	checkGoroutines(t)
	q := mustQueue(t, QueueConfig{Max: 1, MaxWaiters: 4})
	hold, _, _ := q.TryAcquire(ctx, "x", 1)
	out := make(chan result, 10)
	for range 4 {
		waitFor(t, q, ctx, "flood", 1, out)
	}
	// flood's fifth is refused at once (it would be last).
	if _, d, err := q.Acquire(ctx, "flood", 1); err != nil || d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	// A newcomer displaces flood's last waiter (the queue stays at 4).
	go func() {
		p, d, err := q.Acquire(ctx, "quiet", 1)
		out <- result{"quiet", p, d, err}
	}()
	r := <-out
	if r.flow != "flood" || r.d.Allowed || r.err != nil {
		t.Fatalf("displaced: %+v", r)
	}
	if st := q.Stats(); st.Waiting != 4 || st.Flows != 2 {
		t.Fatalf("stats %+v", st)
	}
	hold.Release()
	var order []string
	for range 4 {
		r := <-out
		order = append(order, r.flow)
		r.p.Release()
	}
	// flood's first (tag 1) and quiet (tag 1, later) first, then flood.
	if order[0] != "flood" || order[1] != "quiet" {
		t.Fatalf("order %v", order)
	}
}

// TestQueueStatsWaits: the callers that waited, cancelled or served, and
// the time they waited by the Queue's clock.
func TestQueueStatsWaits(t *testing.T) {
	checkGoroutines(t)
	clk := admittest.NewManualClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	q := mustQueue(t, QueueConfig{Options: admit.Options{Clock: clk}, Max: 1})
	hold, _, _ := q.TryAcquire(ctx, "x", 1)
	out := make(chan result, 2)
	cctx, cancel := context.WithCancel(ctx)
	waitFor(t, q, cctx, "a", 1, out)
	clk.Advance(2 * time.Second)
	cancel()
	if r := <-out; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled: %+v", r)
	}
	waitFor(t, q, ctx, "b", 1, out)
	clk.Advance(3 * time.Second)
	hold.Release()
	r := <-out
	if !r.d.Allowed {
		t.Fatalf("served: %+v", r)
	}
	r.p.Release()
	if st := q.Stats(); st != (QueueStats{Waits: 2, Waited: 5 * time.Second}) {
		t.Fatalf("stats %+v, want 2 waits of 5s in all", st)
	}
}

// TestQueueCancel: a cancelled waiter leaves at once, and the later
// waiters of its flow move up.
func TestQueueCancel(t *testing.T) {
	checkGoroutines(t)
	q := mustQueue(t, QueueConfig{Max: 1})
	hold, _, _ := q.TryAcquire(ctx, "x", 1)
	out := make(chan result, 10)
	cctx, cancel := context.WithCancel(ctx)
	waitFor(t, q, cctx, "a", 1, out) // a's tags: 1
	waitFor(t, q, ctx, "a", 1, out)  // 2
	waitFor(t, q, ctx, "b", 1, out)  // 1
	waitFor(t, q, ctx, "b", 1, out)  // 2
	cancel()
	r := <-out
	if !errors.Is(r.err, context.Canceled) || r.d.Allowed {
		t.Fatalf("%+v", r)
	}
	// a's second moves up to tag 1, the tag of b's first, and came
	// before it: a, b, b. (Without the move: b, a, b.)
	hold.Release()
	var order []string
	for range 3 {
		r := <-out
		order = append(order, r.flow)
		r.p.Release()
	}
	if order[0] != "a" || order[1] != "b" || order[2] != "b" {
		t.Fatalf("order %v", order)
	}
	if st := q.Stats(); st != (QueueStats{Waits: 4, Waited: st.Waited}) {
		t.Fatalf("stats %+v", st)
	}
	// A caller whose context is done is still granted free slots at once.
	if p, d, err := q.Acquire(cctx, "a", 1); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	} else {
		p.Release()
	}
}

func TestQueueBadWeight(t *testing.T) {
	for _, w := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		q := mustQueue(t, QueueConfig{Max: 1, Weight: func(string) float64 { return w }})
		if _, d, err := q.Acquire(ctx, "a", 1); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "fair: invalid weight") || d.Allowed {
			t.Errorf("weight %v: %+v, %v", w, d, err)
		}
	}
}

func TestQueueLayer(t *testing.T) {
	q := mustQueue(t, QueueConfig{Max: 2})
	l := q.Layer()
	r, d, err := l.TryAcquire(ctx, admit.Request{Key: "a", N: 2})
	if err != nil || !d.Allowed || r == nil {
		t.Fatalf("%v, %+v, %v", r, d, err)
	}
	if r2, d, err := l.TryAcquire(ctx, admit.Request{Key: "a", N: 3}); err != nil || d.Allowed || r2 != nil {
		t.Fatalf("n > max as a layer: %v, %+v, %v", r2, d, err)
	}
	r.Release()
	r.Release()
	if q.Stats().InFlight != 0 {
		t.Fatal(q.Stats())
	}
}
