package admit_test

import (
	"fmt"
	"time"

	"github.com/admit-go/admit"
)

// t0 is an instant aligned on a minute, so the window examples start on a
// window edge.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func Example() {
	lim, err := admit.NewGCRA(admit.PerSecond(2)) // 2 per second, burst 2
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d := lim.DecideN(t0, 1)
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=500ms
}

func ExampleParseLimit() {
	for _, s := range []string{"100/s", "5000/1h burst 50", "1/500ms", "100 per 5m", "10/0s"} {
		l, err := admit.ParseLimit(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%-16q rate=%d period=%v burst=%d -> %v\n", s, l.Rate, l.Period, l.Burst, l)
	}
	// Output:
	// "100/s"          rate=100 period=1s burst=100 -> 100/s
	// "5000/1h burst 50" rate=5000 period=1h0m0s burst=50 -> 5000/h burst 50
	// "1/500ms"        rate=1 period=500ms burst=1 -> 1/500ms
	// "100 per 5m"     rate=100 period=5m0s burst=100 -> 100/5m
	// error: admit: invalid limit "10/0s": period "0s" must be positive
}

func ExampleNewGCRA() {
	// 3 per second, burst 2: two at once, then one every 333333333⅓ns.
	lim, _ := admit.NewGCRA(admit.PerSecond(3).WithBurst(2))
	admitted := 0
	for ms := 0; ms <= 10000; ms++ { // offered 1000/s for 10 s
		if lim.AllowN(t0.Add(time.Duration(ms)*time.Millisecond), 1) {
			admitted++
		}
	}
	fmt.Println("admitted:", admitted, "= 2 + 3×10")
	// Output:
	// admitted: 32 = 2 + 3×10
}

func ExampleGCRA_ReserveN() {
	lim, _ := admit.NewGCRA(admit.PerSecond(10).WithBurst(1))
	first := lim.ReserveN(t0, 1)
	second := lim.ReserveN(t0, 1)
	fmt.Println(first.DelayFrom(t0), second.DelayFrom(t0))
	second.CancelAt(t0) // not needed after all: its slot is given back
	third := lim.ReserveN(t0, 1)
	fmt.Println(third.DelayFrom(t0))
	// Output:
	// 0s 100ms
	// 100ms
}

func ExampleNewTokenBucket() {
	b, _ := admit.NewTokenBucket(admit.PerSecond(10))
	b.AllowN(t0, 4)
	fmt.Println(b.TokensAt(t0), b.TokensAt(t0.Add(150*time.Millisecond)))
	// Output:
	// 6 7.5
}

func ExampleNewLeakyBucket() {
	b, _ := admit.NewLeakyBucket(admit.PerMinute(60)) // holds 60, leaks 1/s
	b.AllowN(t0, 60)
	// 1.5s later it has leaked 1.5 events: room for 1 whole event.
	room := b.DecideN(t0.Add(1500*time.Millisecond), 0).Remaining
	d := b.DecideN(t0.Add(1500*time.Millisecond), 2)
	fmt.Printf("room=%d allowed=%v retry-after=%v\n", room, d.Allowed, d.RetryAfter)
	// Output:
	// room=1 allowed=false retry-after=500ms
}

func ExampleNewFixedWindow() {
	w, _ := admit.NewFixedWindow(admit.PerMinute(100))
	w.AllowN(t0.Add(59*time.Second), 100) // a full window just before the edge
	d := w.DecideN(t0.Add(59*time.Second), 1)
	fmt.Println(d.Allowed, d.RetryAfter)
	fmt.Println(w.AllowN(t0.Add(time.Minute), 100)) // and a full one just after
	// Output:
	// false 1s
	// true
}

func ExampleNewSlidingWindow() {
	w, _ := admit.NewSlidingWindow(admit.PerMinute(100))
	w.AllowN(t0.Add(59*time.Second), 100)
	// 15 s into the next window, the previous one still weighs 75%.
	d := w.DecideN(t0.Add(75*time.Second), 30)
	fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	// Output:
	// false 25 3s
}

func ExampleNewSlidingLog() {
	l, _ := admit.NewSlidingLog(admit.PerSecond(2))
	l.AllowN(t0, 1)
	l.AllowN(t0.Add(400*time.Millisecond), 1)
	d := l.DecideN(t0.Add(900*time.Millisecond), 1)
	fmt.Println(d.Allowed, d.RetryAfter) // the event at t0 leaves the window at 1s
	// Output:
	// false 100ms
}

func ExampleNew() {
	for _, a := range admit.Algorithms() {
		lim, _ := admit.New(a, admit.PerSecond(5))
		d := lim.DecideN(t0, 6)
		fmt.Println(a, d.Allowed, d.RetryAfter == admit.InfDuration)
	}
	// Output:
	// gcra false true
	// token_bucket false true
	// leaky_bucket false true
	// fixed_window false true
	// sliding_window false true
	// sliding_log false true
	// sliding_window_approx false true
}

// The share of a limit each instance of a fleet enforces when the store
// they share is down (see keyed.LocalShare).
func ExampleLimit_Share() {
	for _, n := range []int{1, 3, 4, 1000} {
		l, err := admit.PerSecond(100).Share(n)
		if err != nil {
			panic(err)
		}
		fmt.Printf("100/s among %4d instances: %v each\n", n, l)
	}
	// Output:
	// 100/s among    1 instances: 100/s each
	// 100/s among    3 instances: 100/3s burst 34 each
	// 100/s among    4 instances: 25/s each
	// 100/s among 1000 instances: 1/10s each
}
