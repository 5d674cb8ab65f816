package adaptive

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

func TestNewGradientBadInput(t *testing.T) {
	cases := []struct {
		name string
		cfg  GradientConfig
		want error
	}{
		{"zero min", GradientConfig{Min: 0, Max: 10}, errBounds},
		{"negative min", GradientConfig{Min: -1, Max: 10}, errBounds},
		{"min above max", GradientConfig{Min: 11, Max: 10}, errBounds},
		{"initial below min", GradientConfig{Min: 5, Max: 10, Initial: 4}, errBounds},
		{"initial above max", GradientConfig{Min: 5, Max: 10, Initial: 11}, errBounds},
		{"negative initial", GradientConfig{Min: 5, Max: 10, Initial: -1}, admit.ErrInvalidConfig},
		{"tolerance below 1", GradientConfig{Min: 1, Max: 10, Tolerance: 0.9}, admit.ErrInvalidConfig},
		{"tolerance NaN", GradientConfig{Min: 1, Max: 10, Tolerance: math.NaN()}, admit.ErrInvalidConfig},
		{"tolerance Inf", GradientConfig{Min: 1, Max: 10, Tolerance: math.Inf(1)}, admit.ErrInvalidConfig},
		{"smoothing negative", GradientConfig{Min: 1, Max: 10, Smoothing: -0.1}, admit.ErrInvalidConfig},
		{"smoothing above 1", GradientConfig{Min: 1, Max: 10, Smoothing: 1.01}, admit.ErrInvalidConfig},
		{"smoothing NaN", GradientConfig{Min: 1, Max: 10, Smoothing: math.NaN()}, admit.ErrInvalidConfig},
		{"queue NaN", GradientConfig{Min: 1, Max: 10, QueueSize: math.NaN()}, admit.ErrInvalidConfig},
		{"queue Inf", GradientConfig{Min: 1, Max: 10, QueueSize: math.Inf(1)}, admit.ErrInvalidConfig},
		{"queue -Inf", GradientConfig{Min: 1, Max: 10, QueueSize: math.Inf(-1)}, admit.ErrInvalidConfig},
		{"long window negative", GradientConfig{Min: 1, Max: 10, LongWindow: -1}, admit.ErrInvalidConfig},
		{"window samples negative", GradientConfig{Min: 1, Max: 10, WindowSamples: -1}, admit.ErrInvalidConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := NewGradient(c.cfg)
			if !matches(err, c.want) || g != nil {
				t.Fatalf("NewGradient = %v, %v; want an error wrapping %v", g, err, c.want)
			}
		})
	}
	// The extremes are fine.
	g, err := NewGradient(GradientConfig{Min: 1, Max: math.MaxInt64, Tolerance: 1, Smoothing: 1, QueueSize: -1, WindowTime: -1, Initial: math.MaxInt64})
	if err != nil {
		t.Fatal(err)
	}
	if g.Limit() != math.MaxInt64 {
		t.Fatalf("limit %d", g.Limit())
	}
}

func mustGradient(t testing.TB, cfg GradientConfig) *Gradient {
	t.Helper()
	g, err := NewGradient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGradientTryAcquire(t *testing.T) {
	g := mustGradient(t, GradientConfig{Options: admit.Options{Name: "backend"}, Min: 3, Max: 10})
	var toks []Token
	for i := range 3 {
		tok, d, err := g.TryAcquireN(t0, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
		want := admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 3, Burst: 3}, Remaining: int64(2 - i), Rule: "backend", Kind: admit.KindConcurrency}
		if d != want {
			t.Fatalf("request %d: %+v, want %+v", i, d, want)
		}
		toks = append(toks, tok)
	}
	tok, d, err := g.TryAcquireN(t0, 1)
	if err != nil || d.Allowed || d.Remaining != 0 || d.RetryAfter != 0 || tok != (Token{}) {
		t.Fatalf("4th request: %+v, %+v, %v", tok, d, err)
	}
	// n = 0 is always admitted and holds nothing.
	if tok, d, err := g.TryAcquireN(t0, 0); err != nil || !d.Allowed || tok != (Token{}) {
		t.Fatalf("n=0: %+v, %+v, %v", tok, d, err)
	}
	// Bad input.
	if _, d, err := g.TryAcquireN(t0, -1); !errors.Is(err, admit.ErrInvalidCost) || d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Fatalf("n=-1: %+v, %v", d, err)
	}
	if _, d, err := g.TryAcquireN(t0, 11); !errors.Is(err, admit.ErrExceedsBurst) || d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Fatalf("n=11: %+v, %v", d, err)
	}
	// A request above the current limit but within max is only refused.
	if _, d, err := g.TryAcquireN(t0, 4); err != nil || d.Allowed || d.RetryAfter != 0 {
		t.Fatalf("n=4: %+v, %v", d, err)
	}

	// Only the first completion of a token (or a copy) counts.
	cp := toks[0]
	if !toks[0].DoneAt(at(1), Ignored) || cp.DoneAt(at(1), Ignored) || toks[0].Done(Succeeded) {
		t.Fatal("a token was released twice")
	}
	if g.Stats().InFlight != 2 {
		t.Fatalf("in flight %d", g.Stats().InFlight)
	}
	// A new grant reuses the record; the stale copy still frees nothing.
	tok, _, _ = g.TryAcquireN(t0, 1)
	if cp.DoneRTT(Succeeded, time.Millisecond) || g.Stats().InFlight != 3 {
		t.Fatalf("stale token released a new grant: in flight %d", g.Stats().InFlight)
	}
	tok.Release()
	toks[1].DoneRTT(Dropped, 0)
	toks[2].DoneAt(at(2), Outcome(200)) // not an outcome: no sample
	if st := g.Stats(); st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
	var zero Token
	zero.Release()
	if zero.Done(Succeeded) || zero.DoneAt(t0, Succeeded) || zero.DoneRTT(Succeeded, 1) {
		t.Fatal("the zero token released something")
	}
}

