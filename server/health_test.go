package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit/admittest"
)

func TestHealthz(t *testing.T) {
	h := healthz()
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(m, "/healthz", nil))
		want := "{\"status\":\"ok\"}\n"
		if m == http.MethodHead {
			want = ""
		}
		if w.Code != 200 || w.Body.String() != want || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %v", m, w.Code, w.Body, w.Header())
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	apiWantError(t, w, http.StatusMethodNotAllowed, apiCodeMethodNotAllowed)
	if w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("Allow %q", w.Header().Get("Allow"))
	}
	// Healthy without a policy: liveness checks nothing else.
	a := newAPIHarness(t, "")
	if w := a.do(http.MethodGet, "/healthz", ""); w.Code != 200 {
		t.Errorf("/healthz without a policy: %d", w.Code)
	}
}

// apiProbe is a probe whose error the test sets.
type apiProbe struct{ err error }

func (p *apiProbe) probe(ctx context.Context) error { return p.err }

func TestReadyz(t *testing.T) {
	clock := admittest.NewManualClock(apiT0)
	src := new(Engines)
	redis := &apiProbe{}
	ready, err := newReadiness(src, withProbe("redis", redis.probe), withProbe("other", func(context.Context) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	degraded, err := newReadiness(src, withProbe("redis", redis.probe), withDegradedReady(true))
	if err != nil {
		t.Fatal(err)
	}
	get := func(r *readiness, method string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(method, "/readyz", nil))
		return w
	}
	steps := []struct {
		name          string
		engine        bool
		probeErr      error
		r             *readiness
		status        int
		body          string
		noPolicyError bool
	}{
		{"no policy", false, nil, ready, 503, `{"status":"not ready","policy":"none","probes":{"redis":"ok","other":"ok"}}`, true},
		{"ready", true, nil, ready, 200, `{"status":"ready","policy":"loaded","probes":{"redis":"ok","other":"ok"}}`, false},
		{"redis down", true, errors.New(`dial tcp 10.0.0.1:6379: connection "refused"`), ready, 503, `{"status":"not ready","policy":"loaded","probes":{"redis":"dial tcp 10.0.0.1:6379: connection \"refused\"","other":"ok"}}`, false},
		{"degraded", true, errors.New("down"), degraded, 200, `{"status":"degraded","policy":"loaded","probes":{"redis":"down"}}`, false},
		{"degraded without policy", false, errors.New("down"), degraded, 503, `{"status":"not ready","policy":"none","probes":{"redis":"down"}}`, true},
		{"degraded, redis back", true, nil, degraded, 200, `{"status":"ready","policy":"loaded","probes":{"redis":"ok"}}`, false},
	}
	for _, s := range steps {
		if s.engine {
			src.Set(apiEngine(t, apiPolicy, clock))
		} else {
			src.Set(nil)
		}
		redis.err = s.probeErr
		w := get(s.r, http.MethodGet)
		if w.Code != s.status || strings.TrimSuffix(w.Body.String(), "\n") != s.body {
			t.Errorf("%s: %d %s, want %d %s", s.name, w.Code, w.Body, s.status, s.body)
		}
		if w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q", s.name, w.Header().Get("Cache-Control"))
		}
		if w := get(s.r, http.MethodHead); w.Code != s.status || w.Body.Len() != 0 {
			t.Errorf("%s: HEAD %d %q", s.name, w.Code, w.Body)
		}
		err := s.r.Check(context.Background())
		switch {
		case s.status == 200 && err != nil:
			t.Errorf("%s: Check: %v", s.name, err)
		case s.status != 200 && !errors.Is(err, errNotReady):
			t.Errorf("%s: Check: %v, want ErrNotReady", s.name, err)
		case s.noPolicyError != errors.Is(err, errNoEngine):
			t.Errorf("%s: Check: %v (ErrNoEngine: %v)", s.name, err, s.noPolicyError)
		}
	}
	apiWantError(t, get(ready, http.MethodPost), http.StatusMethodNotAllowed, apiCodeMethodNotAllowed)
}

