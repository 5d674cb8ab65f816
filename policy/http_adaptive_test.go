package policy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/httplimit"
)

// TestHTTPAdaptive: through httplimit's middleware and NewHTTP, the
// handlers' answers teach the adaptive rules: a 503 halves an
// adaptive_rate, successes raise it; an adaptive_concurrency limit grows
// while requests are fast and shrinks when they are slow (latencies of a
// manual clock), halves on a 503, and refuses with 429 when full.
func TestHTTPAdaptive(t *testing.T) {
	p, err := Parse("adaptive.yaml", []byte(`
domain: api
keys: [route]
rules:
  - name: pay
    match: {key: route, value: GET /pay}
    adaptive_rate: {min: 1/s, max: 100/s, initial: 40/s}
  - name: work
    match: {key: route, value: GET /work}
    adaptive_concurrency: {min: 2, max: 50, initial: 4, smoothing: 1, queue_size: 0, window_samples: 1, window_time: 0s}
`))
	if err != nil {
		t.Fatal(err)
	}
	clock := admittest.NewManualClock(t0)
	e, err := newEngine(p, clocked(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	started := make(chan struct{}, 64)
	proceed := make(chan struct{}, 64)
	status := func(r *http.Request) int {
		if s, err := strconv.Atoi(r.URL.Query().Get("status")); err == nil {
			return s
		}
		return 200
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pay", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status(r))
		io.WriteString(w, "paid")
	})
	mux.HandleFunc("GET /work", func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-proceed
		w.WriteHeader(status(r))
		io.WriteString(w, "done")
	})
	d, err := NewHTTP(e, "api", HTTPDescriptor{{Key: "route", Value: httplimit.RouteOf(mux)}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := httplimit.NewDecider(d, httplimit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(mux))
	defer srv.Close()
	get := func(path string) (int, http.Header) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	payRate := func() admit.Limit { return limitOf(t, e, request("api", desc("route", "GET /pay"))) }
	workLimit := func() int64 { return limitOf(t, e, request("api", desc("route", "GET /work"))).Rate }

	// The adaptive rate: a 503 from the handler halves it, each success
	// adds one.
	if code, _ := get("/pay?status=503"); code != 503 {
		t.Fatalf("status %d", code)
	}
	if l := payRate(); l != admit.PerSecond(20) {
		t.Fatalf("after a 503: %v, want 20/s", l)
	}
	for range 3 {
		if code, _ := get("/pay"); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	if l := payRate(); l != admit.PerSecond(23) {
		t.Fatalf("after 3 successes: %v, want 23/s", l)
	}
	if code, _ := get("/pay?status=404"); code != 404 || payRate() != admit.PerSecond(24) {
		t.Fatalf("a 404 is a success: %d, %v", code, payRate())
	}

	// The adaptive concurrency limit. batch sends k requests at once,
	// lets lat pass on the clock while they are in the handler, and lets
	// them answer with status.
	batch := func(k int, lat time.Duration, status int) {
		t.Helper()
		var wg sync.WaitGroup
		for range k {
			wg.Go(func() {
				if code, _ := get("/work?status=" + strconv.Itoa(status)); code != status {
					t.Errorf("status %d, want %d", code, status)
				}
			})
		}
		for range k {
			<-started
		}
		clock.Advance(lat)
		for range k {
			proceed <- struct{}{}
		}
		wg.Wait()
	}
	// Window 1: two requests of 10ms: the latency without load is 10ms,
	// the gradient 1.5: 4 -> 6.
	batch(2, 10*time.Millisecond, 200)
	if l := workLimit(); l != 6 {
		t.Fatalf("after fast requests: %d, want 6", l)
	}
	// Window 2: three requests of 40ms, four times slower: 6 -> 3.
	batch(3, 40*time.Millisecond, 200)
	if l := workLimit(); l != 3 {
		t.Fatalf("after slow requests: %d, want 3", l)
	}
	// Full: three in flight, the fourth is refused with 429, naming the
	// rule.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { get("/work") })
	}
	for range 3 {
		<-started
	}
	code, h := get("/work")
	if code != http.StatusTooManyRequests || h.Get("RateLimit-Policy") == "" || h.Get("X-RateLimit-Limit") != "3" {
		t.Fatalf("a fourth request: %d %v", code, h)
	}
	clock.Advance(10 * time.Millisecond)
	for range 3 {
		proceed <- struct{}{}
	}
	wg.Wait()
	// Window 3: those three, 10ms again: the gradient 1.5: 3 -> 4.
	if l := workLimit(); l != 4 {
		t.Fatalf("after fast requests: %d, want 4", l)
	}
	// Window 4: a 503 halves it, to min.
	batch(1, 10*time.Millisecond, 503)
	if l := workLimit(); l != 2 {
		t.Fatalf("after a 503: %d, want 2", l)
	}
}
