package concurrency_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/concurrency"
)

func mustNew(t testing.TB, cfg concurrency.Config) *concurrency.Limiter {
	t.Helper()
	l, err := concurrency.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return l
}

// try calls TryAcquire and fails the test on an error.
func try(t testing.TB, l *concurrency.Limiter, key string, n int64) (concurrency.Permit, admit.Decision) {
	t.Helper()
	p, d, err := l.TryAcquire(context.Background(), admit.Request{Key: key, N: n})
	if err != nil {
		t.Fatalf("TryAcquire(%q, %d): %v", key, n, err)
	}
	return p, d
}

func mustAllow(t testing.TB, l *concurrency.Limiter, key string, n int64) concurrency.Permit {
	t.Helper()
	p, d := try(t, l, key, n)
	if !d.Allowed {
		t.Fatalf("TryAcquire(%q, %d) denied: %+v", key, n, d)
	}
	return p
}

func mustDeny(t testing.TB, l *concurrency.Limiter, key string, n int64) admit.Decision {
	t.Helper()
	p, d := try(t, l, key, n)
	if d.Allowed {
		t.Fatalf("TryAcquire(%q, %d) allowed: %+v", key, n, d)
	}
	if p != (concurrency.Permit{}) {
		t.Fatalf("a denial returned a non-zero Permit")
	}
	return d
}

func TestWeightedTryAcquire(t *testing.T) {
	l := mustNew(t, concurrency.Config{Options: admit.Options{Name: "uploads"}, Max: 10})
	for _, key := range []string{"", "tenant-1"} {
		p3 := mustAllow(t, l, key, 3)
		p4 := mustAllow(t, l, key, 4)
		_, d := try(t, l, key, 3)
		want := admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 10, Burst: 10}, Remaining: 0, Rule: "uploads", Kind: admit.KindConcurrency}
		if d != want {
			t.Fatalf("key %q: the third request: %+v, want %+v", key, d, want)
		}
		d = mustDeny(t, l, key, 1)
		want.Allowed = false
		if d != want {
			t.Fatalf("key %q: full: %+v, want %+v", key, d, want)
		}
		if got := inFlightOf(l, key); got != 10 {
			t.Fatalf("key %q: InFlight = %d, want 10", key, got)
		}
		p4.Release()
		_, d = try(t, l, key, 0) // a peek
		if !d.Allowed || d.Remaining != 4 {
			t.Fatalf("key %q: peek after releasing 4: %+v", key, d)
		}
		mustDeny(t, l, key, 5)
		mustAllow(t, l, key, 4)
		p3.Release()
	}
	// Keys are independent.
	mustAllow(t, l, "tenant-2", 10)
}

func TestZeroRequestHoldsNothing(t *testing.T) {
	l := mustNew(t, concurrency.Config{Max: 1})
	mustAllow(t, l, "k", 1)
	p, d := try(t, l, "k", 0)
	if !d.Allowed || d.Remaining != 0 {
		t.Fatalf("n=0 when full: %+v, want allowed with 0 remaining", d)
	}
	if p.Release() || p.Held() {
		t.Fatal("the Permit of n=0 released or held something")
	}
	if got := inFlightOf(l, "k"); got != 1 {
		t.Fatalf("InFlight = %d, want 1", got)
	}
}

func TestDoubleReleaseIsHarmless(t *testing.T) {
	l := mustNew(t, concurrency.Config{Max: 2})
	a := mustAllow(t, l, "k", 1)
	b := mustAllow(t, l, "k", 1)
	cp := a
	if !a.Held() || !a.Release() {
		t.Fatal("the first Release failed")
	}
	if a.Release() || cp.Release() || a.Held() {
		t.Fatal("a second Release (or one of a copy) released again")
	}
	if got := inFlightOf(l, "k"); got != 1 {
		t.Fatalf("InFlight = %d after double release, want 1 (b holds one)", got)
	}
	c := mustAllow(t, l, "k", 1) // may reuse a's record
	if a.Release() {
		t.Fatal("a stale Permit released a newer grant")
	}
	if got := inFlightOf(l, "k"); got != 2 {
		t.Fatalf("InFlight = %d, want 2", got)
	}
	b.Release()
	c.Release()
	if (concurrency.Permit{}).Release() {
		t.Fatal("the zero Permit released something")
	}
	if st := l.Stats(); st != (concurrency.Stats{}) {
		t.Fatalf("Stats after releasing all: %+v", st)
	}
}