// grantAll acquires n slots one by one at now.
func grantAll(t *testing.T, g *Gradient, now time.Time, n int) []Token {
	t.Helper()
	toks := make([]Token, n)
	for i := range toks {
		tok, d, err := g.TryAcquireN(now, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("grant %d of %d: %+v, %v", i, n, d, err)
		}
		toks[i] = tok
	}
	return toks
}

// TestGradientUpdate checks the model's arithmetic window by window.
func TestGradientUpdate(t *testing.T) {
	g := mustGradient(t, GradientConfig{Min: 10, Max: 100, Initial: 20, WindowSamples: 4, WindowTime: -1, QueueSize: -1, LongWindow: 100})
	check := func(step string, est float64, lim int64, long time.Duration) {
		t.Helper()
		st := g.Stats()
		if !near(st.Estimate, est) || st.Limit != lim || st.LongRTT != long {
			t.Fatalf("%s: estimate %v limit %d long %v; want %v, %d, %v", step, st.Estimate, st.Limit, st.LongRTT, est, lim, long)
		}
	}
	// Window 1: 10 in flight (half the limit: not app-limited), 10ms
	// each. long = 10ms, gradient 1.5, computed 30: 0.8×20 + 0.2×30 = 22.
	for _, tok := range grantAll(t, g, at(0), 10) {
		tok.DoneAt(at(10), Succeeded)
	}
	check("window 1", 22, 22, 10*time.Millisecond)
	if g.Stats().Windows != 1 {
		t.Fatalf("windows %d", g.Stats().Windows)
	}

	// Window 2: 11 in flight, 20ms: congested (20 > 1.25×10), so long
	// stays; gradient 0.75: 0.8×22 + 0.2×16.5 = 20.9.
	for _, tok := range grantAll(t, g, at(100), 11) {
		tok.DoneAt(at(120), Succeeded)
	}
	check("window 2", 20.9, 20, 10*time.Millisecond)

	// Window 3: drops: gradient 0.5: 0.8×20.9 + 0.2×10.45 = 18.81.
	for _, tok := range grantAll(t, g, at(200), 10) {
		tok.DoneAt(at(201), Dropped)
	}
	check("window 3", 18.81, 18, 10*time.Millisecond)

	// Window 4: 9 in flight, 8ms: below long, so learnt, with weight
	// 1/2 (the second window learnt): long = 9ms. Gradient 1.5×9/8 =
	// 1.6875: 0.8×18.81 + 0.2×31.741875 = 21.39637...
	for _, tok := range grantAll(t, g, at(300), 9) {
		tok.DoneAt(at(308), Succeeded)
	}
	check("window 4", 0.8*18.81+0.2*18.81*1.6875, 21, 9*time.Millisecond)

	// Window 5: app-limited (4 of 21 in flight): no growth, but learnt.
	est := g.Stats().Estimate
	toks := grantAll(t, g, at(400), 4)
	for _, tok := range toks {
		tok.DoneAt(at(406), Succeeded)
	}
	// long = 9 + (6-9)/3 = 8ms; the gradient (2, capped) cannot grow the
	// limit.
	check("window 5", est, 21, 8*time.Millisecond)

	// Ignored outcomes and stale samples do not close windows: 4 slots
	// taken in window 6, the window closes only with 4 fresh samples.
	old := grantAll(t, g, at(500), 11)
	before := g.Stats().Windows
	for _, tok := range old[:10] {
		tok.DoneAt(at(510), Ignored)
	}
	if g.Stats().Windows != before {
		t.Fatal("ignored samples closed a window")
	}
	old[10].DoneAt(at(510), Succeeded)
}

