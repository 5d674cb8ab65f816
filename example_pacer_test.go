package admit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

func ExampleNewPacer() {
	// A manual clock makes the example deterministic; real code leaves the
	// default, the system clock.
	clk := admittest.NewManualClock(t0)
	p, err := admit.NewPacer(admit.PerSecond(3), admit.PacerConfig{
		Options:  admit.Options{Clock: clk},
		MaxQueue: 1,
	})
	if err != nil {
		panic(err)
	}

	at, _ := p.Take() // the pacer is idle: released at once
	fmt.Println("first:", at.Sub(t0))

	done := make(chan time.Time)
	go func() {
		at, _ := p.Take() // waits for the next slot
		done <- at
	}()
	ctx := context.Background()
	clk.BlockUntilTimers(ctx, 1) // the second caller is queued

	_, err = p.Take() // the queue holds one caller at most
	fmt.Println("third:", errors.Is(err, admit.ErrQueueFull))

	clk.Advance(333333334 * time.Nanosecond) // ⌈1s/3⌉: the second slot
	fmt.Println("second:", (<-done).Sub(t0))
	// Output:
	// first: 0s
	// third: true
	// second: 333.333334ms
}