func TestIdleKeysAreForgotten(t *testing.T) {
	const keys = 20000 // enough for the shards to shrink their maps
	l := mustNew(t, concurrency.Config{Max: 3})
	if l.Max() != 3 {
		t.Fatalf("Max() = %d", l.Max())
	}
	for round := range 2 {
		var ps []concurrency.Permit
		for i := range keys {
			ps = append(ps, mustAllow(t, l, "key-"+strings.Repeat("x", i%7)+itoa(i), 1))
		}
		if st := l.Stats(); st.Keys != keys || st.InFlight != keys || st.Holders != keys {
			t.Fatalf("round %d: Stats with %d keys held: %+v", round, keys, st)
		}
		for _, p := range ps {
			p.Release()
		}
		if st := l.Stats(); st != (concurrency.Stats{}) {
			t.Fatalf("round %d: Stats after releasing all: %+v", round, st)
		}
	}
	// The global key is never counted as a key.
	big := mustNew(t, concurrency.Config{Max: 5000})
	var ps []concurrency.Permit
	for range 5000 {
		ps = append(ps, mustAllow(t, big, "", 1))
	}
	if st := big.Stats(); st.Keys != 0 || st.InFlight != 5000 || st.Holders != 5000 {
		t.Fatalf("Stats with the global key held: %+v", st)
	}
	for _, p := range ps {
		p.Release()
	}
	mustAllow(t, big, "", 5000)
	for _, p := range ps {
		if p.Release() || p.Held() {
			t.Fatal("a released Permit released again after the holders were dropped")
		}
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestMaxKeys(t *testing.T) {
	l := mustNew(t, concurrency.Config{Max: 1, MaxKeys: 2})
	a := mustAllow(t, l, "a", 1)
	mustAllow(t, l, "b", 1)
	_, d, err := l.TryAcquire(context.Background(), admit.Request{Key: "c", N: 1})
	if !errors.Is(err, admit.ErrTooManyKeys) {
		t.Fatalf("a third key: err = %v, want ErrTooManyKeys", err)
	}
	if d.Allowed || d.RetryAfter != 0 || d.Kind != admit.KindConcurrency {
		t.Fatalf("a third key: %+v", d)
	}
	mustDeny(t, l, "a", 1) // existing keys still decide
	g := mustAllow(t, l, "", 1)
	a.Release()
	mustAllow(t, l, "c", 1)
	g.Release()
}

func TestPerCallLimit(t *testing.T) {
	l := mustNew(t, concurrency.Config{Max: 100})
	ctx := context.Background()
	free, pro := int64(2), int64(5)
	for range 2 {
		if _, d, _ := l.TryAcquire(ctx, admit.Request{Key: "t", N: 1, Limit: admit.Limit{Rate: free}}); !d.Allowed {
			t.Fatalf("free tier denied: %+v", d)
		}
	}
	if _, d, _ := l.TryAcquire(ctx, admit.Request{Key: "t", N: 1, Limit: admit.Limit{Rate: free}}); d.Allowed || d.Limit.Rate != 2 || d.Limit.Burst != 2 {
		t.Fatalf("a third free request: %+v", d)
	}
	if _, d, _ := l.TryAcquire(ctx, admit.Request{Key: "t", N: 2, Limit: admit.Limit{Rate: pro}}); !d.Allowed || d.Remaining != 1 || d.Limit.Rate != 5 {
		t.Fatalf("a pro request: %+v", d)
	}
	// 4 in flight: over the free limit, Remaining is 0, not negative.
	if _, d, _ := l.TryAcquire(ctx, admit.Request{Key: "t", N: 0, Limit: admit.Limit{Rate: free}}); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("a free peek with 4 in flight: %+v", d)
	}
}

func TestBadInput(t *testing.T) {
	for _, max := range []int64{0, -1, -1 << 63} {
		if l, err := concurrency.New(concurrency.Config{Max: max}); l != nil || !errors.Is(err, admit.ErrInvalidLimit) {
			t.Errorf("New(%d) = %v, %v; want an error wrapping ErrInvalidLimit", max, l, err)
		}
	}
	for name, cfg := range map[string]concurrency.Config{
		"zero max":          {},
		"negative lease":    {Max: 1, Lease: -time.Second},
		"negative max keys": {Max: 1, MaxKeys: -1},
	} {
		if l, err := concurrency.New(cfg); l != nil || !errors.Is(err, admit.ErrInvalidConfig) {
			t.Errorf("%s: New = %v, %v; want an error wrapping admit.ErrInvalidConfig", name, l, err)
		}
	}
	long := strings.Repeat("k", 1024+1) // the default Config.MaxKeyLength
	tests := []struct {
		name     string
		cfg      concurrency.Config
		key      string
		max, n   int64
		want     error // nil: no error
		allowed  bool
		infRetry bool
	}{
		{name: "negative n", key: "k", max: 3, n: -1, want: admit.ErrInvalidCost, infRetry: true},
		{name: "min int n", key: "k", max: 3, n: -1 << 63, want: admit.ErrInvalidCost, infRetry: true},
		{name: "n > max", key: "k", max: 3, n: 4, want: admit.ErrExceedsBurst, infRetry: true},
		{name: "n > max, global", key: "", max: 3, n: 1 << 62, want: admit.ErrExceedsBurst, infRetry: true},
		{name: "zero max", key: "k", max: 0, n: 1, want: admit.ErrInvalidLimit, infRetry: true},
		{name: "negative max", key: "k", max: -5, n: 0, want: admit.ErrInvalidLimit, infRetry: true},
		{name: "key too long", key: long, max: 3, n: 1, want: admit.ErrKeyTooLong, infRetry: true},
		{name: "key at the maximum", key: long[1:], max: 3, n: 1, allowed: true},
		{name: "any bytes", key: "\x00\xff{}\n", max: 3, n: 1, allowed: true},
		{name: "empty key", key: "", max: 3, n: 3, allowed: true},
		{name: "max int64", key: "k", max: 1<<63 - 1, n: 1<<63 - 1, allowed: true},
		{name: "n = 0 = max", key: "k", max: 1, n: 0, allowed: true},
		{name: "short max length", cfg: concurrency.Config{MaxKeyLength: 2}, key: "abc", max: 3, n: 1, want: admit.ErrKeyTooLong, infRetry: true},
		{name: "the empty key under the shortest max length", cfg: concurrency.Config{MaxKeyLength: 1}, key: "", max: 3, n: 1, allowed: true},
		{name: "no key length bound", cfg: concurrency.Config{MaxKeyLength: -1}, key: long + long, max: 3, n: 1, allowed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, wait := range []bool{false, true} {
				cfg := tt.cfg
				cfg.Max = 10
				l := mustNew(t, cfg)
				var p concurrency.Permit
				var d admit.Decision
				var err error
				if wait {
					p, d, err = l.Acquire(context.Background(), admit.Request{Key: tt.key, N: tt.n, Limit: admit.Limit{Rate: tt.max, Period: time.Second}})
				} else {
					p, d, err = l.TryAcquire(context.Background(), admit.Request{Key: tt.key, N: tt.n, Limit: admit.Limit{Rate: tt.max, Period: time.Second}})
				}
				if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
					t.Fatalf("wait=%v: err = %v, want %v", wait, err, tt.want)
				}
				if d.Allowed != tt.allowed || (d.RetryAfter == admit.InfDuration) != tt.infRetry || d.Kind != admit.KindConcurrency {
					t.Fatalf("wait=%v: %+v", wait, d)
				}
				if err != nil && p != (concurrency.Permit{}) {
					t.Fatalf("wait=%v: an error with a Permit", wait)
				}
				if d.Allowed && tt.n > 0 && !p.Release() {
					t.Fatalf("wait=%v: Release failed", wait)
				}
			}
		})
	}
}

