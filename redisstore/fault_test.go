package redisstore_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

// faultClient returns a client that fails fast on a dead server: one dial
// attempt of at most 100 ms, no retries (the package documentation
// recommends these settings).
func faultClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: -1, DialerRetries: 1, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// load runs checks from 16 goroutines until stop is closed, counting the
// decisions by the suffix of their Rule ("" for the store's own).
type load struct {
	wg      sync.WaitGroup
	stop    chan struct{}
	mu      sync.Mutex
	byRule  map[string]int
	allowed map[string]int
	errs    atomic.Int64
}

func startLoad(t *testing.T, g *compose.Guard) *load {
	l := &load{stop: make(chan struct{}), byRule: map[string]int{}, allowed: map[string]int{}}
	for w := range 16 {
		l.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				d, err := g.Allow(context.Background(), admit.Request{Key: "user-" + string(rune('a'+(w+i)%8)), N: 1})
				if err != nil {
					l.errs.Add(1)
					continue
				}
				rule := d.Rule[strings.LastIndex(d.Rule, "/")+1:]
				l.mu.Lock()
				l.byRule[rule]++
				if d.Allowed {
					l.allowed[rule]++
				}
				l.mu.Unlock()
				time.Sleep(100 * time.Microsecond)
			}
		})
	}
	return l
}

// snapshot returns and clears the counts.
func (l *load) snapshot() (byRule, allowed map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	byRule, allowed = l.byRule, l.allowed
	l.byRule, l.allowed = map[string]int{}, map[string]int{}
	return
}

func (l *load) finish() {
	close(l.stop)
	l.wg.Wait()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > d {
			t.Fatalf("after %v: %s", d, what)
		}
	}
}

// Redis killed under load and restarted, for each failure policy: no
// panic, no error reaches the caller, decisions follow the policy during
// the outage, the store decides again after the restart (within the
// breaker's probe interval), and no goroutines pile up.
func TestFaultRedisKilledUnderLoad(t *testing.T) {
	local := func(t *testing.T) admit.KeyedLimiter {
		l, err := keyed.LocalShare(keyed.Config{Limit: admit.PerSecond(1e6)}, 4)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	policies := []struct {
		name      string
		policy    func(t *testing.T) compose.Policy
		rule      string
		outageHas func(allowed, total int) bool
	}{
		{"fail-open", func(*testing.T) compose.Policy { return compose.FailOpen }, "fail-open", func(a, n int) bool { return a == n }},
		{"fail-closed", func(*testing.T) compose.Policy { return compose.FailClosed }, "fail-closed", func(a, n int) bool { return a == 0 }},
		{"fallback", func(t *testing.T) compose.Policy { return compose.Fallback(local(t)) }, "fallback", func(a, n int) bool { return a == n }},
		{"breaker", func(t *testing.T) compose.Policy { return compose.Breaker(compose.Fallback(local(t))) }, "fallback", func(a, n int) bool { return a == n }},
	}
	for _, pc := range policies {
		t.Run(pc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			srv := redistest.NewStandalone(t)
			s := newStore(t, faultClient(t, srv.Addr()), redisstore.Config{})
			lim, err := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api"}, Limit: admit.PerSecond(1e6)})
			if err != nil {
				t.Fatal(err)
			}
			g, err := compose.NewGuard(lim, compose.GuardConfig{Policy: pc.policy(t), Timeout: 50 * time.Millisecond, ProbeInterval: 100 * time.Millisecond, Threshold: 3})
			if err != nil {
				t.Fatal(err)
			}
			l := startLoad(t, g)
			defer l.finish()
			waitFor(t, 5*time.Second, "no decision by the store", func() bool { by, _ := l.snapshot(); return by["api"] > 50 })

			t0 := time.Now()
			srv.Kill()
			l.snapshot()
			waitFor(t, 5*time.Second, "no decision by the policy during the outage", func() bool {
				by, _ := l.snapshot()
				return by[pc.rule] > 50
			})
			t.Logf("policy deciding %v after the kill", time.Since(t0))
			time.Sleep(100 * time.Millisecond)
			by, allowed := l.snapshot()
			if by[pc.rule] == 0 || by["api"] != 0 || !pc.outageHas(allowed[pc.rule], by[pc.rule]) {
				t.Errorf("during the outage: decisions %v, allowed %v", by, allowed)
			}

			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			restarted := time.Now()
			waitFor(t, 5*time.Second, "the store did not decide again after the restart", func() bool {
				by, _ := l.snapshot()
				return by["api"] > 50 && by[pc.rule] == 0
			})
			t.Logf("store deciding %v after the restart", time.Since(restarted))
			if pc.name == "breaker" {
				if d := time.Since(restarted); d > 2*time.Second {
					t.Errorf("recovery took %v with a probe interval of 100ms", d)
				}
			}
			l.finish()
			l.stop = make(chan struct{}) // finish is deferred too
			if n := l.errs.Load(); n != 0 {
				t.Errorf("%d errors reached the callers", n)
			}
			s.Close()
			waitFor(t, 5*time.Second, "goroutines piled up", func() bool { return runtime.NumGoroutine() <= before+8 })
		})
	}
}

