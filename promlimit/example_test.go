package promlimit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/promlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

func Example() {
	reg := prometheus.NewRegistry() // or prometheus.DefaultRegisterer
	obs, err := promlimit.New(reg, promlimit.Config{})
	if err != nil {
		panic(err)
	}
	// One Observer for every limiter of the process, told apart by name.
	api, err := keyed.New(keyed.Config{Options: admit.Options{Name: "api", Observer: obs}, Limit: admit.PerSecond(2)})
	if err != nil {
		panic(err)
	}
	uploads, err := concurrency.New(concurrency.Config{Options: admit.Options{Name: "uploads", Observer: obs}, Max: 1})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 3 { // a burst of 2: the third is denied
		if _, err := api.Allow(ctx, admit.Request{Key: "alice", N: 1, At: now}); err != nil {
			panic(err)
		}
	}
	p, _, err := uploads.TryAcquire(ctx, admit.Request{Key: "alice", N: 1})
	if err != nil {
		panic(err)
	}
	if _, _, err := uploads.TryAcquire(ctx, admit.Request{Key: "alice", N: 1}); err != nil { // denied: in use
		panic(err)
	}
	p.Release()

	printSeries(reg, "admit_decisions_total")
	// Output:
	// admit_decisions_total{decision="allowed",kind="concurrency",limiter="uploads",rule="uploads"} 1
	// admit_decisions_total{decision="allowed",kind="rate",limiter="api",rule="api"} 2
	// admit_decisions_total{decision="denied",kind="concurrency",limiter="uploads",rule="uploads"} 1
	// admit_decisions_total{decision="denied",kind="rate",limiter="api",rule="api"} 1
}

// Two parts of a program that each want an Observer on the same registry
// share the one registered first.
func ExampleNew_shared() {
	reg := prometheus.NewRegistry()
	first, err := promlimit.New(reg, promlimit.Config{})
	if err != nil {
		panic(err)
	}
	obs, err := promlimit.New(reg, promlimit.Config{})
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		fmt.Println("already registered:", are.ExistingCollector == first)
		obs = are.ExistingCollector.(*promlimit.Observer)
	}
	fmt.Println("shared:", obs == first)

	obs.FallbackChanged(admit.FallbackEvent{Limiter: "redis", Active: true, Reason: errors.New("connection refused")})
	printSeries(reg, "admit_fallback_active", "admit_fallback_changes_total")
	// Output:
	// already registered: true
	// shared: true
	// admit_fallback_active{limiter="redis"} 1
	// admit_fallback_changes_total{limiter="redis"} 1
}

// Watch reports the state of a limiter at each scrape: here two uploads
// hold the two slots of a concurrency limit and a third waits 3s for one.
// (A manual clock stands for the system clock, so that the output is
// exact.)
func ExampleObserver_Watch() {
	reg := prometheus.NewRegistry()
	obs, err := promlimit.New(reg, promlimit.Config{})
	if err != nil {
		panic(err)
	}
	clock := admittest.NewManualClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	uploads, err := concurrency.New(concurrency.Config{Options: admit.Options{Clock: clock}, Max: 2, MaxWait: time.Minute})
	if err != nil {
		panic(err)
	}
	if err := obs.Watch("uploads", uploads); err != nil {
		panic(err)
	}

	ctx := context.Background()
	first, _, _ := uploads.Acquire(ctx, admit.Request{N: 1})
	second, _, _ := uploads.Acquire(ctx, admit.Request{N: 1})
	third := make(chan concurrency.Permit)
	go func() {
		p, _, _ := uploads.Acquire(ctx, admit.Request{N: 1})
		third <- p
	}()
	_ = clock.BlockUntilTimers(ctx, 1) // the third waits, for MaxWait at most
	printSeries(reg, "admit_limiter_in_flight", "admit_limiter_waiting")
	fmt.Println()

	clock.Advance(3 * time.Second)
	first.Release() // the third takes its slot
	p := <-third
	printSeries(reg, "admit_limiter_in_flight", "admit_limiter_waiting", "admit_limiter_waits_total", "admit_limiter_wait_seconds_total")
	second.Release()
	p.Release()
	// Output:
	// admit_limiter_in_flight{limiter="uploads"} 2
	// admit_limiter_waiting{limiter="uploads"} 1
	//
	// admit_limiter_in_flight{limiter="uploads"} 2
	// admit_limiter_wait_seconds_total{limiter="uploads"} 3
	// admit_limiter_waiting{limiter="uploads"} 0
	// admit_limiter_waits_total{limiter="uploads"} 1
}

// printSeries prints the series of the named metrics in the text format
// Prometheus scrapes, without the HELP and TYPE lines, sorted.
func printSeries(g prometheus.Gatherer, names ...string) {
	mfs, err := g.Gather()
	if err != nil {
		panic(err)
	}
	var text strings.Builder
	for _, mf := range mfs {
		if slices.Contains(names, mf.GetName()) {
			if _, err := expfmt.MetricFamilyToText(&text, mf); err != nil {
				panic(err)
			}
		}
	}
	var lines []string
	for line := range strings.Lines(text.String()) {
		if !strings.HasPrefix(line, "#") {
			lines = append(lines, strings.TrimSuffix(line, "\n"))
		}
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
}
