package compose_test

import (
	"context"
	"fmt"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/keyed"
)

func ExampleAll() {
	clk := admittest.NewManualClock(admittest.Epoch)
	// 5 requests per second per client address, and 2 per minute per
	// tenant: a request must pass both.
	perIP, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk}, Limit: admit.PerSecond(5)})
	if err != nil {
		panic(err)
	}
	perTenant, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk}, Limit: admit.PerMinute(2)})
	if err != nil {
		panic(err)
	}
	chain, err := compose.All(
		compose.Layer{Name: "ip", Limiter: perIP}, // the cheap layer first
		compose.Layer{Name: "tenant", Limiter: perTenant},
	)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	keys := []string{"192.0.2.1", "acme"} // one key per layer
	for i := range 3 {
		d, err := chain.AllowKeys(ctx, keys, 1, nil)
		if err != nil {
			panic(err)
		}
		fmt.Printf("request %d: allowed=%-5v rule=%s remaining=%d retry-after=%v\n", i, d.Allowed, d.Rule, d.Remaining, d.RetryAfter)
	}
	// The tenant refused the third request, so the per-IP layer got its
	// event back: the address has used 2 of its 5.
	d, _ := perIP.Allow(ctx, admit.Request{Key: "192.0.2.1", N: 0})
	fmt.Println("per-IP remaining:", d.Remaining)
	// Output:
	// request 0: allowed=true  rule=tenant remaining=1 retry-after=0s
	// request 1: allowed=true  rule=tenant remaining=0 retry-after=0s
	// request 2: allowed=false rule=tenant remaining=0 retry-after=30s
	// per-IP remaining: 3
}

func ExampleChain_AllowKeys() {
	// 100 requests per minute per tenant, and at most 2 of its requests in
	// flight at once.
	rate, err := keyed.New(keyed.Config{Limit: admit.PerMinute(100)})
	if err != nil {
		panic(err)
	}
	inFlight, err := concurrency.New(concurrency.Config{Max: 2})
	if err != nil {
		panic(err)
	}
	chain, err := compose.All(
		compose.Layer{Name: "rate", Limiter: rate},
		compose.Layer{Name: "in-flight", Slots: inFlight.Slots()},
	)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	keys := []string{"acme", "acme"}
	var first, second, third compose.Held // one per request, released when it is done
	for i, h := range []*compose.Held{&first, &second, &third} {
		d, err := chain.AllowKeys(ctx, keys, 1, h)
		if err != nil {
			panic(err)
		}
		fmt.Printf("request %d: allowed=%-5v rule=%s\n", i, d.Allowed, d.Rule)
	}
	n, _ := inFlight.InFlight(ctx, "acme")
	fmt.Println("in flight:", n)
	first.Release() // the first request is done
	d, _ := chain.AllowKeys(ctx, keys, 1, &third)
	fmt.Printf("request 3: allowed=%-5v rule=%s\n", d.Allowed, d.Rule)
	second.Release()
	third.Release()
	n, _ = inFlight.InFlight(ctx, "acme")
	fmt.Println("in flight:", n)
	// Output:
	// request 0: allowed=true  rule=in-flight
	// request 1: allowed=true  rule=in-flight
	// request 2: allowed=false rule=in-flight
	// in flight: 2
	// request 3: allowed=true  rule=in-flight
	// in flight: 0
}

// Each layer of Admit is asked its own request: here a search costs 1
// against the per-user rate and 10 against the tenant's budget of work,
// and dst tells each layer's decision.
func ExampleAdmit() {
	clk := admittest.NewManualClock(admittest.Epoch)
	perUser, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk}, Limit: admit.PerSecond(5)})
	if err != nil {
		panic(err)
	}
	work, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk}, Algorithm: admit.AlgTokenBucket, Limit: admit.PerMinute(25)})
	if err != nil {
		panic(err)
	}
	layers := []compose.Layer{{Name: "user", Limiter: perUser}, {Name: "work", Limiter: work}}
	reqs := []admit.Request{{Key: "bob", N: 1}, {Key: "acme", N: 10}}
	dst := make([]admit.Decision, len(layers))
	ctx := context.Background()
	for i := range 3 {
		d, err := compose.Admit(ctx, layers, reqs, nil, dst)
		if err != nil {
			panic(err)
		}
		fmt.Printf("search %d: allowed=%-5v rule=%-4s user: remaining=%d, work: allowed=%v remaining=%d\n",
			i, d.Allowed, d.Rule, dst[0].Remaining, dst[1].Allowed, dst[1].Remaining)
	}
	// The third search was refused by the work budget, so bob's event was
	// given back (dst[0] is the decision as it was made): he has used 2
	// of his 5.
	d, _ := perUser.Allow(ctx, admit.Request{Key: "bob"})
	fmt.Println("user remaining:", d.Remaining)
	// Output:
	// search 0: allowed=true  rule=user user: remaining=4, work: allowed=true remaining=15
	// search 1: allowed=true  rule=user user: remaining=3, work: allowed=true remaining=5
	// search 2: allowed=false rule=work user: remaining=2, work: allowed=false remaining=5
	// user remaining: 3
}