// A dead (stopped, not refusing) Redis costs each request the Guard's
// timeout, milliseconds, not seconds.
func TestFaultHungRedisCostsMilliseconds(t *testing.T) {
	srv := redistest.NewStandalone(t)
	c := faultClient(t, srv.Addr())
	s := newStore(t, c, redisstore.Config{})
	lim, _ := s.Limiter(redisstore.LimiterConfig{Limit: admit.PerSecond(100)})
	g, _ := compose.NewGuard(lim, compose.GuardConfig{Policy: compose.FailOpen, Timeout: 20 * time.Millisecond})
	if _, err := g.Allow(t.Context(), admit.Request{Key: "k", N: 1}); err != nil {
		t.Fatal(err)
	}
	// CLIENT PAUSE makes Redis hold every client's commands.
	if err := srv.Client(t).Do(t.Context(), "CLIENT", "PAUSE", "3000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	defer srv.Client(t).Do(context.Background(), "CLIENT", "UNPAUSE")
	for range 5 {
		start := time.Now()
		d, err := g.Allow(t.Context(), admit.Request{Key: "k", N: 1})
		if el := time.Since(start); err != nil || !d.Allowed || el > 500*time.Millisecond {
			t.Fatalf("a paused Redis: %+v, %v after %v", d, err, el)
		}
	}
}

// In a cluster with a node killed, keys of its slots follow the policy and
// the others are decided by the store.
func TestFaultClusterNodeKilled(t *testing.T) {
	cl := redistest.NewCluster(t)
	opts := cl.Options()
	opts.DialTimeout, opts.ReadTimeout, opts.MaxRetries, opts.DialerRetries = 100*time.Millisecond, 200*time.Millisecond, -1, 1
	client := redis.NewClusterClient(opts)
	defer client.Close()
	s := newStore(t, client, redisstore.Config{})
	lim, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api"}, Limit: admit.PerSecond(1e6)})
	g, _ := compose.NewGuard(lim, compose.GuardConfig{Policy: compose.FailClosed, Timeout: 300 * time.Millisecond})
	ctx := t.Context()
	// Find a key on node 0 and one elsewhere.
	var dead, alive string
	for i := 0; dead == "" || alive == ""; i++ {
		k := "key-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		if cl.NodeOf("{"+redisstore.TagOf(k)+"}") == 0 {
			dead = k
		} else {
			alive = k
		}
	}
	for _, k := range []string{dead, alive} {
		if d, err := g.Allow(ctx, admit.Request{Key: k, N: 1}); err != nil || d.Rule != "api" {
			t.Fatalf("before the kill, %q: %+v %v", k, d, err)
		}
	}
	cl.Node(0).Kill()
	for range 20 {
		d, err := g.Allow(ctx, admit.Request{Key: dead, N: 1})
		if err != nil || d.Allowed || !strings.HasSuffix(d.Rule, "fail-closed") {
			t.Fatalf("a key of the dead node: %+v %v, want the policy's denial", d, err)
		}
		d, err = g.Allow(ctx, admit.Request{Key: alive, N: 1})
		if err != nil || !d.Allowed || d.Rule != "api" {
			t.Fatalf("a key of a live node: %+v %v, want the store's admission", d, err)
		}
	}
	if err := cl.Node(0).Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the dead node's key is not decided by the store after its restart", func() bool {
		d, err := g.Allow(ctx, admit.Request{Key: dead, N: 1})
		return err == nil && d.Rule == "api"
	})
}

