package prefetch_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/prefetch"
)

var prefetched = []admit.Algorithm{admit.AlgGCRA, admit.AlgTokenBucket, admit.AlgLeakyBucket, admit.AlgFixedWindow, admit.AlgSlidingWindow, admit.AlgSlidingWindowApprox}

// fleet is several instances prefetching from one shared store.
type fleet struct {
	store *keyed.Limiter
	lims  []*prefetch.Limiter
}

func newFleet(t *testing.T, alg admit.Algorithm, l admit.Limit, n int, cfg prefetch.Config) *fleet {
	t.Helper()
	store, err := keyed.New(keyed.Config{Algorithm: alg, Limit: l})
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{store: store}
	for range n {
		c := cfg
		c.Store, c.Instances = store, n
		lim, err := prefetch.New(c)
		if err != nil {
			t.Fatal(err)
		}
		f.lims = append(f.lims, lim)
	}
	return f
}

func (f *fleet) close(t *testing.T) {
	t.Helper()
	for _, lim := range f.lims {
		if err := lim.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// checkWindows checks that no epoch-aligned window of a fixed-window limit
// holds more than the burst (the exact bound; CheckBound's is looser).
func checkWindows(events []admittest.Event, l admit.Limit) error {
	w := time.Duration(l.Burst) * l.Period / time.Duration(l.Rate)
	count := map[int64]int64{}
	for _, e := range events {
		k := e.At.UnixNano() / int64(w)
		if count[k] += e.N; count[k] > l.Burst {
			return errors.New("a window holds " + time.Duration(count[k]).String() + " events")
		}
	}
	return nil
}

// request is one request of a generated run: which instance, when, how
// many, and whether it is refunded once admitted.
type request struct {
	inst   int
	at     time.Time
	n      int64
	refund bool
}

// traffic is a hot key at ten times a limit of 100/s: 4,000 requests at
// 1,000/s on average over three instances, with a pause of 20-220ms once
// in a hundred requests, a tenth of them (with jitter)
// at instants up to 3ms earlier than the latest, one in twenty refunded.
func traffic(seed uint64, jitter bool) []request {
	rng := rand.New(rand.NewPCG(7, seed))
	reqs := make([]request, 4000)
	clock := admittest.Epoch
	for i := range reqs {
		clock = clock.Add(time.Duration(rng.IntN(2_000_000)))
		if rng.IntN(100) == 0 {
			// A pause, so that blocks held across it expire (and a slot
			// spent after its time would show as a burst above the bound).
			clock = clock.Add(time.Duration(20_000_000 + rng.IntN(200_000_000)))
		}
		at := clock
		if jitter && rng.IntN(10) == 0 {
			at = at.Add(-time.Duration(rng.IntN(3_000_000)))
		}
		reqs[i] = request{inst: rng.IntN(3), at: at, n: int64(1 + rng.IntN(2)), refund: rng.IntN(20) == 0}
	}
	return reqs
}

// run plays reqs through allow and refund and returns the events admitted
// (and not refunded).
func run(t *testing.T, reqs []request, allow func(request) (admit.Decision, error), refund func(request) error) []admittest.Event {
	t.Helper()
	var admitted []admittest.Event
	for _, r := range reqs {
		d, err := allow(r)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			continue
		}
		if r.refund {
			if err := refund(r); err != nil {
				t.Fatal(err)
			}
			continue
		}
		admitted = append(admitted, admittest.Event{At: r.at, N: r.n})
	}
	return admitted
}

func sum(events []admittest.Event) (n int64) {
	for _, e := range events {
		n += e.N
	}
	return n
}

// TestFleetKeepsTheBound: three instances on one hot key at ten times its
// limit, with refunds, at instants that go forwards (and then also jitter
// backwards): whatever the order in which the background fetches land, the
// events the fleet admitted keep the algorithm's bound (with forward
// instants, a fixed window's count too), and it admitted at least what one
// strict limiter admits of the same requests minus the capacity the
// instances kept from one another (and a percent).
func TestFleetKeepsTheBound(t *testing.T) {
	l := admit.Limit{Rate: 100, Period: time.Second, Burst: 20}
	ctx := context.Background()
	for _, alg := range prefetched {
		for _, jitter := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/jitter=%v", alg, jitter), func(t *testing.T) {
				t.Parallel()
				reqs := traffic(uint64(alg), jitter)
				f := newFleet(t, alg, l, 3, prefetch.Config{Interval: 100 * time.Millisecond})
				admitted := run(t, reqs, func(r request) (admit.Decision, error) {
					return f.lims[r.inst].Allow(ctx, admit.Request{Key: "hot", N: r.n, At: r.at})
				}, func(r request) error {
					return f.lims[r.inst].Refund(ctx, admit.Request{Key: "hot", N: r.n, At: r.at})
				})
				f.close(t)
				if err := admittest.CheckBound(alg, admitted, l); err != nil {
					t.Fatalf("the fleet broke the bound: %v", err)
				}
				if alg == admit.AlgFixedWindow && !jitter {
					if err := checkWindows(admitted, l); err != nil {
						t.Fatalf("the fleet broke the fixed window: %v", err)
					}
				}
				strictLim, err := keyed.New(keyed.Config{Algorithm: alg, Limit: l})
				if err != nil {
					t.Fatal(err)
				}
				strict := sum(run(t, reqs, func(r request) (admit.Decision, error) {
					return strictLim.Allow(ctx, admit.Request{Key: "hot", N: r.n, At: r.at})
				}, func(r request) error {
					return strictLim.Refund(ctx, admit.Request{Key: "hot", N: r.n, At: r.at})
				}))
				var kept int64
				for _, lim := range f.lims {
					s := lim.Stats()
					kept += s.Unspent + s.Held + s.Dropped
					if s.Local == 0 || s.Blocks == 0 {
						t.Errorf("an instance admitted nothing from blocks: %+v", s)
					}
				}
				// The instances also deny from memory until the instant the
				// store named, which a refund elsewhere can bring forward:
				// a percent of slack for that.
				total := sum(admitted)
				if total < strict-kept-strict/100 {
					t.Errorf("the fleet admitted %d; one strict limiter %d, and the instances kept %d from one another", total, strict, kept)
				}
				t.Logf("admitted %d, strict %d, kept %d", total, strict, kept)
			})
		}
	}
}

