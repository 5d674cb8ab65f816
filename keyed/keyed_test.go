package keyed_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
)

var ctx = context.Background()

func mustNew(t testing.TB, cfg keyed.Config) *keyed.Limiter {
	t.Helper()
	lim, err := keyed.New(cfg)
	if err != nil {
		t.Fatalf("keyed.New: %v", err)
	}
	return lim
}

func allow(t testing.TB, lim *keyed.Limiter, at time.Time, key string, n int64) admit.Decision {
	t.Helper()
	d, err := lim.Allow(ctx, admit.Request{Key: key, N: n, At: at})
	if err != nil {
		t.Fatalf("AllowAt(%q, %d): %v", key, n, err)
	}
	return d
}

// counter is an Observer counting what it is told.
type counter struct {
	admit.NopObserver
	decided, allowed, idle, pressure atomic.Int64
	tracked, reports                 atomic.Int64
}

func (c *counter) Decided(e admit.DecisionEvent) {
	c.decided.Add(1)
	if e.Decision.Allowed {
		c.allowed.Add(1)
	}
}

func (c *counter) Evicted(e admit.EvictionEvent) {
	if e.Reason == admit.EvictIdle {
		c.idle.Add(int64(e.Keys))
	} else {
		c.pressure.Add(int64(e.Keys))
	}
}

func (c *counter) Tracked(_ string, n int) {
	c.tracked.Store(int64(n))
	c.reports.Add(1)
}

// TestTrackedGrows: the number of keys is reported from New (0) and as it
// grows, long before any eviction, lagging by an eighth and a key per
// shard at most, in a few reports rather than one per key.
func TestTrackedGrows(t *testing.T) {
	for _, shards := range []int{1, 8} {
		c := &counter{}
		lim := mustNew(t, keyed.Config{Options: admit.Options{Observer: c}, Limit: admit.PerHour(10), Shards: shards})
		if c.reports.Load() != 1 || c.tracked.Load() != 0 {
			t.Fatalf("%d shards: after New, %d reports, tracked %d; want one, of 0", shards, c.reports.Load(), c.tracked.Load())
		}
		const keys = 5000
		for i := 1; i <= keys; i++ {
			allow(t, lim, admittest.Epoch, fmt.Sprint("k", i), 1)
			if got := int(c.tracked.Load()); got > i || got < i-i/8-shards {
				t.Fatalf("%d shards: %d keys, tracked %d", shards, i, got)
			}
		}
		if n := c.reports.Load(); n > 100*int64(shards) {
			t.Errorf("%d shards: %d reports for %d keys", shards, n, keys)
		}
		if c.idle.Load()+c.pressure.Load() != 0 || lim.Len() != keys {
			t.Fatalf("%d shards: %d keys held, evictions idle %d pressure %d", shards, lim.Len(), c.idle.Load(), c.pressure.Load())
		}
	}
}

func TestKeysAreIndependent(t *testing.T) {
	keys := []string{"", "a", "A", "{a}", "a\x00", "\x00", "\xff\xfe", strings.Repeat("k", 4096), "user:1", "user:1 "}
	for _, alg := range admit.Algorithms() {
		lim := mustNew(t, keyed.Config{Options: admit.Options{Name: "per-user"}, Algorithm: alg, Limit: admit.PerMinute(2)})
		for _, k := range keys {
			for i := range 3 {
				d := allow(t, lim, admittest.Epoch, k, 1)
				if d.Allowed != (i < 2) || d.Rule != "per-user" {
					t.Fatalf("%v key %q request %d: %+v", alg, k, i, d)
				}
			}
		}
		if lim.Len() != len(keys) {
			t.Fatalf("%v: Len = %d, want %d", alg, lim.Len(), len(keys))
		}
	}
}