// TestReadyzProbes: a probe that does not answer in time, or panics,
// fails the check. (The panicking probe has a timeout of its own, long
// enough that a loaded machine cannot make it miss: its failure must be
// the panic.)
func TestReadyzProbes(t *testing.T) {
	src := new(Engines)
	src.Set(apiEngine(t, apiPolicy, admittest.NewManualClock(apiT0)))
	slow := func(ctx context.Context) error { <-ctx.Done(); return nil }
	r, err := newReadiness(src, withProbe("slow", slow), withProbeTimeout(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Report(context.Background())
	if rep.Ready || rep.Degraded || !rep.Policy || len(rep.Probes) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if e := rep.Probes[0].Err; e == nil || !errors.Is(e, context.DeadlineExceeded) || !strings.Contains(e.Error(), "no answer within 1ms") {
		t.Errorf("slow probe: %v", e)
	}
	p, err := newReadiness(src, withProbe("panics", func(context.Context) error { panic("boom") }), withProbeTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	rep = p.Report(context.Background())
	if rep.Ready || rep.Degraded || !rep.Policy || len(rep.Probes) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if e := rep.Probes[0].Err; e == nil || !strings.Contains(e.Error(), "panicked: boom") {
		t.Errorf("panicking probe: %v", e)
	}
	for name, r := range map[string]*readiness{"slow": r, "panics": p} {
		if err := r.Check(context.Background()); !errors.Is(err, errNotReady) || !strings.Contains(err.Error(), name+": ") {
			t.Errorf("Check: %v", err)
		}
	}
}

// TestReadyzStuckProbe: a probe that ignores its context (a go-redis
// PING by default) fails at the timeout all the same, and runs once at a
// time: checks while it is stuck wait for that run, and the next check
// after it returns runs it again. Probes run at once, so two stuck probes
// cost one timeout, not two.
func TestReadyzStuckProbe(t *testing.T) {
	src := new(Engines)
	src.Set(apiEngine(t, apiPolicy, admittest.NewManualClock(apiT0)))
	release := make(chan struct{})
	var calls atomic.Int32
	stuck := func(context.Context) error {
		calls.Add(1)
		<-release
		return nil
	}
	const timeout = 50 * time.Millisecond
	r, err := newReadiness(src, withProbe("a", stuck), withProbe("b", stuck), withProbeTimeout(timeout), withDegradedReady(true))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		start := time.Now()
		rep := r.Report(context.Background())
		elapsed := time.Since(start)
		if !rep.Degraded || len(rep.Probes) != 2 {
			t.Fatalf("check %d: %+v", i, rep)
		}
		for _, p := range rep.Probes {
			if !errors.Is(p.Err, context.DeadlineExceeded) || !strings.Contains(p.Err.Error(), "no answer within 50ms") {
				t.Errorf("check %d, probe %s: %v", i, p.Name, p.Err)
			}
		}
		// A deadline, not a sleep: far above 50 ms for a loaded machine,
		// far below a probe waited for to the end (never here).
		if elapsed > timeout+time.Second {
			t.Errorf("check %d took %v; want about %v", i, elapsed, timeout)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d runs of the two stuck probes over three checks; want 2, one each", n)
	}
	// A caller that gives up is answered at once; the run goes on.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep := r.Report(ctx); !errors.Is(rep.Probes[0].Err, context.Canceled) {
		t.Errorf("canceled check: %+v", rep)
	}
	close(release)
	// Once the stuck runs end, a check runs the probes again, which now
	// answer.
	eventually(t, 10*time.Second, "the probes ran again", func() bool {
		rep := r.Report(context.Background())
		return rep.Ready && !rep.Degraded
	})
	if n := calls.Load(); n < 4 {
		t.Errorf("%d runs; want the two stuck ones and two more", n)
	}
}

func TestReadinessOptions(t *testing.T) {
	src := new(Engines)
	ok := func(context.Context) error { return nil }
	for i, opts := range [][]readyOption{
		{withProbe("", ok)},
		{withProbe("x", nil)},
		{withProbe("x", ok), withProbe("x", ok)},
		{withProbeTimeout(0)},
	} {
		if _, err := newReadiness(src, opts...); !errors.Is(err, errInvalidConfig) {
			t.Errorf("options %d: %v", i, err)
		}
	}
	if _, err := newReadiness(nil); !errors.Is(err, errInvalidConfig) {
		t.Errorf("nil source: %v", err)
	}
	// The API serves the Readiness it is given.
	r, err := newReadiness(src, withProbe("store", func(context.Context) error { return errors.New("down") }))
	if err != nil {
		t.Fatal(err)
	}
	src.Set(apiEngine(t, apiPolicy, admittest.NewManualClock(apiT0)))
	h := newAPIHarness(t, apiPolicy, withReadiness(r))
	if w := h.do(http.MethodGet, "/readyz", ""); w.Code != 503 || !strings.Contains(w.Body.String(), `"store":"down"`) {
		t.Errorf("/readyz: %d %s", w.Code, w.Body)
	}
	// And its own, without probes, when given none.
	h = newAPIHarness(t, apiPolicy)
	if w := h.do(http.MethodGet, "/readyz", ""); w.Code != 200 {
		t.Errorf("/readyz: %d %s", w.Code, w.Body)
	}
}