func TestGradientStaysInBounds(t *testing.T) {
	g := mustGradient(t, GradientConfig{Min: 5, Max: 8, WindowSamples: 1, WindowTime: -1, QueueSize: 100})
	for i := range 50 {
		toks := grantAll(t, g, at(float64(i)), int(g.Limit()))
		for _, tok := range toks {
			tok.DoneAt(at(float64(i)+0.001), Succeeded) // ever faster: grows
		}
		if l := g.Limit(); l < 5 || l > 8 {
			t.Fatalf("limit %d", l)
		}
	}
	if g.Limit() != 8 {
		t.Fatalf("limit %d, want the max", g.Limit())
	}
	for i := range 50 {
		toks := grantAll(t, g, at(float64(100+i)), int(g.Limit()))
		for _, tok := range toks {
			tok.DoneAt(at(float64(100+i)), Dropped)
		}
		if l := g.Limit(); l < 5 || l > 8 {
			t.Fatalf("limit %d", l)
		}
	}
	if g.Limit() != 5 {
		t.Fatalf("limit %d, want the min", g.Limit())
	}
}

// TestGradientConverges drives a Gradient against a server of capacity C
// whose latency rises with load beyond C: the limit settles at about
// tolerance × C, the server stays fully used, latency near tolerance ×
// the service time, and the limit does not creep.
func TestGradientConverges(t *testing.T) {
	for _, c := range []struct {
		name      string
		workers   int
		tolerance float64
		jitter    float64
	}{
		{"C=50", 50, 1.5, 0},
		{"C=50 jitter", 50, 1.5, 0.5},
		{"C=50 tolerance 1.1", 50, 1.1, 0.5},
		{"C=8", 8, 1.5, 0.5},
		{"C=200", 200, 1.5, 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			const service = 10 * time.Millisecond
			g := mustGradient(t, GradientConfig{Min: 1, Max: 10000, WindowSamples: 10, WindowTime: -1, Tolerance: c.tolerance})
			s := newServer(c.workers, service, c.jitter, 1)
			capacity := float64(c.workers) / service.Seconds() // requests per second
			warm := simulate(g, s, t0, 3*time.Second)
			if warm.minLimit < 1 || warm.maxLimit > 10000 {
				t.Fatalf("limit left its bounds: %+v", warm)
			}
			var means []float64
			start := t0.Add(3 * time.Second)
			for i := range 3 {
				r := simulate(g, s, start, 2*time.Second)
				start = start.Add(2 * time.Second)
				thr := float64(r.served) / 2
				C := float64(c.workers)
				t.Logf("period %d: throughput %.0f/s of %.0f, limit %.1f [%d, %d], latency %v", i, thr, capacity, r.meanLimit, r.minLimit, r.maxLimit, r.meanLat)
				if thr < 0.97*capacity {
					t.Errorf("period %d: throughput %.0f/s, capacity %.0f/s", i, thr, capacity)
				}
				if r.meanLimit < C || r.meanLimit > c.tolerance*C+2*math.Sqrt(c.tolerance*C)+1 {
					t.Errorf("period %d: mean limit %.1f, want about %.1f×%d", i, r.meanLimit, c.tolerance, c.workers)
				}
				if lat := r.meanLat.Seconds() / service.Seconds(); lat > c.tolerance*1.15 {
					t.Errorf("period %d: mean latency %.2f× the service time", i, lat)
				}
				means = append(means, r.meanLimit)
			}
			if d := math.Abs(means[2]-means[0]) / means[0]; d > 0.03 {
				t.Errorf("the limit moved by %.1f%% between the first and last periods: %v", 100*d, means)
			}
		})
	}
}