func TestTiers(t *testing.T) {
	free, pro := admit.PerSecond(2), admit.PerSecond(10)
	lim := mustNew(t, keyed.Config{Limit: free})
	count := func(key string, l admit.Limit) (n int) {
		for range 20 {
			d, err := lim.Allow(ctx, admit.Request{Key: key, N: 1, Limit: l, At: admittest.Epoch})
			if err != nil {
				t.Fatal(err)
			}
			if d.Limit != l {
				t.Fatalf("Decision.Limit = %v, want %v", d.Limit, l)
			}
			if d.Allowed {
				n++
			}
		}
		return n
	}
	if n := count("alice", free); n != 2 {
		t.Fatalf("free tier admitted %d", n)
	}
	if n := count("bob", pro); n != 10 {
		t.Fatalf("pro tier admitted %d", n)
	}
	// A bad per-call limit is an error, and consumes nothing.
	if _, err := lim.Allow(ctx, admit.Request{Key: "carol", N: 1, Limit: admit.Limit{Rate: -1}, At: admittest.Epoch}); !errors.Is(err, admit.ErrInvalidLimit) {
		t.Fatalf("negative rate: %v", err)
	}
	if lim.Len() != 2 {
		t.Fatalf("Len = %d", lim.Len())
	}
}

func TestPeekStoresNothing(t *testing.T) {
	c := &counter{}
	lim := mustNew(t, keyed.Config{Options: admit.Options{Observer: c}, Algorithm: admit.AlgSlidingWindow, Limit: admit.PerSecond(5)})
	for i := range 1000 {
		d := allow(t, lim, admittest.Epoch, fmt.Sprint("k", i), 0)
		if !d.Allowed || d.Remaining != 5 || d.ResetAfter != 0 {
			t.Fatalf("peek: %+v", d)
		}
		// A request that can never be admitted changes nothing either.
		if d := allow(t, lim, admittest.Epoch, fmt.Sprint("k", i), 6); d.Allowed || d.RetryAfter != admit.InfDuration {
			t.Fatalf("n > burst: %+v", d)
		}
	}
	if lim.Len() != 0 {
		t.Fatalf("peeks and refusals stored %d keys", lim.Len())
	}
	if c.decided.Load() != 2000 {
		t.Fatalf("observer saw %d decisions", c.decided.Load())
	}
}

func TestIdleKeysAreForgotten(t *testing.T) {
	for _, alg := range admit.Algorithms() {
		c := &counter{}
		lim := mustNew(t, keyed.Config{Options: admit.Options{Observer: c}, Algorithm: alg, Limit: admit.PerSecond(10), Shards: 4, ForgetAfter: time.Second})
		now := admittest.Epoch
		// Each round 1000 new keys, one event each; a key is full again
		// 1s later (window algorithms: 2s), and forgettable 1s after that.
		for round := range 20 {
			for i := range 1000 {
				allow(t, lim, now, fmt.Sprint(round, "/", i), 1)
			}
			now = now.Add(time.Second)
		}
		if n := lim.Len(); n > 6000 {
			t.Fatalf("%v: holds %d keys after 20 rounds of 1000", alg, n)
		}
		if c.idle.Load() == 0 || c.pressure.Load() != 0 || c.tracked.Load() == 0 {
			t.Fatalf("%v: evictions idle %d pressure %d, tracked %d", alg, c.idle.Load(), c.pressure.Load(), c.tracked.Load())
		}
	}
}

// TestCardinalityAttack floods a capped limiter with unique keys while a
// hot key, denied, keeps coming: the limiter stays within its cap, and the
// hot key, in use, is never evicted, so it stays denied.
func TestCardinalityAttack(t *testing.T) {
	const cap = 4_000
	c := &counter{}
	lim := mustNew(t, keyed.Config{Options: admit.Options{Observer: c}, Limit: admit.PerHour(1), MaxKeys: cap, Shards: 8})
	now := admittest.Epoch
	allow(t, lim, now, "hot", 1)
	for i := range 100_000 {
		allow(t, lim, now, fmt.Sprint("flood-", i), 1)
		if i%50 == 0 {
			if d := allow(t, lim, now, "hot", 1); d.Allowed {
				t.Fatalf("the hot key was admitted again after %d flood keys", i)
			}
		}
		if i%5_000 == 0 && lim.Len() > cap {
			t.Fatalf("holds %d keys, cap %d", lim.Len(), cap)
		}
	}
	if c.pressure.Load() < 95_000 {
		t.Fatalf("only %d pressure evictions", c.pressure.Load())
	}
}

