package admit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/keyed"
)

func ExampleWait() {
	// 100 per second, burst 1: a request beyond the burst waits 10ms for
	// its slot, up to the 50ms the caller accepts.
	lim, err := keyed.New(keyed.Config{Limit: admit.PerSecond(100).WithBurst(1)})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	r := admit.Request{Key: "client", N: 1, MaxDelay: 50 * time.Millisecond}
	for range 2 {
		d, err := admit.Wait(ctx, lim, r, nil) // returns once the slot has come
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v waited=%v\n", d.Allowed, d.Delay.Round(time.Millisecond))
	}
	// Output:
	// allowed=true waited=0s
	// allowed=true waited=10ms
}