func TestNewBadInput(t *testing.T) {
	store := func(alg admit.Algorithm) prefetch.Store {
		s, err := keyed.New(keyed.Config{Algorithm: alg, Limit: admit.Limit{Rate: 10, Period: time.Second, Burst: 10}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tt := range []struct {
		name string
		cfg  prefetch.Config
		want string
	}{
		{"no store", prefetch.Config{}, "Store: nil"},
		{"sliding log", prefetch.Config{Store: store(admit.AlgSlidingLog)}, "sliding log"},
		{"block above the burst", prefetch.Config{Store: store(admit.AlgGCRA), MaxBlock: 11}, "MaxBlock 11"},
		{"negative block", prefetch.Config{Store: store(admit.AlgGCRA), MaxBlock: -1}, "MaxBlock -1"},
		{"negative instances", prefetch.Config{Store: store(admit.AlgGCRA), Instances: -2}, "Instances -2"},
		{"negative interval", prefetch.Config{Store: store(admit.AlgGCRA), Interval: -time.Second}, "Interval"},
		{"negative keys", prefetch.Config{Store: store(admit.AlgGCRA), MaxKeys: -1}, "MaxKeys"},
		{"negative timeout", prefetch.Config{Store: store(admit.AlgGCRA), Timeout: -1}, "Timeout"},
	} {
		if lim, err := prefetch.New(tt.cfg); lim != nil || !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, %v; want an error wrapping admit.ErrInvalidConfig that says %q", tt.name, lim, err, tt.want)
		}
	}
}

// TestConcurrentOnTheSystemClock: goroutines of two instances on one hot
// key and the system clock, with background fetches racing the requests:
// the fleet admits no more than the bound over the run (measured from
// before the first request to after the last), and -race finds no race.
func TestConcurrentOnTheSystemClock(t *testing.T) {
	l := admit.Limit{Rate: 1000, Period: time.Second, Burst: 50}
	f := newFleet(t, admit.AlgGCRA, l, 2, prefetch.Config{Interval: 20 * time.Millisecond})
	ctx := context.Background()
	var admitted atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim := f.lims[g%2]
			for time.Since(start) < 150*time.Millisecond {
				if d, err := lim.Allow(ctx, admit.Request{Key: "hot", N: 1}); err != nil {
					t.Error(err)
					return
				} else if d.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	f.close(t)
	bound := l.Burst + int64(elapsed/(l.Period/time.Duration(l.Rate)))
	if n := admitted.Load(); n > bound || n == 0 {
		t.Errorf("admitted %d in %v; the bound is %d", n, elapsed, bound)
	}
	for _, lim := range f.lims {
		if s := lim.Stats(); s.Local == 0 {
			t.Errorf("nothing admitted from blocks: %+v", s)
		}
	}
}

// TestEarlyDenials: a hot key at ten times its limit finds the store
// short; the instance then waits for a block's worth to come back before
// asking again, and of the denials it answers meanwhile, those the store
// would have admitted (one per event that came back) count as early.
func TestEarlyDenials(t *testing.T) {
	l := admit.Limit{Rate: 100, Period: time.Second, Burst: 20}
	f := newFleet(t, admit.AlgGCRA, l, 1, prefetch.Config{Interval: 100 * time.Millisecond})
	lim := f.lims[0]
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	var admitted int64
	for i := range 1000 {
		d, err := lim.Allow(ctx, admit.Request{Key: "hot", N: 1, At: t0.Add(time.Duration(i) * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	f.close(t)
	s := lim.Stats()
	// Each early denial is an event that came back to the store while the
	// instance waited: no more of them than the store can hand out in the
	// second (the bound), far fewer than the denials.
	bound := l.Burst + 100
	if s.Early == 0 || s.Early > s.Cached || s.Early > bound {
		t.Errorf("early denials %d of %d cached: want some, and no more than the cached ones or the bound %d (%+v)", s.Early, s.Cached, bound, s)
	}
	if admitted > bound {
		t.Errorf("admitted %d in a second; the bound is %d", admitted, bound)
	}
	t.Logf("admitted %d; %+v", admitted, s)
}

// TestWindowBlocksLastTheirWindow: a key asked for 5 times a second is
// cold under GCRA (its blocks would last 50ms) but warm under a limit per
// second in windows, whose blocks last until the window ends: it then
// takes blocks, and most of its requests are decided in memory.
func TestWindowBlocksLastTheirWindow(t *testing.T) {
	l := admit.Limit{Rate: 1000, Period: time.Second, Burst: 1000}
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	for _, alg := range []admit.Algorithm{admit.AlgGCRA, admit.AlgFixedWindow, admit.AlgSlidingWindow} {
		f := newFleet(t, alg, l, 1, prefetch.Config{})
		lim := f.lims[0]
		for i := range 50 { // 10 s at 5 a second
			d, err := lim.Allow(ctx, admit.Request{Key: "lukewarm", N: 1, At: t0.Add(time.Duration(i) * 200 * time.Millisecond)})
			if err != nil || !d.Allowed {
				t.Fatalf("%v: request %d: %+v, %v", alg, i, d, err)
			}
		}
		f.close(t)
		s := lim.Stats()
		if alg == admit.AlgGCRA {
			if s.Blocks != 0 || s.Strict != 50 {
				t.Errorf("%v: a key asked for 5 times a second took blocks: %+v", alg, s)
			}
			continue
		}
		if s.Blocks == 0 || s.Local < 25 {
			t.Errorf("%v: a key asked for 5 times a second under a limit per second: %+v; want most of it from blocks", alg, s)
		}
		t.Logf("%v: %+v", alg, s)
	}
}

// decisions counts the decisions an Observer is told of.
type decisions struct {
	admit.NopObserver
	n, allowed atomic.Int64
}

func (d *decisions) Decided(ev admit.DecisionEvent) {
	d.n.Add(1)
	if ev.Decision.Allowed {
		d.allowed.Add(1)
	}
}

// TestObserverSeesEveryDecision: the Observer is told of each decision
// Allow returns, once, whether a block, the memory of a denial or the
// store made it.
func TestObserverSeesEveryDecision(t *testing.T) {
	l := admit.Limit{Rate: 100, Period: time.Second, Burst: 20}
	obs := &decisions{}
	f := newFleet(t, admit.AlgGCRA, l, 1, prefetch.Config{Options: admit.Options{Observer: obs, Name: "hot"}})
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	var allowed int64
	for i := range 500 {
		d, err := f.lims[0].Allow(ctx, admit.Request{Key: "hot", N: 1, At: t0.Add(time.Duration(i) * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		}
	}
	f.close(t)
	if s := f.lims[0].Stats(); s.Local == 0 || s.Cached == 0 {
		t.Fatalf("the run decided nothing from blocks or from memory: %+v", s)
	}
	if obs.n.Load() != 500 || obs.allowed.Load() != allowed {
		t.Errorf("the Observer saw %d decisions, %d allowed; Allow made 500, %d allowed", obs.n.Load(), obs.allowed.Load(), allowed)
	}
}

// TestSetInstances: the count of instances sizes the blocks taken after
// it (half the burst over the count), unless MaxBlock gave their size.
func TestSetInstances(t *testing.T) {
	l := admit.Limit{Rate: 1000, Period: time.Second, Burst: 100}
	f := newFleet(t, admit.AlgGCRA, l, 1, prefetch.Config{})
	lim := f.lims[0]
	if s := lim.Stats(); s.Instances != 1 || s.MaxBlock != 50 {
		t.Fatalf("one instance: %+v; want blocks of at most 50", s)
	}
	lim.SetInstances(5)
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 2000 { // 20,000 a second for 100ms
		if _, err := lim.Allow(ctx, admit.Request{Key: "hot", N: 1, At: t0.Add(time.Duration(i) * 50 * time.Microsecond)}); err != nil {
			t.Fatal(err)
		}
	}
	f.close(t)
	s := lim.Stats()
	if s.Instances != 5 || s.MaxBlock != 10 || s.Blocks == 0 || s.Taken > 10*s.Blocks {
		t.Errorf("five instances: %+v; want blocks of at most 10", s)
	}
	lim.SetInstances(-3)
	if s := lim.Stats(); s.Instances != 1 || s.MaxBlock != 50 {
		t.Errorf("SetInstances(-3): %+v; want one instance", s)
	}

	g := newFleet(t, admit.AlgGCRA, l, 1, prefetch.Config{MaxBlock: 30})
	g.lims[0].SetInstances(10)
	if s := g.lims[0].Stats(); s.Instances != 10 || s.MaxBlock != 30 {
		t.Errorf("MaxBlock 30, ten instances: %+v; want blocks of 30 still", s)
	}
	g.close(t)
}

// TestCached: a key with a block is decided from it without the store,
// as Allow would (the block spent, the Observer told); a key this
// instance knows nothing of, or a per-call limit, is left to the store.
func TestCached(t *testing.T) {
	l := admit.Limit{Rate: 1000, Period: time.Second, Burst: 100}
	obs := &decisions{}
	f := newFleet(t, admit.AlgGCRA, l, 1, prefetch.Config{Options: admit.Options{Observer: obs}})
	lim := f.lims[0]
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 100 * time.Microsecond) }
	if _, ok := lim.Cached(admit.Request{Key: "hot", N: 1, At: at(0)}); ok {
		t.Fatal("Cached answered for a key never seen")
	}
	for i := range 50 { // warm: a block is taken
		if _, err := lim.Allow(ctx, admit.Request{Key: "hot", N: 1, At: at(i)}); err != nil {
			t.Fatal(err)
		}
	}
	before := lim.Stats()
	hits := 0
	for i := 50; i < 60; i++ {
		if d, ok := lim.Cached(admit.Request{Key: "hot", N: 1, At: at(i)}); ok {
			if !d.Allowed {
				t.Fatalf("Cached: %+v; want an admission from the block", d)
			}
			hits++
		}
	}
	s := lim.Stats()
	if hits == 0 || s.Local-before.Local != int64(hits) || s.Strict != before.Strict {
		t.Errorf("%d answers from Cached; local %d -> %d, strict %d -> %d: want them all from blocks", hits, before.Local, s.Local, before.Strict, s.Strict)
	}
	if obs.n.Load() != 50+int64(hits) {
		t.Errorf("the Observer saw %d decisions; want %d", obs.n.Load(), 50+hits)
	}
	if _, ok := lim.Cached(admit.Request{Key: "hot", N: 1, At: at(60), Limit: admit.PerSecond(5)}); ok {
		t.Error("Cached answered a request with a per-call limit")
	}
	f.close(t)
}