// A cluster with a slot no node serves: checks of keys in it fail with
// ErrStore, a Guard applies its policy, and other keys are decided.
func TestFaultClusterMissingSlot(t *testing.T) {
	cl := redistest.NewCluster(t)
	client := cl.Client(t)
	s := newStore(t, client, redisstore.Config{})
	lim, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api"}, Limit: admit.PerSecond(100)})
	ctx := t.Context()
	const key = "orphan"
	slot := redistest.Slot("{" + redisstore.TagOf(key) + "}")
	node := cl.Node(cl.NodeOf("{" + redisstore.TagOf(key) + "}"))
	nc := node.Client(t)
	if err := nc.ClusterDelSlots(ctx, slot).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the slot is still served", func() bool {
		_, err := lim.Allow(ctx, admit.Request{Key: key, N: 1})
		return errors.Is(err, redisstore.ErrStore)
	})
	_, err := lim.Allow(ctx, admit.Request{Key: key, N: 1})
	t.Logf("a key of the missing slot: %v", err)
	g, _ := compose.NewGuard(lim, compose.GuardConfig{Policy: compose.FailOpen})
	if d, err := g.Allow(ctx, admit.Request{Key: key, N: 1}); err != nil || !d.Allowed || !strings.HasSuffix(d.Rule, "fail-open") {
		t.Errorf("through a fail-open Guard: %+v %v", d, err)
	}
	var other string
	for i := 0; other == ""; i++ {
		k := "k" + string(rune('a'+i))
		if redistest.Slot("{"+redisstore.TagOf(k)+"}") != slot {
			other = k
		}
	}
	if d, err := lim.Allow(ctx, admit.Request{Key: other, N: 1}); err != nil || !d.Allowed {
		t.Errorf("a key of a served slot: %+v %v", d, err)
	}
}

// The Redis limiters fit the failure policies.
var (
	_ admit.KeyedLimiter = (*redisstore.Limiter)(nil)
	_ admit.KeyedLimiter = (*redisstore.Quota)(nil)
)

// A key denied before Redis dies stays denied from the deny cache during
// the outage, with or without a breaker (an open one asks the limiter's
// Cached), and those answers do not make a Guard switch back and forth: one
// switch to the policy for the whole outage.
func TestFaultDenyCacheDoesNotFlapTheGuard(t *testing.T) {
	srv := redistest.NewStandalone(t)
	s := newStore(t, faultClient(t, srv.Addr()), redisstore.Config{})
	lim, _ := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api"}, Limit: admit.Limit{Rate: 1, Period: time.Hour, Burst: 1}})
	ctx := t.Context()
	for _, policy := range []compose.Policy{compose.FailOpen, compose.Breaker(compose.FailOpen)} {
		t.Run(policy.String(), func(t *testing.T) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			g, _ := compose.NewGuard(lim, compose.GuardConfig{Policy: policy, Threshold: 1, ProbeInterval: time.Millisecond})
			hot := "hot-" + policy.String()
			g.Allow(ctx, admit.Request{Key: hot, N: 1}) // the burst
			if d, err := g.Allow(ctx, admit.Request{Key: hot, N: 1}); err != nil || d.Allowed {
				t.Fatalf("the hot key: %+v %v, want denied", d, err)
			}
			srv.Kill()
			if d, _ := g.Allow(ctx, admit.Request{Key: "cold-" + policy.String(), N: 1}); !strings.HasSuffix(d.Rule, "fail-open") {
				t.Fatalf("a key Redis must decide, during the outage: %+v", d)
			}
			for i := range 200 {
				d, err := g.Allow(ctx, admit.Request{Key: hot, N: 1})
				if err != nil {
					t.Fatalf("the hot key during the outage, check %d: %v", i, err)
				}
				if d.Rule != "api" || d.Allowed {
					t.Fatalf("the hot key during the outage, check %d: %+v, want the cached denial", i, d)
				}
				if i%20 == 0 {
					g.Allow(ctx, admit.Request{Key: "cold-" + policy.String(), N: 1})
					time.Sleep(time.Millisecond) // a probe interval
				}
			}
			if st := g.Stats(); st.Switches != 1 || !st.Active {
				t.Errorf("during the outage: %+v, want one switch and the policy active", st)
			}
		})
	}
}