// TestGradientFollowsCapacity halves the server's workers, then restores
// them: the limit follows both ways.
func TestGradientFollowsCapacity(t *testing.T) {
	g := mustGradient(t, GradientConfig{Min: 1, Max: 1000, WindowSamples: 10, WindowTime: -1})
	s := newServer(60, 10*time.Millisecond, 0.5, 2)
	start := t0
	step := func(want float64) {
		t.Helper()
		simulate(g, s, start, 2*time.Second) // adapt
		r := simulate(g, s, start.Add(2*time.Second), 3*time.Second)
		start = start.Add(5 * time.Second)
		thr := float64(r.served) / 3 / 100 // per worker-second: 100 at full use
		t.Logf("%d workers: limit %.1f, latency %v, %.0f%% used", s.workers, r.meanLimit, r.meanLat, thr/float64(s.workers)*100)
		if r.meanLimit < want || r.meanLimit > 1.5*want+2*math.Sqrt(1.5*want)+1 {
			t.Errorf("%d workers: mean limit %.1f", s.workers, r.meanLimit)
		}
		if thr < 0.97*float64(s.workers) {
			t.Errorf("%d workers: throughput %.1f", s.workers, thr)
		}
	}
	step(60)
	s.workers = 30
	step(30)
	s.workers = 60
	step(60)
}

// TestGradientDrops runs against a server that refuses requests beyond a
// short queue: the drops keep the limit near capacity plus the queue.
func TestGradientDrops(t *testing.T) {
	g := mustGradient(t, GradientConfig{Min: 1, Max: 1000, WindowSamples: 10, WindowTime: -1})
	s := newServer(50, 10*time.Millisecond, 0.5, 3)
	s.maxQueue = 10
	simulate(g, s, t0, 3*time.Second)
	r := simulate(g, s, t0.Add(3*time.Second), 5*time.Second)
	t.Logf("limit %.1f [%d, %d], served %d, dropped %d", r.meanLimit, r.minLimit, r.maxLimit, r.served, r.dropped)
	if r.meanLimit < 50 || r.meanLimit > 75 || r.maxLimit > 90 {
		t.Errorf("limit %.1f [%d, %d]", r.meanLimit, r.minLimit, r.maxLimit)
	}
	if thr := float64(r.served) / 5; thr < 0.97*5000 {
		t.Errorf("throughput %.0f/s", thr)
	}
}

// TestGradientSlowerBackend makes the service time grow beyond the
// tolerance: the limit falls to min, learns the new latency there and
// grows back to keep the server fully used.
func TestGradientSlowerBackend(t *testing.T) {
	g := mustGradient(t, GradientConfig{Min: 2, Max: 1000, WindowSamples: 10, WindowTime: -1})
	s := newServer(50, 10*time.Millisecond, 0.5, 4)
	simulate(g, s, t0, 3*time.Second)
	s.service = 25 * time.Millisecond
	r := simulate(g, s, t0.Add(3*time.Second), 5*time.Second)
	if r.minLimit != 2 {
		t.Errorf("the limit fell to %d, not to min", r.minLimit)
	}
	r = simulate(g, s, t0.Add(8*time.Second), 5*time.Second)
	thr := float64(r.served) / 5
	t.Logf("after: limit %.1f [%d, %d], throughput %.0f/s of 2000, long %v", r.meanLimit, r.minLimit, r.maxLimit, thr, g.Stats().LongRTT)
	if thr < 0.97*2000 || r.meanLimit < 50 || r.meanLimit > 100 {
		t.Errorf("did not recover: limit %.1f, throughput %.0f/s", r.meanLimit, thr)
	}
}

func TestGradientAcquireWaits(t *testing.T) {
	checkGoroutines(t)
	clk := admittest.NewManualClock(t0)
	g := mustGradient(t, GradientConfig{Options: admit.Options{Clock: clk}, Min: 2, Max: 4, WindowSamples: 1000, WindowTime: -1})
	ctx := context.Background()
	a, err := g.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := g.Acquire(ctx)
	type result struct {
		tok Token
		err error
	}
	results := make(chan result, 3)
	waiting := func(n int) {
		t.Helper()
		for g.Stats().Waiting != n {
			time.Sleep(100 * time.Microsecond)
		}
	}
	go func() { tok, err := g.AcquireN(ctx, 2); results <- result{tok, err} }()
	waiting(1)
	go func() { tok, err := g.Acquire(ctx); results <- result{tok, err} }()
	waiting(2)
	// TryAcquire does not jump the queue.
	if _, ok := g.TryAcquire(); ok {
		t.Fatal("TryAcquire jumped the queue")
	}
	clk.Advance(5 * time.Millisecond)
	a.Release() // 1 free: the head needs 2, nobody is served (FIFO)
	if g.Stats().Waiting != 2 {
		t.Fatal("the queue was served out of order")
	}
	b.Release() // 2 free: the head is served; the next needs 1 more
	r := <-results
	if r.err != nil || r.tok.g == nil {
		t.Fatalf("head: %+v", r)
	}
	if g.Stats().InFlight != 2 || g.Stats().Waiting != 1 {
		t.Fatalf("stats %+v", g.Stats())
	}
	r.tok.Done(Ignored)
	r = <-results
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.tok.Release()

	// Cancellation leaves the queue, and serves those behind.
	c1, _ := g.Acquire(ctx)
	c2, _ := g.Acquire(ctx)
	cctx, cancel := context.WithCancel(ctx)
	go func() { tok, err := g.AcquireN(cctx, 2); results <- result{tok, err} }()
	waiting(1)
	go func() { tok, err := g.Acquire(ctx); results <- result{tok, err} }()
	waiting(2)
	cancel()
	if r := <-results; !errors.Is(r.err, context.Canceled) || r.tok.g != nil {
		t.Fatalf("cancelled: %+v", r)
	}
	c1.Release()
	if r := <-results; r.err != nil {
		t.Fatal(r.err)
	} else {
		r.tok.Release()
	}
	c2.Release()
	if st := g.Stats(); st.InFlight != 0 || st.Waiting != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Four waited: two served 5ms after they came, one cancelled and one
	// served at once, by the manual clock.
	if st := g.Stats(); st.Waits != 4 || st.Waited != 10*time.Millisecond || st.Min != 2 || st.Max != 4 {
		t.Fatalf("stats %+v, want 4 waits of 10ms in all, bounds 2 and 4", st)
	}
}