// recorder is an Observer that records what it is told.
type recorder struct {
	admit.NopObserver
	mu      sync.Mutex
	decided []admit.DecisionEvent
	tracked []int
}

func (r *recorder) Decided(e admit.DecisionEvent) {
	r.mu.Lock()
	r.decided = append(r.decided, e)
	r.mu.Unlock()
}

func (r *recorder) Tracked(name string, keys int) {
	r.mu.Lock()
	r.tracked = append(r.tracked, keys)
	r.mu.Unlock()
}

func TestObserver(t *testing.T) {
	rec := &recorder{}
	l := mustNew(t, concurrency.Config{Options: admit.Options{Observer: rec, Name: "db"}, Max: 1})
	if len(rec.tracked) != 1 || rec.tracked[0] != 0 {
		t.Fatalf("Tracked %v after New, want [0]", rec.tracked)
	}
	p := mustAllow(t, l, "k", 1)
	mustDeny(t, l, "k", 1)
	l.TryAcquire(context.Background(), admit.Request{Key: "k", N: 2})  // exceeds: observed
	l.TryAcquire(context.Background(), admit.Request{Key: "k", N: -1}) // invalid: not observed
	p.Release()
	if len(rec.decided) != 3 {
		t.Fatalf("%d decisions observed, want 3: %+v", len(rec.decided), rec.decided)
	}
	e := rec.decided[1]
	if e.Limiter != "db" || e.Key != "k" || e.N != 1 || e.Decision.Allowed || e.Decision.Rule != "db" {
		t.Fatalf("the denial observed as %+v", e)
	}
	if rec.decided[2].Decision.RetryAfter != admit.InfDuration {
		t.Fatalf("n > max observed as %+v", rec.decided[2])
	}

	// Tracked follows large moves of the number of keys.
	var ps []concurrency.Permit
	for i := range 1000 {
		ps = append(ps, mustAllow(t, l, itoa(i), 1))
	}
	rec.mu.Lock()
	n := len(rec.tracked)
	last := rec.tracked[n-1]
	rec.mu.Unlock()
	if n < 5 || last < 1000*7/8 {
		t.Fatalf("Tracked %v while adding 1000 keys", rec.tracked)
	}
	for _, p := range ps {
		p.Release()
	}
	rec.mu.Lock()
	last = rec.tracked[len(rec.tracked)-1]
	rec.mu.Unlock()
	if last > 16 {
		t.Fatalf("Tracked %v after releasing all", rec.tracked)
	}
}

