package admittest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

// Model gives the exact decision for any timeline: here 3 per second,
// whose emission interval is 333333333⅓ns.
func ExampleModel() {
	m := admittest.Model(admit.AlgGCRA, admit.PerSecond(3))
	ctx := context.Background()
	for _, at := range []time.Time{admittest.Epoch, admittest.Epoch, admittest.Epoch, admittest.Epoch, admittest.At(333333334)} {
		d, _ := m.Allow(ctx, admit.Request{Key: "client-1", N: 1, At: at})
		fmt.Printf("%v allowed=%v remaining=%d retry-after=%v reset-after=%v\n",
			at.Sub(admittest.Epoch), d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter)
	}
	// Output:
	// 0s allowed=true remaining=2 retry-after=0s reset-after=333.333334ms
	// 0s allowed=true remaining=1 retry-after=0s reset-after=666.666667ms
	// 0s allowed=true remaining=0 retry-after=0s reset-after=1s
	// 0s allowed=false remaining=0 retry-after=333.333334ms reset-after=1s
	// 333.333334ms allowed=true remaining=0 retry-after=0s reset-after=1s
}

// A ManualClock drives a limiter's WaitN without sleeping.
func ExampleManualClock() {
	clk := admittest.NewManualClock(admittest.Epoch)
	lim, _ := admit.NewGCRA(admit.Every(time.Second), admit.Options{Clock: clk})
	lim.Allow() // uses the one event the burst holds

	ctx := context.Background()
	done := make(chan error)
	go func() { done <- lim.Wait(ctx) }()

	clk.BlockUntilTimers(ctx, 1) // Wait is parked on its timer
	clk.Advance(time.Second)     // and this fires it
	fmt.Println("Wait:", <-done, "at", clk.Now().Sub(admittest.Epoch))
	// Output:
	// Wait: <nil> at 1s
}

// CheckBound reports the interval in which a limiter admitted too much.
func ExampleCheckBound() {
	l := admit.PerSecond(10).WithBurst(3) // B = 3, T = 100ms
	admitted := []admittest.Event{
		{At: admittest.Epoch, N: 3},
		{At: admittest.At(1 * admittest.Tick), N: 1},
		{At: admittest.At(150 * time.Millisecond), N: 1},
	}
	fmt.Println(admittest.CheckBound(admit.AlgGCRA, admitted, l))
	// Output:
	// limit 10/s burst 3: 5 events admitted in [+0s, +150ms] (t = 150ms), over the bound B + ⌊t/T⌋ = 4 by 1
}
