// Command windowerr measures what admit's two sliding-window counters
// admit against the exact sliding log, on the same traffic: the strict form
// (sliding_window: n fits iff the estimate plus n is at most B) and the
// approximate one (sliding_window_approx: iff it is below B+1, the
// "estimate < limit" of Cloudflare's description). Each limiter gets the
// same requests at the same explicit instants (no clock is read, so the
// figures are exact and the same on every run), one limiter per traffic
// and algorithm, one event per request (a burst is many requests at one
// instant).
//
// For each limit (Rate per second, Burst = Rate, so the window W is 1s)
// and each traffic, over -windows windows, it prints per algorithm the
// events admitted per window (the mean over the windows after the first,
// and as a share of the rate) and the most admitted in any interval [a,
// a+W) (the log's is at most B). Traffic:
//
//   - steady: a request every T/10 (ten times the rate), evenly;
//   - edge: B requests at the last nanosecond of every other window, and
//     a request every T/10 through the window after it (the counters'
//     worst case: the burst is weighed as if spread over its window);
//   - bursts: B requests at once, at Poisson instants one W apart on
//     average (the rate, offered in lumps);
//   - poisson1.5, poisson10: Poisson arrivals at 1.5 and 10 times the
//     rate.
//
// Usage: go run ./cmd/windowerr [-windows 1000] [-seed 1]
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/admit-go/admit"
)

var algs = []admit.Algorithm{admit.AlgSlidingWindow, admit.AlgSlidingWindowApprox, admit.AlgSlidingLog}

// start is on a whole second, so windows of 1s start on whole seconds.
var start = time.Unix(1767225600, 0)

func main() {
	windows := flag.Int("windows", 1000, "windows of traffic per run")
	seed := flag.Uint64("seed", 1, "seed of the random traffic")
	flag.Parse()
	fmt.Printf("windowerr: %d windows of 1s per run, seed %d\n\n", *windows, *seed)
	fmt.Println("| limit | traffic | offered/W | strict: per W | strict: worst W | approx: per W | approx: worst W | log: per W | log: worst W |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, rate := range []int64{3, 10, 100} {
		l := admit.PerSecond(rate)
		for _, tr := range []string{"steady", "edge", "bursts", "poisson1.5", "poisson10"} {
			r := rand.New(rand.NewPCG(*seed, uint64(rate)))
			reqs := traffic(tr, rate, *windows, r)
			fmt.Printf("| %v | %s | %.1f |", l, tr, float64(len(reqs))/float64(*windows))
			for _, alg := range algs {
				per, worst := run(alg, l, reqs, *windows)
				fmt.Printf(" %.2f (%.0f%%) | %d |", per, 100*per/float64(rate), worst)
			}
			fmt.Println()
		}
	}
}

// traffic returns the instants of the requests of traffic tr for a limit
// of rate per second, over windows seconds.
func traffic(tr string, rate int64, windows int, r *rand.Rand) []time.Time {
	end := start.Add(time.Duration(windows) * time.Second)
	t := time.Second / time.Duration(rate)
	var ts []time.Time
	poisson := func(mean float64, lump int64) {
		for at := start; ; {
			at = at.Add(time.Duration(r.ExpFloat64() * mean))
			if !at.Before(end) {
				return
			}
			for range lump {
				ts = append(ts, at)
			}
		}
	}
	switch tr {
	case "steady":
		for at := start; at.Before(end); at = at.Add(t / 10) {
			ts = append(ts, at)
		}
	case "edge":
		for w := 0; w+1 < windows; w += 2 {
			edge := start.Add(time.Duration(w+1)*time.Second - 1)
			for range rate {
				ts = append(ts, edge)
			}
			for at := edge.Add(1); at.Before(edge.Add(1 + time.Second)); at = at.Add(t / 10) {
				ts = append(ts, at)
			}
		}
	case "bursts":
		poisson(float64(time.Second), rate)
	case "poisson1.5":
		poisson(float64(t)/1.5, 1)
	case "poisson10":
		poisson(float64(t)/10, 1)
	default:
		fmt.Fprintln(os.Stderr, "unknown traffic", tr)
		os.Exit(2)
	}
	return ts
}

// run offers reqs to a fresh limiter and returns the mean admitted per
// window after the first, and the most admitted in any interval [a, a+1s).
func run(alg admit.Algorithm, l admit.Limit, reqs []time.Time, windows int) (float64, int) {
	lim, err := admit.New(alg, l)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var admitted []time.Time
	later := 0
	for _, at := range reqs {
		if lim.AllowN(at, 1) {
			admitted = append(admitted, at)
			if at.Sub(start) >= time.Second {
				later++
			}
		}
	}
	worst, j := 0, 0
	for i := range admitted {
		for !admitted[j].Add(time.Second).After(admitted[i]) {
			j++
		}
		worst = max(worst, i-j+1)
	}
	return float64(later) / float64(windows-1), worst
}
