package redisstore_test

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

// clients are the deployments every concurrency test of exactness runs on.
var clients = []struct {
	name   string
	client func(testing.TB) redis.UniversalClient
}{{"standalone", standalone}, {"cluster", cluster}}

func newConcurrency(t testing.TB, s *redisstore.Store, cfg redisstore.ConcurrencyConfig) *redisstore.ConcurrencyLimiter {
	t.Helper()
	l, err := s.Concurrency(cfg)
	if err != nil {
		t.Fatalf("Concurrency(%+v): %v", cfg, err)
	}
	return l
}

// eventually polls f every few milliseconds until it reports true, and
// fails t if it has not within timeout.
func eventually(t testing.TB, timeout time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Many goroutines acquiring one key admit exactly max; releasing every
// lease leaves no key behind.
func TestConcurrencyAdmitsExactlyMax(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			client := c.client(t)
			s, prefix := prefixedStore(t, client, redisstore.Config{})
			l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Options: admit.Options{Name: "api"}, Max: 10})
			ctx := t.Context()
			const workers, each = 16, 10
			var mu sync.Mutex
			var leases []redisstore.Lease
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for range each {
						p, d, err := l.TryAcquire(ctx, admit.Request{Key: "hot", N: 1})
						if err != nil {
							t.Error(err)
							return
						}
						if d.Kind != admit.KindConcurrency || d.Limit != (admit.Limit{Rate: 10, Burst: 10}) || d.Rule != "api" {
							t.Errorf("decision %+v", d)
						}
						if d.Allowed {
							mu.Lock()
							leases = append(leases, p)
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			if len(leases) != 10 {
				t.Fatalf("admitted %d, want exactly 10", len(leases))
			}
			if n, err := l.InFlight(ctx, "hot"); n != 10 || err != nil {
				t.Errorf("InFlight = %d, %v; want 10", n, err)
			}
			for _, p := range leases {
				wg.Go(func() {
					if ok, err := p.Release(ctx); !ok || err != nil {
						t.Errorf("Release = %v, %v", ok, err)
					}
				})
			}
			wg.Wait()
			if n, err := l.InFlight(ctx, "hot"); n != 0 || err != nil {
				t.Errorf("InFlight after releasing all = %d, %v", n, err)
			}
			if keys := keysUnder(t, client, prefix); len(keys) != 0 {
				t.Errorf("keys left after releasing all: %q", keys)
			}
		})
	}
}

// keysUnder returns the keys under prefix (of every master in a cluster).
func keysUnder(t testing.TB, client redis.UniversalClient, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	var mu sync.Mutex
	scan := func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, prefix+"*").Result()
		mu.Lock()
		keys = append(keys, ks...)
		mu.Unlock()
		return err
	}
	var err error
	switch c := client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		t.Fatalf("client %T", client)
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// prefixedStore is newStore under a prefix the test knows.
func prefixedStore(t testing.TB, client redis.UniversalClient, cfg redisstore.Config) (*redisstore.Store, string) {
	t.Helper()
	cfg.Prefix = redistest.Prefix(t)
	return newStore(t, client, cfg), cfg.Prefix
}

// Weighted requests, per-call limits, peeks and the fields of decisions.
func TestConcurrencyWeighted(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{})
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 5, Lease: time.Minute})
	ctx := t.Context()
	p1, d, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 3})
	if err != nil || !d.Allowed || d.Remaining != 2 || d.RetryAfter != 0 || d.ResetAfter <= 59*time.Second || d.ResetAfter > time.Minute {
		t.Fatalf("3 of 5: %+v, %v", d, err)
	}
	_, d, err = l.TryAcquire(ctx, admit.Request{Key: "k", N: 3})
	if err != nil || d.Allowed || d.Remaining != 2 || d.RetryAfter <= 59*time.Second || d.RetryAfter > time.Minute {
		t.Fatalf("3 more of 5: %+v, %v; want a denial until the first lease expires", d, err)
	}
	p2, d, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 2})
	if err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("2 more of 5: %+v, %v", d, err)
	}
	// A peek holds nothing.
	p0, d, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 0})
	if err != nil || !d.Allowed || d.Remaining != 0 || p0 != (redisstore.Lease{}) {
		t.Fatalf("peek: %+v, %+v, %v", p0, d, err)
	}
	if ok, _ := p1.Release(ctx); !ok {
		t.Fatal("Release of 3 slots: false")
	}
	// Per-call limits compare the same in-flight count (2).
	if _, d, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 3, Limit: admit.Limit{Rate: 4}}); d.Allowed || d.Remaining != 2 || d.Limit.Rate != 4 {
		t.Errorf("3 under a limit of 4 with 2 in flight: %+v", d)
	}
	if _, d, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 0, Limit: admit.Limit{Rate: 1}}); !d.Allowed || d.Remaining != 0 {
		t.Errorf("a peek under a limit of 1 with 2 in flight: %+v", d)
	}
	p3, d, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 2, Limit: admit.Limit{Rate: 4}})
	if !d.Allowed || d.Remaining != 0 {
		t.Errorf("2 under a limit of 4 with 2 in flight: %+v", d)
	}
	if n, _ := l.InFlight(ctx, "k"); n != 4 {
		t.Errorf("InFlight = %d, want 4", n)
	}
	// Keys are independent.
	if _, d, _ := l.TryAcquire(ctx, admit.Request{Key: "other", N: 5}); !d.Allowed {
		t.Errorf("another key: %+v", d)
	}
	p2.Release(ctx)
	p3.Release(ctx)
	if n, _ := l.InFlight(ctx, "k"); n != 0 {
		t.Errorf("InFlight = %d after releasing all, want 0", n)
	}
}