func TestLeaseReclaimed(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 2, Lease: 10 * time.Second})
	a := mustAllow(t, l, "k", 2)
	clk.Advance(10*time.Second - 1)
	if !a.Held() || inFlightOf(l, "k") != 2 {
		t.Fatal("the lease expired early")
	}
	mustDeny(t, l, "k", 1)
	clk.Advance(1)
	if a.Held() {
		t.Fatal("the lease did not expire at its deadline")
	}
	if got := inFlightOf(l, "k"); got != 0 {
		t.Fatalf("InFlight = %d after the lease expired", got)
	}
	if st := l.Stats(); st.Keys != 0 || st.Reclaimed != 1 {
		t.Fatalf("Stats after reclaiming: %+v", st)
	}
	// The stale Permit cannot free the new holder's slots.
	b := mustAllow(t, l, "k", 2)
	if a.Release() {
		t.Fatal("Release of a reclaimed Permit reported true")
	}
	if got := inFlightOf(l, "k"); got != 2 || !b.Held() {
		t.Fatalf("InFlight = %d after a stale Release, want 2", got)
	}
	mustDeny(t, l, "k", 1)
	if !b.Release() {
		t.Fatal("Release of a live Permit failed")
	}
}

func TestLeaseExpiresWithoutAnyCallForTheKey(t *testing.T) {
	// A Release that comes too late finds the lease expired even if no
	// other call reclaimed it.
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 1, Lease: time.Second})
	p := mustAllow(t, l, "k", 1)
	clk.Advance(time.Second)
	if p.Release() {
		t.Fatal("Release after the lease reported true")
	}
	if st := l.Stats(); st.Reclaimed != 1 || st.Keys != 0 {
		t.Fatalf("Stats: %+v", st)
	}
}