func TestReset(t *testing.T) {
	lim := mustNew(t, keyed.Config{Algorithm: admit.AlgFixedWindow, Limit: admit.PerMinute(1)})
	allow(t, lim, admittest.Epoch, "a", 1)
	if d := allow(t, lim, admittest.Epoch, "a", 1); d.Allowed {
		t.Fatal("second request admitted")
	}
	if lim.Len() != 1 {
		t.Fatalf("holds %d keys before Reset", lim.Len())
	}
	if err := lim.Reset(ctx, "a"); err != nil || lim.Len() != 0 {
		t.Fatalf("Reset did not forget the key: %v, %d keys", err, lim.Len())
	}
	if err := lim.Reset(ctx, "a"); err != nil || lim.Len() != 0 {
		t.Fatalf("Reset of a key not held: %v, %d keys", err, lim.Len())
	}
	if d := allow(t, lim, admittest.Epoch, "a", 1); !d.Allowed {
		t.Fatal("not admitted after Reset")
	}
}

func TestBatch(t *testing.T) {
	lim := mustNew(t, keyed.Config{Limit: admit.PerSecond(2)})
	pro := admit.PerSecond(5)
	t0 := admittest.Epoch
	reqs := []admit.Request{{Key: "a", N: 2, At: t0}, {Key: "a", N: 1, At: t0}, {Key: "b", N: 5, Limit: pro, At: t0}, {Key: "c", N: -1, At: t0}, {Key: "d", N: 1, At: t0}}
	ds, err := lim.AllowBatch(ctx, reqs, nil)
	if !errors.Is(err, admit.ErrInvalidCost) || !strings.Contains(err.Error(), "request 3") {
		t.Fatalf("err = %v", err)
	}
	want := []bool{true, false, true, false, true}
	for i, d := range ds {
		if d.Allowed != want[i] {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	if ds[2].Limit != pro {
		t.Fatalf("per-request limit not used: %+v", ds[2])
	}
	buf := make([]admit.Decision, 0, 8)
	if avg := testing.AllocsPerRun(100, func() { buf, _ = lim.AllowBatch(ctx, reqs[:3], buf[:0]) }); avg != 0 {
		t.Fatalf("AllowBatch allocates %v times", avg)
	}
}

func TestBadInput(t *testing.T) {
	lim := mustNew(t, keyed.Config{Limit: admit.PerSecond(2), MaxKeyLength: 8})
	if _, err := lim.Allow(ctx, admit.Request{Key: "a", N: -1, At: admittest.Epoch}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("n < 0: %v", err)
	}
	d, err := lim.Allow(ctx, admit.Request{Key: "123456789", N: 1, At: admittest.Epoch})
	if !errors.Is(err, admit.ErrKeyTooLong) || d.Allowed {
		t.Errorf("long key: %+v, %v", d, err)
	}
	if _, err := lim.Allow(ctx, admit.Request{Key: "12345678", N: 1, At: admittest.Epoch}); err != nil {
		t.Errorf("key of the maximum length: %v", err)
	}
	for name, c := range map[string]struct {
		cfg  keyed.Config
		want error
	}{
		"negative rate":       {keyed.Config{Limit: admit.Limit{Rate: -5, Period: time.Second}}, admit.ErrInvalidLimit},
		"no period":           {keyed.Config{Limit: admit.Limit{Rate: 5}}, admit.ErrInvalidLimit},
		"absurd period":       {keyed.Config{Limit: admit.Limit{Rate: 1, Period: 1 << 62}}, admit.ErrInvalidLimit},
		"window under 1ns":    {keyed.Config{Algorithm: admit.AlgFixedWindow, Limit: admit.Limit{Rate: 3, Period: 1, Burst: 1}}, admit.ErrInvalidLimit},
		"unknown alg":         {keyed.Config{Algorithm: admit.Algorithm(99), Limit: admit.PerSecond(1)}, admit.ErrInvalidConfig},
		"negative cap":        {keyed.Config{Limit: admit.PerSecond(1), MaxKeys: -1}, admit.ErrInvalidConfig},
		"negative key length": {keyed.Config{Limit: admit.PerSecond(1), MaxKeyLength: -1}, admit.ErrInvalidConfig},
		"huge key length":     {keyed.Config{Limit: admit.PerSecond(1), MaxKeyLength: 1 << 40}, admit.ErrInvalidConfig},
		"negative shards":     {keyed.Config{Limit: admit.PerSecond(1), Shards: -1}, admit.ErrInvalidConfig},
	} {
		lim, err := keyed.New(c.cfg)
		if err == nil || lim != nil || !errors.Is(err, c.want) {
			t.Errorf("%s: New = %v, %v", name, lim, err)
		}
	}
	if _, err := keyed.New(keyed.Config{Algorithm: admit.Algorithm(99), Limit: admit.PerSecond(1)}); err == nil || !strings.Contains(err.Error(), "keyed: unknown algorithm Algorithm(99)") {
		t.Errorf("unknown algorithm: %v does not name it", err)
	}
}

// TestConcurrentExact: many goroutines deciding on a few keys at the same
// instants admit exactly what one goroutine would.
func TestConcurrentExact(t *testing.T) {
	for _, alg := range admit.Algorithms() {
		lim := mustNew(t, keyed.Config{Algorithm: alg, Limit: admit.PerSecond(100), Shards: 2})
		var admitted [4]atomic.Int64
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := range 200 {
					k := (g + i) % 4
					if d := allow(t, lim, admittest.Epoch, fmt.Sprint("key", k), 1); d.Allowed {
						admitted[k].Add(1)
					}
				}
			})
		}
		wg.Wait()
		for k := range admitted {
			if n := admitted[k].Load(); n != 100 {
				t.Fatalf("%v key %d: admitted %d, want 100", alg, k, n)
			}
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	for _, alg := range admit.Algorithms() {
		lim := mustNew(t, keyed.Config{Algorithm: alg, Limit: admit.PerSecond(1e6)})
		now := time.Now()
		allow(t, lim, now, "existing", 1)
		if avg := testing.AllocsPerRun(1000, func() { lim.Allow(ctx, admit.Request{Key: "existing", N: 1, At: now}) }); avg != 0 {
			t.Errorf("%v: AllowAt on an existing key allocates %v times", alg, avg)
		}
		if avg := testing.AllocsPerRun(1000, func() { lim.Allow(ctx, admit.Request{Key: "existing", N: 1, Limit: admit.PerSecond(1e6), At: now}) }); avg != 0 {
			t.Errorf("%v: Allow(Limit, At) allocates %v times", alg, avg)
		}
		if alg == admit.AlgSlidingLog {
			continue // a new key's log is allocated to decide on it
		}
		// A key that is not stored: peeks and denials store nothing and
		// allocate nothing.
		if avg := testing.AllocsPerRun(1000, func() {
			lim.Allow(ctx, admit.Request{Key: "new", N: 0, At: now})
			lim.Allow(ctx, admit.Request{Key: "new", N: 2e6, At: now})
			lim.Allow(ctx, admit.Request{Key: "new", N: 1, Limit: admit.Limit{}, At: now})
		}); avg != 0 {
			t.Errorf("%v: peeks and denials of a new key allocate %v times", alg, avg)
		}
	}
}

// TestMemoryBounded: a flood of unique keys through a capped limiter keeps
// the heap bounded by the cap, not by the flood.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a lot")
	}
	const cap = 8_000
	lim := mustNew(t, keyed.Config{Limit: admit.PerHour(1), MaxKeys: cap})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for i := range cap {
		allow(t, lim, admittest.Epoch, fmt.Sprintf("%016d", i), 1)
	}
	full := heap()
	for i := range 10 * cap {
		allow(t, lim, admittest.Epoch, fmt.Sprintf("%016d", cap+i), 1)
	}
	after := heap()
	if after > full+cap*100 {
		t.Fatalf("heap grew from %d to %d bytes with %d keys held", full, after, lim.Len())
	}
	runtime.KeepAlive(lim)
}