// Release reports whether it released, once per grant, whatever the copy
// or the process.
func TestConcurrencyReleaseIsIdempotent(t *testing.T) {
	client := standalone(t)
	s, prefix := prefixedStore(t, client, redisstore.Config{})
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 2})
	ctx := t.Context()
	p, _, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 2})
	q := p
	if held, err := q.Held(ctx); !held || err != nil {
		t.Fatalf("Held = %v, %v", held, err)
	}
	if ok, err := p.Release(ctx); !ok || err != nil {
		t.Fatalf("first Release = %v, %v", ok, err)
	}
	for i, lease := range []redisstore.Lease{p, q, {}} {
		if ok, err := lease.Release(ctx); ok || err != nil {
			t.Errorf("Release %d after the first = %v, %v; want false", i, ok, err)
		}
		if ok, err := lease.Extend(ctx); ok || err != nil {
			t.Errorf("Extend %d after Release = %v, %v; want false", i, ok, err)
		}
		if held, err := lease.Held(ctx); held || err != nil {
			t.Errorf("Held %d after Release = %v, %v; want false", i, held, err)
		}
	}
	// A released lease never frees the slots of a later grant.
	p2, d, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 2})
	if !d.Allowed {
		t.Fatalf("after Release: %+v", d)
	}
	p.Release(ctx)
	if n, _ := l.InFlight(ctx, "k"); n != 2 {
		t.Errorf("a stale Release freed slots: InFlight = %d", n)
	}
	// Two stores (two processes) share one limit by name; a lease is
	// released from either.
	s2 := newStore(t, client, redisstore.Config{Prefix: prefix})
	l2 := newConcurrency(t, s2, redisstore.ConcurrencyConfig{Max: 2})
	if _, d, _ := l2.TryAcquire(ctx, admit.Request{Key: "k", N: 1}); d.Allowed {
		t.Errorf("another store, same prefix and name: %+v; want the slots shared", d)
	}
	other := newConcurrency(t, s2, redisstore.ConcurrencyConfig{Options: admit.Options{Name: "other"}, Max: 2})
	if _, d, _ := other.TryAcquire(ctx, admit.Request{Key: "k", N: 2}); !d.Allowed {
		t.Errorf("another name: %+v; want its own slots", d)
	}
	if ok, _ := p2.Release(ctx); !ok {
		t.Error("Release of the later grant: false")
	}
}

// A holder that never releases (it crashed) loses its slots when its
// lease expires, and its late Release does nothing.
func TestConcurrencyLeaseExpiryReclaims(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{})
	const lease = 200 * time.Millisecond
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 1, Lease: lease})
	ctx := t.Context()
	crashed, d, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
	if err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	start := time.Now()
	_, d, _ = l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > lease || d.ResetAfter != d.RetryAfter {
		t.Fatalf("while held: %+v; want a denial until the lease expires, at most %v", d, lease)
	}
	var p redisstore.Lease
	eventually(t, 5*time.Second, "the slot of a crashed holder is reclaimed", func() bool {
		p, d, err = l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
		if err != nil {
			t.Fatal(err)
		}
		return d.Allowed
	})
	if elapsed := time.Since(start); elapsed < lease-20*time.Millisecond {
		t.Errorf("reclaimed after %v, before the lease of %v", elapsed, lease)
	}
	if held, _ := crashed.Held(ctx); held {
		t.Error("the crashed holder still holds its slot")
	}
	if ok, _ := crashed.Release(ctx); ok {
		t.Error("a Release after the lease expired reported true")
	}
	if ok, _ := crashed.Extend(ctx); ok {
		t.Error("an Extend after the lease expired reported true")
	}
	if n, _ := l.InFlight(ctx, "k"); n != 1 {
		t.Errorf("InFlight = %d, want the new holder's 1", n)
	}
	if ok, _ := p.Release(ctx); !ok {
		t.Error("the new holder's Release: false")
	}
	// The keys of a key whose holders all crashed vanish by themselves.
	client := standalone(t)
	s2, prefix := prefixedStore(t, client, redisstore.Config{})
	l2 := newConcurrency(t, s2, redisstore.ConcurrencyConfig{Max: 1, Lease: lease})
	if _, d, err := l2.TryAcquire(ctx, admit.Request{Key: "vanish", N: 1}); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	eventually(t, 5*time.Second, "the keys of an expired lease vanish", func() bool {
		return len(keysUnder(t, client, prefix)) == 0
	})
}