func TestGradientAcquireErrors(t *testing.T) {
	checkGoroutines(t)
	g := mustGradient(t, GradientConfig{Min: 2, Max: 4, MaxWaiters: 1, WindowSamples: 1000, WindowTime: -1})
	ctx := context.Background()
	if _, err := g.AcquireN(ctx, -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	if _, err := g.AcquireN(ctx, 5); !errors.Is(err, admit.ErrExceedsBurst) {
		t.Fatal(err)
	}
	// Above the current limit with nothing in flight: no sample could
	// ever raise the limit, so it fails at once.
	if _, err := g.AcquireN(ctx, 3); !errors.Is(err, admit.ErrExceedsBurst) {
		t.Fatal(err)
	}
	if tok, err := g.AcquireN(ctx, 0); err != nil || tok.g != nil {
		t.Fatal(tok, err)
	}
	a, _ := g.Acquire(ctx)
	b, _ := g.Acquire(ctx)
	errc := make(chan error, 1)
	dctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	go func() { _, err := g.AcquireN(dctx, 3); errc <- err }() // waits: 2 in flight
	for g.Stats().Waiting != 1 {
		time.Sleep(100 * time.Microsecond)
	}
	if _, err := g.Acquire(ctx); !errors.Is(err, admit.ErrQueueFull) || !strings.Contains(err.Error(), "adaptive: queue is full (1 waiting)") {
		t.Fatalf("queue full: %v", err)
	}
	a.Release()
	b.Release() // nothing in flight, the head needs 3 of 2: it fails
	if err := <-errc; !errors.Is(err, admit.ErrExceedsBurst) {
		t.Fatalf("head: %v", err)
	}
	g0 := mustGradient(t, GradientConfig{Min: 1, Max: 1, MaxWaiters: -1})
	h, _ := g0.Acquire(ctx)
	if _, err := g0.Acquire(ctx); !errors.Is(err, admit.ErrQueueFull) || !strings.Contains(err.Error(), "adaptive: queue is full") {
		t.Fatal(err)
	}
	h.Release()
}

// TestGradientConcurrent hammers a Gradient from many goroutines: in
// flight never exceeds the limit, and everything is given back.
func TestGradientConcurrent(t *testing.T) {
	checkGoroutines(t)
	g := mustGradient(t, GradientConfig{Min: 4, Max: 64, WindowSamples: 5, WindowTime: -1})
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		bad int64
	)
	ctx := context.Background()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				var tok Token
				var err error
				if i%2 == 0 {
					tok, err = g.Acquire(ctx)
				} else {
					var ok bool
					if tok, ok = g.TryAcquire(); !ok {
						continue
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
				if st := g.Stats(); st.InFlight > 64 {
					mu.Lock()
					bad = st.InFlight
					mu.Unlock()
				}
				switch i % 3 {
				case 0:
					tok.Release()
				case 1:
					tok.DoneRTT(Succeeded, time.Duration(i)*time.Microsecond)
				default:
					tok.Done(Dropped)
				}
			}
		}()
	}
	wg.Wait()
	if bad != 0 {
		t.Fatalf("%d in flight", bad)
	}
	if st := g.Stats(); st.InFlight != 0 || st.Waiting != 0 || st.Limit < 4 || st.Limit > 64 {
		t.Fatalf("stats %+v", st)
	}
}
