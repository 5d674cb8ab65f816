package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

// The Examples need a Redis: under `go test` the package's TestMain starts
// a redis-server (from PATH) and exampleClient connects to it. In your
// code, connect to your own.
func exampleClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: redistest.ExampleAddr(), DialerRetries: 1, MaxRetries: -1})
}

// examplePrefix keeps each run of the Examples apart on the shared server.
func examplePrefix() string {
	return "admit:example:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
}

func Example() {
	client := exampleClient()
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{Prefix: examplePrefix()})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	// 2 requests per second per client, shared by every process using
	// this Redis and the limiter name "api".
	lim, err := store.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api"}, Limit: admit.PerSecond(2)})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	// Allow reads Redis's clock; AllowAt takes the instant, which makes
	// this output exact.
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		d, err := lim.Allow(ctx, admit.Request{Key: "client-42", N: 1, At: now})
		if err != nil {
			panic(err) // Redis failed: see package compose for policies
		}
		fmt.Printf("request %d: allowed %v, remaining %d, retry after %v\n", i, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// request 0: allowed true, remaining 1, retry after 0s
	// request 1: allowed true, remaining 0, retry after 0s
	// request 2: allowed false, remaining 0, retry after 500ms
}

// Layers of one request decided in one script call, all or nothing: the
// tenant's limit denies the third request, and its user's limit keeps the
// event it would have taken.
func ExampleStore_AllowLayers() {
	client := exampleClient()
	defer client.Close()
	store, _ := redisstore.New(client, redisstore.Config{Prefix: examplePrefix()})
	defer store.Close()
	perUser, _ := store.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "user"}, Limit: admit.PerMinute(10)})
	perTenant, _ := store.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "tenant"}, Algorithm: admit.AlgFixedWindow, Limit: admit.PerMinute(2)})

	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, user := range []string{"ann", "bob", "cid"} {
		// The tenant is the hash tag: all its layers live in one slot.
		d, _, err := store.AllowLayers(ctx, admit.Request{Key: "acme", N: 1, At: now}, []redisstore.Layer{
			{Limiter: perUser, Key: "acme/" + user},
			{Limiter: perTenant, Key: "acme"},
		}, nil)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: allowed %v by %q, remaining %d\n", user, d.Allowed, d.Rule, d.Remaining)
	}
	d, _, _ := store.AllowLayers(ctx, admit.Request{Key: "acme", N: 0, At: now}, []redisstore.Layer{{Limiter: perUser, Key: "acme/cid"}}, nil)
	fmt.Printf("cid's own limit: remaining %d\n", d.Remaining)
	// Output:
	// ann: allowed true by "tenant", remaining 1
	// bob: allowed true by "tenant", remaining 0
	// cid: allowed false by "tenant", remaining 0
	// cid's own limit: remaining 10
}

// A Redis limiter behind a failure policy: when Redis cannot answer, each
// instance enforces its share of the limit locally (here 1 of 4
// instances), and goes back to Redis when it answers again.
func Example_failurePolicy() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialerRetries: 1, MaxRetries: -1}) // nothing listens there
	defer client.Close()
	store, _ := redisstore.New(client, redisstore.Config{})
	defer store.Close()
	shared := admit.PerSecond(100)
	lim, _ := store.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "api"}, Limit: shared})
	local, _ := keyed.LocalShare(keyed.Config{Limit: shared}, 4)
	guard, _ := compose.NewGuard(lim, compose.GuardConfig{Options: admit.Options{Name: "api"}, Policy: compose.Breaker(compose.Fallback(local))})

	d, err := guard.Allow(context.Background(), admit.Request{Key: "client-42", N: 1})
	fmt.Println(d.Allowed, d.Rule, d.Limit, err)
	// Output:
	// true api/fallback 25/s <nil>
}

// A consumer takes from a shared limit of 100 events per second (a burst
// of 100) as many of its 64 queued events as fit, in one script call, and
// learns when more will.
func ExampleLimiter_AllowAtMost() {
	client := exampleClient()
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Config{Prefix: examplePrefix()})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	lim, err := store.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "export"}, Limit: admit.PerSecond(100)})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		n, d, err := lim.AllowAtMost(ctx, admit.Request{Key: "tenant-7", N: 64, At: now})
		if err != nil {
			panic(err)
		}
		fmt.Printf("batch %d: %d of 64 granted, %d remaining, more in %v\n", i, n, d.Remaining, d.RetryAfter)
		now = now.Add(100 * time.Millisecond)
	}
	// Output:
	// batch 0: 64 of 64 granted, 36 remaining, more in 0s
	// batch 1: 46 of 64 granted, 0 remaining, more in 10ms
	// batch 2: 10 of 64 granted, 0 remaining, more in 10ms
}
