package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/admit-go/admit/bench/internal/redisbench"
)

// result is what a child reports to the parent, on its stdout, as JSON.
type result struct {
	Offered    int     `json:"offered"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	Sent       []int64 `json:"sent"` // of each admitted check, ns from the start
	Recv       []int64 `json:"recv"`
	P50        int64   `json:"p50_ns"` // of every check's latency
	P99        int64   `json:"p99_ns"`
}

// runChild is one process of the fleet: it builds its own client and
// limiter, says "ready", waits for the parent's "go <start>" (an instant
// of the monotonic clock, in ns), offers cfg.offer checks per second of
// cfg.key from cfg.workers goroutines until start + cfg.duration, and
// writes its result.
func runChild(cfg config) error {
	lib, _ := redisbench.Lookup(cfg.limiter)
	c := newClient(cfg)
	defer c.Close()
	check, done, err := lib.New(c, redisbench.Setup{Prefix: cfg.prefix, Limit: cfg.limit(), Instances: cfg.procs})
	if err != nil {
		return err
	}
	defer done()
	ctx := context.Background()
	// Warm up on another key: the script loaded, a connection per worker.
	var wg sync.WaitGroup
	warm := make([]error, cfg.workers)
	for w := range cfg.workers {
		wg.Go(func() { _, warm[w] = check(ctx, cfg.key+":warm") })
	}
	wg.Wait()
	if err := errors.Join(warm...); err != nil {
		return fmt.Errorf("warm-up check: %w", err)
	}
	fmt.Println("ready")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return fmt.Errorf("waiting for the start: %w", err)
	}
	start, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "go "), 10, 64)
	if err != nil {
		return fmt.Errorf("bad start line %q: %w", line, err)
	}
	res := offer(ctx, cfg, check, start)
	return json.NewEncoder(os.Stdout).Encode(res)
}

// worker is one goroutine's record.
type worker struct {
	offered, errors int
	firstError      error
	sent, recv, lat []int64
}

// offer sends the checks: worker w sends its i'th at start + (w + i×W)/offer
// (or as soon after as it can, when a check took longer), so the process
// offers cfg.offer per second in all.
func offer(ctx context.Context, cfg config, check redisbench.Check, start int64) result {
	interval := float64(time.Second) / cfg.offer
	end := start + int64(cfg.duration)
	workers := make([]worker, cfg.workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rec := &workers[w]
			for i := 0; ; i++ {
				at := start + int64(float64(w+i*cfg.workers)*interval)
				if at >= end {
					return
				}
				if d := at - mono(); d > 0 {
					time.Sleep(time.Duration(d))
				}
				s := mono()
				ok, err := check(ctx, cfg.key)
				r := mono()
				rec.offered++
				rec.lat = append(rec.lat, r-s)
				switch {
				case err != nil:
					rec.errors++
					if rec.firstError == nil {
						rec.firstError = err
					}
				case ok:
					rec.sent = append(rec.sent, s-start)
					rec.recv = append(rec.recv, r-start)
				}
			}
		})
	}
	wg.Wait()
	var res result
	var lat []int64
	for _, w := range workers {
		res.Offered += w.offered
		res.Errors += w.errors
		if w.firstError != nil && res.FirstError == "" {
			res.FirstError = w.firstError.Error()
		}
		res.Sent = append(res.Sent, w.sent...)
		res.Recv = append(res.Recv, w.recv...)
		lat = append(lat, w.lat...)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50, res.P99 = lat[(len(lat)-1)/2], lat[(len(lat)-1)*99/100]
	}
	return res
}
