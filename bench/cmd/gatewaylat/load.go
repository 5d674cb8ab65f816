package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// load is an open-loop load: requests scheduled at a constant rate,
// sent over a fixed number of kept-alive connections.
type load struct {
	rate  int           // requests per second
	conns int           // connections, each sending one request at a time
	dur   time.Duration // how long the requests are scheduled for
	warm  int           // requests each connection sends first, not counted
}

// result is what one run of a load against one target measured.
type result struct {
	sent, failed int
	lat          []time.Duration // sorted; from the release of the request to the end of its answer's body
	lag          []time.Duration // sorted; from each request's scheduled instant to its release
}

// run sends l to url and measures it. Each request has a scheduled
// instant, i/rate after the start, and is released when that instant
// has come; a connection takes the next released request as soon as it
// is free. The latency runs from the release, not from the send, so a
// request that waited for a free connection counts its wait (the
// measurement does not slow down when the server does); it does not
// count the driver's own lateness in releasing it (its timer wakes up a
// little after the instant, more so on a busy machine), which is
// reported apart, as lag. Requests not answered within timeout count as
// failed.
func (l load) run(ctx context.Context, url string, timeout time.Duration) (result, error) {
	clients := make([]*http.Client, l.conns)
	for i := range clients {
		clients[i] = &http.Client{
			Timeout: timeout,
			Transport: &http.Transport{
				Proxy:               nil,
				DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
				MaxIdleConnsPerHost: 1,
				MaxConnsPerHost:     1,
				DisableCompression:  true,
			},
		}
		defer clients[i].CloseIdleConnections()
	}
	// Warm up: open every connection, and let the target settle.
	for _, c := range clients {
		for range l.warm {
			if err := get(c, url); err != nil {
				return result{}, fmt.Errorf("warm-up: %w", err)
			}
		}
	}

	n := int(l.dur.Seconds() * float64(l.rate))
	interval := time.Second / time.Duration(l.rate)
	released := make(chan time.Time, n)
	lag := make([]time.Duration, 0, n)
	lats := make([][]time.Duration, l.conns)
	fails := make([]int, l.conns)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, n/l.conns+n/10)
			for at := range released {
				if err := get(c, url); err != nil {
					fails[i]++
					continue
				}
				lat = append(lat, time.Since(at))
			}
			lats[i] = lat
		}()
	}
	start := time.Now()
	timer := time.NewTimer(0)
	<-timer.C
	sent := 0
	for ; sent < n; sent++ {
		at := start.Add(time.Duration(sent) * interval)
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		now := time.Now()
		lag = append(lag, now.Sub(at))
		released <- now
	}
	close(released)
	wg.Wait()
	slices.Sort(lag)
	r := result{sent: sent, lag: lag}
	for i := range lats {
		r.lat = append(r.lat, lats[i]...)
		r.failed += fails[i]
	}
	slices.Sort(r.lat)
	return r, ctx.Err()
}

// get sends one GET and reads the whole answer, which must be a 200.
func get(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// pct returns the p-quantile (0 <= p <= 1) of sorted latencies, the
// nearest rank, or 0 if there are none.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