// A holder that extends its lease keeps its slots past the first lease.
func TestConcurrencyExtendKeepsTheLease(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{})
	const lease = 300 * time.Millisecond
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 1, Lease: lease})
	ctx := t.Context()
	p, d, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
	if !d.Allowed {
		t.Fatalf("%+v", d)
	}
	end := time.Now().Add(3 * lease)
	for time.Now().Before(end) {
		if ok, err := p.Extend(ctx); !ok || err != nil {
			t.Fatalf("Extend = %v, %v", ok, err)
		}
		if _, d, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1}); d.Allowed {
			t.Fatal("admitted while an extended lease holds the slot")
		}
		time.Sleep(lease / 6)
	}
	if held, _ := p.Held(ctx); !held {
		t.Fatal("not held after extensions")
	}
	if ok, _ := p.Release(ctx); !ok {
		t.Error("Release after extensions: false")
	}
}

// n > max can never be admitted: a refusal with RetryAfter InfDuration
// and ErrExceedsBurst, also from Acquire, which does not wait.
func TestConcurrencyExceedsMax(t *testing.T) {
	s := newStore(t, standalone(t), redisstore.Config{})
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 3})
	ctx := t.Context()
	for name, acquire := range map[string]func(context.Context, admit.Request) (redisstore.Lease, admit.Decision, error){
		"TryAcquire": l.TryAcquire, "Acquire": l.Acquire,
	} {
		p, d, err := acquire(ctx, admit.Request{Key: "k", N: 4})
		if !errors.Is(err, admit.ErrExceedsBurst) || d.Allowed || d.RetryAfter != admit.InfDuration || p != (redisstore.Lease{}) {
			t.Errorf("%s of 4 under 3: %+v, %v", name, d, err)
		}
	}
	if _, d, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 3, Limit: admit.Limit{Rate: 2}}); !errors.Is(err, admit.ErrExceedsBurst) || d.Limit.Rate != 2 {
		t.Errorf("3 under a per-call 2: %+v, %v", d, err)
	}
}

func TestConcurrencyBadInput(t *testing.T) {
	client := standalone(t)
	s := newStore(t, client, redisstore.Config{MaxKeyLength: 10})
	ctx := t.Context()
	for _, max := range []int64{0, -1, 1<<53 + 1} {
		if _, err := s.Concurrency(redisstore.ConcurrencyConfig{Max: max}); !errors.Is(err, admit.ErrInvalidLimit) || !errors.Is(err, admit.ErrInvalidConfig) {
			t.Errorf("Concurrency(%d): %v, want ErrInvalidLimit", max, err)
		}
	}
	for _, cfg := range []redisstore.ConcurrencyConfig{
		{Max: 1, Lease: -time.Second}, {Max: 1, Lease: 400 * 24 * time.Hour},
		{Max: 1, PollMin: -1, PollMax: time.Second}, {Max: 1, PollMin: 2, PollMax: 1}, {Max: 1, PollMin: 1, PollMax: time.Hour},
		{Max: 1, PollMin: time.Second}, // above the default PollMax
		{Options: admit.Options{Name: "a:b"}, Max: 1}, {Options: admit.Options{Name: "{"}, Max: 1},
	} {
		if _, err := s.Concurrency(cfg); !errors.Is(err, admit.ErrInvalidConfig) {
			t.Errorf("a bad config %+v: %v, want admit.ErrInvalidConfig", cfg, err)
		}
	}
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Max: 2})
	if _, d, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) || d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Errorf("n = -1: %+v, %v", d, err)
	}
	if _, _, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1, Limit: admit.Limit{Rate: 0, Period: time.Second}}); !errors.Is(err, admit.ErrInvalidLimit) {
		t.Errorf("a per-call limit of 0: %v", err)
	}
	if _, _, err := l.Acquire(ctx, admit.Request{Key: "key-too-long", N: 1}); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("a long key: %v", err)
	}
	if _, err := l.InFlight(ctx, "key-too-long"); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("InFlight of a long key: %v", err)
	}
	// Any bytes in a key, braces included.
	for _, key := range []string{"", "{", "}", "{a}", "a}{b", "\x00\xff"} {
		p, d, err := l.TryAcquire(ctx, admit.Request{Key: key, N: 2})
		if err != nil || !d.Allowed {
			t.Errorf("key %q: %+v, %v", key, d, err)
		}
		if ok, _ := p.Release(ctx); !ok {
			t.Errorf("key %q: Release false", key)
		}
	}
	// After Close, acquisitions fail; leases can still be released.
	s2 := newStore(t, client, redisstore.Config{})
	l2 := newConcurrency(t, s2, redisstore.ConcurrencyConfig{Max: 1})
	p, _, _ := l2.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
	s2.Close()
	if _, _, err := l2.TryAcquire(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, admit.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if ok, err := p.Release(ctx); !ok || err != nil {
		t.Errorf("Release after Close: %v, %v", ok, err)
	}
}