func TestMaxKeysReclaimsExpiredLeases(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 1, Lease: time.Minute, MaxKeys: 50})
	for i := range 50 {
		mustAllow(t, l, itoa(i), 1) // leaked
	}
	if _, _, err := l.TryAcquire(context.Background(), admit.Request{Key: "new", N: 1}); !errors.Is(err, admit.ErrTooManyKeys) {
		t.Fatalf("err = %v, want ErrTooManyKeys", err)
	}
	clk.Advance(time.Minute)
	// The keys live in other shards, which nobody has used since: the
	// Limiter sweeps them before refusing.
	mustAllow(t, l, "new", 1)
	if st := l.Stats(); st.Keys != 1 || st.Reclaimed != 50 {
		t.Fatalf("Stats: %+v", st)
	}
}

func TestRetryAfter(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 5, Lease: 10 * time.Second})
	mustAllow(t, l, "k", 2) // deadline 10s
	clk.Advance(time.Second)
	p := mustAllow(t, l, "k", 3) // deadline 11s
	clk.Advance(time.Second)     // now 2s

	d := mustDeny(t, l, "k", 1)
	if d.RetryAfter != 8*time.Second || d.ResetAfter != 9*time.Second || d.Remaining != 0 {
		t.Fatalf("n=1: %+v, want retry 8s (the first lease), reset 9s", d)
	}
	d = mustDeny(t, l, "k", 3)
	if d.RetryAfter != 9*time.Second {
		t.Fatalf("n=3: retry %v, want 9s (both leases)", d.RetryAfter)
	}
	p.Release()
	_, d = try(t, l, "k", 3)
	if !d.Allowed || d.RetryAfter != 0 || d.ResetAfter != 10*time.Second { // the new lease
		t.Fatalf("n=3 after a release: %+v", d)
	}

	// Without leases the Limiter cannot tell: 0.
	l2 := mustNew(t, concurrency.Config{Max: 1})
	mustAllow(t, l2, "k", 1)
	if d := mustDeny(t, l2, "k", 1); d.RetryAfter != 0 || d.ResetAfter != 0 {
		t.Fatalf("without leases: %+v", d)
	}
}

func TestEndlessLease(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 1, Lease: 1<<63 - 1})
	clk.Advance(time.Hour)
	p := mustAllow(t, l, "k", 1) // the deadline saturates
	clk.Advance(100 * 365 * 24 * time.Hour)
	if !p.Held() || !p.Release() {
		t.Fatal("an endless lease expired")
	}
}

func TestLeasesWhenTheClockGoesBack(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	l := mustNew(t, concurrency.Config{Options: admit.Options{Clock: clk}, Max: 2, Lease: 10 * time.Second})
	clk.Advance(100 * time.Second)
	a := mustAllow(t, l, "k", 1) // deadline 110s
	clk.Advance(-50 * time.Second)
	b := mustAllow(t, l, "k", 1) // deadline 60s: first in line
	clk.Advance(10 * time.Second)
	if b.Held() || !a.Held() {
		t.Fatal("at 60s: b should have expired, not a")
	}
	clk.Advance(50 * time.Second)
	if a.Held() {
		t.Fatal("at 110s: a should have expired")
	}
	if st := l.Stats(); st.Reclaimed != 2 || st.Keys != 0 {
		t.Fatalf("Stats: %+v", st)
	}
}

func TestHugeLimitsDoNotOverflow(t *testing.T) {
	l := mustNew(t, concurrency.Config{Max: 1<<63 - 1})
	p := mustAllow(t, l, "k", 1<<63-2)
	mustAllow(t, l, "k", 1).Release()
	d := mustDeny(t, l, "k", 10) // in-flight + 10 overflows int64
	if d.Remaining != 1 {
		t.Fatalf("Remaining = %d, want 1", d.Remaining)
	}
	p.Release()
}

// inFlightOf returns l.InFlight(key), which never fails in memory.
func inFlightOf(l *concurrency.Limiter, key string) int64 {
	n, err := l.InFlight(context.Background(), key)
	if err != nil {
		panic(err)
	}
	return n
}
