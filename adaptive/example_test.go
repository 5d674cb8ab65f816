package adaptive_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/adaptive"
	"github.com/admit-go/admit/compose"
)

func ExampleAIMD() {
	// Calls to a backend whose capacity is unknown: between 10 and 100
	// per second, starting at 40.
	lim, err := adaptive.NewAIMD(adaptive.AIMDConfig{Min: 10, Max: 100, Initial: 40})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	fmt.Println("start:", lim.Limit())
	for range 5 {
		lim.FeedbackAt(now, adaptive.Succeeded, 0)
	}
	fmt.Println("after 5 successes:", lim.Limit())
	lim.FeedbackAt(now, adaptive.Dropped, 0) // a timeout, a 503...
	fmt.Println("after a failure:", lim.Limit())

	admitted := 0
	for lim.AllowN(now, 1) {
		admitted++
	}
	fmt.Println("admitted at once:", admitted)
	fmt.Println("100ms later:", lim.AllowN(now.Add(100*time.Millisecond), 2))
	// Output:
	// start: 40/s
	// after 5 successes: 45/s
	// after a failure: 22/s
	// admitted at once: 22
	// 100ms later: true
}

func ExampleGradient() {
	// A concurrency limit between 4 and 1000 for a backend whose latency
	// is 10ms when it is not overloaded. Windows of 8 samples, whatever
	// their duration, to keep the example short.
	lim, err := adaptive.NewGradient(adaptive.GradientConfig{Min: 4, Max: 1000, WindowSamples: 8, WindowTime: -1})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// round fills every free slot, and ends the requests after latency.
	round := func(latency time.Duration) {
		var toks []adaptive.Token
		for {
			tok, d, _ := lim.TryAcquireN(now, 1)
			if !d.Allowed {
				break
			}
			toks = append(toks, tok)
		}
		now = now.Add(latency)
		for _, tok := range toks {
			tok.DoneAt(now, adaptive.Succeeded)
		}
	}
	for range 20 {
		round(10 * time.Millisecond) // fast: the limit grows
	}
	fmt.Println("limit after fast rounds:", lim.Limit())
	for range 20 {
		round(40 * time.Millisecond) // queueing: the limit shrinks
	}
	fmt.Println("limit after slow rounds:", lim.Limit())
	fmt.Println("long-term latency:", lim.Stats().LongRTT)
	// Output:
	// limit after fast rounds: 37
	// limit after slow rounds: 6
	// long-term latency: 10ms
}

func ExampleAIMD_Layer() {
	// The rate towards a backend as the last layer of a chain, after a
	// per-client limit.
	rate, _ := adaptive.NewAIMD(adaptive.AIMDConfig{Options: admit.Options{Name: "backend"}, Min: 1, Max: 1000, Initial: 2})
	chain, _ := compose.All(compose.Layer{Limiter: rate.Layer()})
	ctx := context.Background()
	for i := range 3 {
		d, _ := chain.Allow(ctx, admit.Request{Key: "client-1", N: 1})
		fmt.Printf("request %d: allowed=%v rule=%s\n", i, d.Allowed, d.Rule)
	}
	// Output:
	// request 0: allowed=true rule=backend
	// request 1: allowed=true rule=backend
	// request 2: allowed=false rule=backend
}

func ExampleAIMD_Layer_learner() {
	// An AIMD as a layer of a chain: the chain records a grant of each
	// admitted request in the compose.Held, and the Held's Finish reports
	// the request's outcome to the AIMD (as httplimit and grpclimit do
	// from the response's status).
	lim, err := adaptive.NewAIMD(adaptive.AIMDConfig{Min: 10, Max: 100, Initial: 40})
	if err != nil {
		panic(err)
	}
	chain, err := compose.All(compose.Layer{Name: "backend", Limiter: lim.Layer()})
	if err != nil {
		panic(err)
	}
	serve := func(failed bool) {
		var h compose.Held
		d, err := chain.AllowKeys(context.Background(), []string{""}, 1, &h)
		if err != nil || !d.Allowed {
			return
		}
		// ... serve the request; then:
		h.Finish(failed)
	}
	serve(false)
	serve(false)
	fmt.Println("after 2 successes:", lim.Limit().Rate)
	serve(true) // the backend answered 503
	fmt.Println("after a failure:", lim.Limit().Rate)
	// Output:
	// after 2 successes: 42
	// after a failure: 21
}