// A key holding something else than our state is an error, not a panic
// or a silent reset, and the value is left alone.
func TestConcurrencyWrongTypeKey(t *testing.T) {
	client := standalone(t)
	s, prefix := prefixedStore(t, client, redisstore.Config{})
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Options: admit.Options{Name: "api"}, Max: 2})
	ctx := t.Context()
	p, _, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
	keys, _ := client.Keys(ctx, prefix+"*").Result()
	if len(keys) != 2 {
		t.Fatalf("keys %q, want a sorted set and a hash", keys)
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `\{[0-9a-f]{16}\}:(conc|concw):api:k$`)
	var zkey, hkey string
	for _, k := range keys {
		m := re.FindStringSubmatch(k)
		if m == nil {
			t.Fatalf("key %q: want %s{<16 hex>}:conc[w]:api:k", k, prefix)
		}
		if m[1] == "conc" {
			zkey = k
		} else {
			hkey = k
		}
	}
	if typ, _ := client.Type(ctx, zkey).Result(); typ != "zset" {
		t.Errorf("%s is a %s", zkey, typ)
	}
	if pttl, _ := client.PTTL(ctx, zkey).Result(); pttl <= 29*time.Second || pttl > 30*time.Second { // the default ConcurrencyConfig.Lease
		t.Errorf("PTTL %v, want about the default lease", pttl)
	}
	if pttl, _ := client.PTTL(ctx, hkey).Result(); pttl <= 29*time.Second || pttl > 30*time.Second { // the default ConcurrencyConfig.Lease
		t.Errorf("PTTL of the hash %v, want about the default lease", pttl)
	}
	p.Release(ctx)

	client.HSet(ctx, zkey, "f", "v")
	if _, _, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, redisstore.ErrStore) {
		t.Errorf("a hash at the sorted set's key: %v, want ErrStore", err)
	}
	if v, _ := client.HGet(ctx, zkey, "f").Result(); v != "v" {
		t.Errorf("the hash was changed: %q", v)
	}
	client.Del(ctx, zkey)
	client.ZAdd(ctx, zkey, redis.Z{Score: 1e15, Member: "x"})
	client.HSet(ctx, hkey, "n", "garbage")
	if _, _, err := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, redisstore.ErrStore) {
		t.Errorf("garbage for the total: %v, want ErrStore", err)
	}
	if _, err := l.InFlight(ctx, "k"); !errors.Is(err, redisstore.ErrStore) {
		t.Errorf("InFlight of garbage: %v, want ErrStore", err)
	}
	client.Del(ctx, zkey, hkey)
}

// The observer sees each decision and each call to Redis.
func TestConcurrencyObserver(t *testing.T) {
	obs := &countingObserver{}
	s := newStore(t, standalone(t), redisstore.Config{Options: admit.Options{Observer: obs}})
	l := newConcurrency(t, s, redisstore.ConcurrencyConfig{Options: admit.Options{Observer: obs, Name: "api"}, Max: 1})
	ctx := t.Context()
	p, _, _ := l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
	l.TryAcquire(ctx, admit.Request{Key: "k", N: 1})
	l.TryAcquire(ctx, admit.Request{Key: "k", N: 2})
	p.Release(ctx)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.decided != 3 || obs.allowed != 1 || obs.calls != 3 {
		t.Errorf("observer saw %d decisions (%d allowed) and %d calls; want 3 (1) and 3", obs.decided, obs.allowed, obs.calls)
	}
}

type countingObserver struct {
	admit.NopObserver
	mu                      sync.Mutex
	decided, allowed, calls int
	ops                     []string
}

func (o *countingObserver) Decided(e admit.DecisionEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.decided++
	if e.Decision.Allowed {
		o.allowed++
	}
}

func (o *countingObserver) StoreCalled(e admit.StoreEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	o.ops = append(o.ops, e.Op)
}
