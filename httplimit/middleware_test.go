package httplimit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/quota"
)

// TestFieldsGCRA follows one client of a GCRA limit of 2 per minute
// (T = 30 s) through admissions and refusals, checking every field.
func TestFieldsGCRA(t *testing.T) {
	lim, clk := gcra(t, admit.PerMinute(2), "api")
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP).Handler(next)

	w := do(h, "/items", "192.0.2.1:1234")
	checkResponse(t, w, 200, with(okType,
		"RateLimit-Policy", `"api";q=2;w=60`,
		"RateLimit", `"api";r=1;t=30`,
		"X-RateLimit-Limit", "2",
		"X-RateLimit-Remaining", "1",
		"X-RateLimit-Reset", "30"), okBody)

	w = do(h, "/items", "192.0.2.1:1234")
	checkResponse(t, w, 200, with(okType,
		"RateLimit-Policy", `"api";q=2;w=60`,
		"RateLimit", `"api";r=0;t=60`,
		"X-RateLimit-Limit", "2",
		"X-RateLimit-Remaining", "0",
		"X-RateLimit-Reset", "60"), okBody)

	// Refused: t is the Retry-After, Reset still the time to full capacity.
	w = do(h, "/items", "192.0.2.1:1234")
	checkResponse(t, w, 429, map[string]string{
		"Content-Type":          "application/json",
		"Retry-After":           "30",
		"RateLimit-Policy":      `"api";q=2;w=60`,
		"RateLimit":             `"api";r=0;t=30`,
		"X-RateLimit-Limit":     "2",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "60",
	}, `{"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":30000}`+"\n")

	// Another client has its own key.
	w = do(h, "/items", "198.51.100.7:1")
	if w.Code != 200 || w.Header().Get("RateLimit") != `"api";r=1;t=30` {
		t.Errorf("other client: %d %q", w.Code, w.Header().Get("RateLimit"))
	}

	// 29.5 s later: still refused, Retry-After rounded up to 1 s.
	clk.Advance(29500 * time.Millisecond)
	w = do(h, "/items", "192.0.2.1:1234")
	checkResponse(t, w, 429, map[string]string{
		"Content-Type":          "application/json",
		"Retry-After":           "1",
		"RateLimit-Policy":      `"api";q=2;w=60`,
		"RateLimit":             `"api";r=0;t=1`,
		"X-RateLimit-Limit":     "2",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "31",
	}, `{"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":500}`+"\n")

	// Waiting exactly the Retry-After is enough.
	clk.Advance(500 * time.Millisecond)
	w = do(h, "/items", "192.0.2.1:1234")
	checkResponse(t, w, 200, with(okType,
		"RateLimit-Policy", `"api";q=2;w=60`,
		"RateLimit", `"api";r=0;t=60`,
		"X-RateLimit-Limit", "2",
		"X-RateLimit-Remaining", "0",
		"X-RateLimit-Reset", "60"), okBody)
	if got := next.calls.Load(); got != 4 {
		t.Errorf("handler called %d times, want 4", got)
	}
}

// TestFieldsFractional: 3 per second (T = 333.33 ms) with burst 6 and no
// name; durations round up.
func TestFieldsFractional(t *testing.T) {
	lim, _ := gcra(t, admit.PerSecond(3).WithBurst(6), "")
	h := mustNew(t, lim, RemoteIP).Handler(&okHandler{})
	for range 6 {
		do(h, "/", "")
	}
	w := do(h, "/", "")
	checkResponse(t, w, 429, map[string]string{
		"Content-Type":          "application/json",
		"Retry-After":           "1",
		"RateLimit-Policy":      `"default";q=6;w=2`,
		"RateLimit":             `"default";r=0;t=1`,
		"X-RateLimit-Limit":     "6",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "2",
	}, `{"code":"RATE_LIMIT","limit_dim":"default","retry_after_ms":334}`+"\n")
}

func TestFieldsOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fields  Fields
		allowed map[string]string
		refused map[string]string
	}{
		{"ietf", IETFFields,
			with(okType, "RateLimit-Policy", `"api";q=1;w=10`, "RateLimit", `"api";r=0;t=10`),
			map[string]string{"Content-Type": "application/json", "Retry-After": "10", "RateLimit-Policy": `"api";q=1;w=10`, "RateLimit": `"api";r=0;t=10`}},
		{"legacy", LegacyFields,
			with(okType, "X-RateLimit-Limit", "1", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "10"),
			map[string]string{"Content-Type": "application/json", "Retry-After": "10", "X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "10"}},
		{"none", NoFields, okType,
			map[string]string{"Content-Type": "application/json", "Retry-After": "10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, _ := gcra(t, admit.Every(10*time.Second), "api")
			h := mustNew(t, lim, RemoteIP, WithFields(tc.fields)).Handler(&okHandler{})
			checkResponse(t, do(h, "/", ""), 200, tc.allowed, okBody)
			checkResponse(t, do(h, "/", ""), 429, tc.refused, `{"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":10000}`+"\n")
		})
	}
}

func TestStatusAndProblemJSON(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Minute), "per-user")
	m := mustNew(t, lim, RemoteIP, WithStatus(http.StatusServiceUnavailable), WithProblemJSON("", ""), WithFields(NoFields))
	h := m.Handler(&okHandler{})
	do(h, "/", "")
	w := do(h, "/", "")
	checkResponse(t, w, 503, map[string]string{
		"Content-Type": "application/problem+json",
		"Retry-After":  "60",
	}, `{"type":"https://iana.org/assignments/http-problem-types#temporary-reduced-capacity","title":"Temporary Reduced Capacity","status":503,"detail":"Rate limit \"per-user\" exceeded; retry after 60 seconds.","violated-policies":["per-user"],"code":"RATE_LIMIT","limit_dim":"per-user","retry_after_ms":60000}`+"\n")

	lim, _ = gcra(t, admit.Every(time.Second), "api")
	h = mustNew(t, lim, RemoteIP, WithProblemJSON("", ""), WithFields(NoFields)).Handler(&okHandler{})
	do(h, "/", "")
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type": "application/problem+json",
		"Retry-After":  "1",
	}, `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota Exceeded","status":429,"detail":"Rate limit \"api\" exceeded; retry after 1 second.","violated-policies":["api"],"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":1000}`+"\n")

	lim, _ = gcra(t, admit.Every(time.Second), "api")
	h = mustNew(t, lim, RemoteIP, WithProblemJSON("https://example.com/probs/slow-down", "Slow Down"), WithFields(NoFields)).Handler(&okHandler{})
	do(h, "/", "")
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type": "application/problem+json",
		"Retry-After":  "1",
	}, `{"type":"https://example.com/probs/slow-down","title":"Slow Down","status":429,"detail":"Rate limit \"api\" exceeded; retry after 1 second.","violated-policies":["api"],"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":1000}`+"\n")
}

func TestRefusalHandler(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Second), "api")
	var got admit.Decision
	h := mustNew(t, lim, RemoteIP, WithFields(LegacyFields), WithRefusalHandler(func(w http.ResponseWriter, r *http.Request, d admit.Decision, status int) {
		got = d
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		_, _ = w.Write([]byte("slow down"))
	})).Handler(&okHandler{})
	do(h, "/", "")
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type":          "text/plain",
		"Retry-After":           "1",
		"X-RateLimit-Limit":     "1",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "1",
	}, "slow down")
	if got.Allowed || got.Rule != "api" || got.RetryAfter != time.Second {
		t.Errorf("handler got %+v", got)
	}
}

// TestKinds: a concurrency limit's fields and body, and a quota's.
func TestKinds(t *testing.T) {
	cl, err := concurrency.New(2, concurrency.WithName("inflight"))
	if err != nil {
		t.Fatal(err)
	}
	chain, err := compose.All(compose.Layer{Slots: slots{cl}})
	if err != nil {
		t.Fatal(err)
	}
	block, release := make(chan struct{}), make(chan struct{})
	var inner http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			block <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(okBody))
	})
	m, err := NewChain(chain, []KeyFunc{Const("")})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(inner)
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- do(h, "/block", "") }()
	<-block
	checkResponse(t, do(h, "/", ""), 200, with(okType,
		"RateLimit-Policy", `"inflight";q=2;qu="concurrent-requests"`,
		"RateLimit", `"inflight";r=0`,
		"X-RateLimit-Limit", "2",
		"X-RateLimit-Remaining", "0"), okBody)
	go func() { done <- do(h, "/block", "") }()
	<-block
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type":          "application/json",
		"Retry-After":           "1",
		"RateLimit-Policy":      `"inflight";q=2;qu="concurrent-requests"`,
		"RateLimit":             `"inflight";r=0;t=1`,
		"X-RateLimit-Limit":     "2",
		"X-RateLimit-Remaining": "0",
	}, `{"code":"RATE_LIMIT","limit_dim":"inflight","retry_after_ms":1000,"kind":"CONCURRENCY_LIMIT"}`+"\n")
	close(release)
	for range 2 {
		if w := <-done; w.Code != 200 {
			t.Errorf("blocked request: %d", w.Code)
		}
	}
	if n := cl.InFlight(""); n != 0 {
		t.Errorf("in flight after the requests: %d", n)
	}

	clk := time.Date(2030, 3, 10, 23, 0, 0, 0, time.UTC)
	q, err := quota.New(1, quota.Day, quota.WithName("daily"), quota.WithClock(fixedClock(clk)))
	if err != nil {
		t.Fatal(err)
	}
	h = mustNew(t, q, RemoteIP).Handler(&okHandler{})
	checkResponse(t, do(h, "/", ""), 200, with(okType,
		"RateLimit-Policy", `"daily";q=1;w=86400`,
		"RateLimit", `"daily";r=0;t=3600`,
		"X-RateLimit-Limit", "1",
		"X-RateLimit-Remaining", "0",
		"X-RateLimit-Reset", "3600"), okBody)
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type":          "application/json",
		"Retry-After":           "3600",
		"RateLimit-Policy":      `"daily";q=1;w=86400`,
		"RateLimit":             `"daily";r=0;t=3600`,
		"X-RateLimit-Limit":     "1",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "3600",
	}, `{"code":"RATE_LIMIT","limit_dim":"daily","retry_after_ms":3600000,"kind":"QUOTA_EXCEEDED"}`+"\n")
}

// fixedClock is an admit.Clock stopped at one instant.
type fixedClock time.Time

func (c fixedClock) Now() time.Time                     { return time.Time(c) }
func (c fixedClock) NewTimer(time.Duration) admit.Timer { panic("no timers") }

// TestDecisionEdges: a request that can never be admitted, an unlimited
// decision, odd rule names.
func TestDecisionEdges(t *testing.T) {
	never := &stub{d: admit.Decision{Limit: admit.PerSecond(5), RetryAfter: admit.InfDuration, ResetAfter: admit.InfDuration, Rule: `a "b"\c` + "\xff\n"}}
	h := mustNew(t, never, RemoteIP).Handler(&okHandler{})
	// No Retry-After and no t: waiting does not help; the body says so.
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type":          "application/json",
		"RateLimit-Policy":      `"a \"b\"\\c??";q=5;w=1`,
		"RateLimit":             `"a \"b\"\\c??";r=0`,
		"X-RateLimit-Limit":     "5",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "31536000",
	}, `{"code":"RATE_LIMIT","limit_dim":"a \"b\"\\c\ufffd\u000a","never":true}`+"\n")
	neverQuota := &stub{d: admit.Decision{Limit: admit.PerSecond(5), Remaining: 3, RetryAfter: admit.InfDuration, ResetAfter: 2e9, Rule: "q", Kind: admit.KindQuota}}
	h = mustNew(t, neverQuota, RemoteIP, WithProblemJSON("", "")).Handler(&okHandler{})
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type":          "application/problem+json",
		"RateLimit-Policy":      `"q";q=5;w=1`,
		"RateLimit":             `"q";r=3`,
		"X-RateLimit-Limit":     "5",
		"X-RateLimit-Remaining": "3",
		"X-RateLimit-Reset":     "2",
	}, `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota Exceeded","status":429,`+
		`"detail":"Quota \"q\" exhausted; the request costs more than the limit ever allows, and can never be admitted.",`+
		`"violated-policies":["q"],"code":"RATE_LIMIT","limit_dim":"q","never":true,"kind":"QUOTA_EXCEEDED"}`+"\n")

	unlimited := &stub{d: admit.Decision{Allowed: true, Limit: admit.Unlimited, Remaining: admit.Inf}}
	h = mustNew(t, unlimited, RemoteIP).Handler(&okHandler{})
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)

	zero := &stub{d: admit.Decision{Allowed: true}} // a Guard's fail-open
	h = mustNew(t, zero, RemoteIP).Handler(&okHandler{})
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)

	// A refusal without a limit or a wait (a concurrency layer whose
	// holders have no lease) still says to wait 1 s.
	bare := &stub{d: admit.Decision{Rule: "x"}}
	h = mustNew(t, bare, RemoteIP).Handler(&okHandler{})
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type": "application/json",
		"Retry-After":  "1",
	}, `{"code":"RATE_LIMIT","limit_dim":"x","retry_after_ms":1000}`+"\n")

	huge := &stub{d: admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 1, Period: admit.InfDuration, Burst: admit.Inf - 1}, Remaining: admit.Inf - 1, ResetAfter: 2 * MaxRetryAfter}}
	h = mustNew(t, huge, RemoteIP).Handler(&okHandler{})
	checkResponse(t, do(h, "/", ""), 200, with(okType,
		"RateLimit-Policy", `"default";q=999999999999999;w=999999999999999`,
		"RateLimit", `"default";r=999999999999999;t=31536000`,
		"X-RateLimit-Limit", "999999999999999",
		"X-RateLimit-Remaining", "999999999999999",
		"X-RateLimit-Reset", "31536000"), okBody)
}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		l    admit.Limit
		want int64
		ok   bool
	}{
		{admit.PerMinute(100), 60, true},
		{admit.PerSecond(10).WithBurst(50), 5, true},
		{admit.Every(500 * time.Millisecond), 1, true},
		{admit.Limit{Rate: 3, Period: 700 * time.Millisecond, Burst: 3}, 1, true},
		{admit.Limit{Rate: 3, Period: 4 * time.Second, Burst: 1}, 2, true},
		{admit.Every(90 * time.Second), 90, true},
		{admit.PerDay(5000), 86400, true},
		{admit.Limit{Rate: 0, Period: time.Second, Burst: 0}, 0, false},
		{admit.Limit{Rate: 5, Burst: 5}, 0, false},
		{admit.Limit{Rate: 1, Period: admit.InfDuration, Burst: admit.Inf}, sfMax, true},
	} {
		q := tc.l.Burst
		if q == 0 {
			q = tc.l.Rate
		}
		if got, ok := window(tc.l, q); got != tc.want || ok != tc.ok {
			t.Errorf("window(%+v) = %d, %v; want %d, %v", tc.l, got, ok, tc.want, tc.ok)
		}
	}
}

func TestExemptions(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Hour), "api")
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP,
		WithExemptPaths("/healthz", "/readyz"),
		WithExemptPrefixes("/metrics", "/debug/"),
		WithExempt(func(r *http.Request) bool { return r.Header.Get("X-Internal") == "yes" }),
	).Handler(next)
	// Use up the hour.
	if w := do(h, "/api", ""); w.Code != 200 {
		t.Fatalf("first request: %d", w.Code)
	}
	for _, tc := range []struct {
		path   string
		header []string
		exempt bool
	}{
		{"/healthz", nil, true},
		{"/readyz", nil, true},
		{"/healthz/", nil, false},
		{"/healthzz", nil, false},
		{"/metrics", nil, true},
		{"/metrics/", nil, true},
		{"/metrics/go", nil, true},
		{"/metricsx", nil, false},
		{"/debug", nil, false},
		{"/debug/", nil, true},
		{"/debug/pprof", nil, true},
		{"/api", []string{"X-Internal", "yes"}, true},
		{"/api", []string{"X-Internal", "no"}, false},
		{"/metrics/../api", nil, false},
		{"/metrics/./x", nil, false},
		{"//healthz", nil, false},
		{"/metrics//x", nil, false},
		{"/metrics/..", nil, false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.URL.Path = tc.path
		for i := 0; i+1 < len(tc.header); i += 2 {
			r.Header.Set(tc.header[i], tc.header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if exempt := w.Code == 200; exempt != tc.exempt {
			t.Errorf("%s %v: status %d, want exempt=%v", tc.path, tc.header, w.Code, tc.exempt)
		}
		if tc.exempt && w.Header().Get("RateLimit") != "" {
			t.Errorf("%s: an exempt response has RateLimit %q", tc.path, w.Header().Get("RateLimit"))
		}
	}
}

func TestCleanPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/a": true, "/a/": true, "/a/b": true, "/a.b/..c": true,
		"": false, "a": false, "//": false, "/a//b": false, "/./a": false, "/a/.": false,
		"/a/..": false, "/../a": false, "/a/../": false,
	} {
		if got := cleanPath(p); got != want {
			t.Errorf("cleanPath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestShadow(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Hour), "api")
	var ev events
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP, WithShadow(true), WithObserver(ev.observe)).Handler(next)
	for range 3 {
		checkResponse(t, do(h, "/", "192.0.2.1:1"), 200, okType, okBody)
	}
	// An unkeyable request is served too.
	checkResponse(t, do(h, "/", "@"), 200, okType, okBody)
	if got, want := ev.outcomes(), "admitted(shadow) refused(shadow) refused(shadow) unkeyed(shadow)"; got != want {
		t.Errorf("outcomes %q, want %q", got, want)
	}
	if d := ev.list[1].Decision; d.Allowed || d.RetryAfter != time.Hour || d.Rule != "api" || ev.list[1].Key != "192.0.2.1" {
		t.Errorf("shadow refusal event: %+v", ev.list[1])
	}
	if next.calls.Load() != 4 {
		t.Errorf("handler called %d times, want 4", next.calls.Load())
	}
}

func TestFailurePolicies(t *testing.T) {
	down := errors.New("dial tcp 10.0.0.7:6379: connect: connection refused")
	lim := &stub{d: admit.Decision{Rule: "redis"}, err: down}

	var ev events
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP, WithObserver(ev.observe)).Handler(next)
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)
	if got := ev.outcomes(); got != "failed-open" || !errors.Is(ev.list[0].Err, down) {
		t.Errorf("fail open: %q %v", got, ev.list[0].Err)
	}

	ev = events{}
	h = mustNew(t, lim, RemoteIP, WithFailClosed(0), WithObserver(ev.observe)).Handler(next)
	checkResponse(t, do(h, "/", ""), 503, map[string]string{
		"Content-Type": "application/json",
		"Retry-After":  "1",
	}, `{"code":"RATE_LIMIT","limit_dim":"fail-closed","retry_after_ms":1000}`+"\n")
	if got := ev.outcomes(); got != "failed-closed" {
		t.Errorf("fail closed: %q", got)
	}

	h = mustNew(t, lim, RemoteIP, WithFailClosed(2500*time.Millisecond), WithProblemJSON("", "")).Handler(next)
	checkResponse(t, do(h, "/", ""), 503, map[string]string{
		"Content-Type": "application/problem+json",
		"Retry-After":  "3",
	}, `{"type":"https://iana.org/assignments/http-problem-types#temporary-reduced-capacity","title":"Temporary Reduced Capacity","status":503,"detail":"The rate limiter is unavailable; retry after 3 seconds.","violated-policies":["fail-closed"],"code":"RATE_LIMIT","limit_dim":"fail-closed","retry_after_ms":2500}`+"\n")

	// The last option wins.
	h = mustNew(t, lim, RemoteIP, WithFailClosed(0), WithFailOpen()).Handler(next)
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)

	// Shadow mode serves what fail closed would refuse.
	h = mustNew(t, lim, RemoteIP, WithFailClosed(0), WithShadow(true)).Handler(next)
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)
}

// TestCanceled: the caller's context ends while the limiter decides.
func TestCanceled(t *testing.T) {
	lim := &stub{err: context.Canceled}
	var ev events
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP, WithObserver(ev.observe)).Handler(next)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	checkResponse(t, w, 503, nil, "")
	if ev.outcomes() != "canceled" || next.calls.Load() != 0 {
		t.Errorf("outcomes %q, handler calls %d", ev.outcomes(), next.calls.Load())
	}
	// context.Canceled with a live request context is a failure.
	ev = events{}
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)
	if ev.outcomes() != "failed-open" {
		t.Errorf("outcomes %q", ev.outcomes())
	}
}

func TestUnkeyed(t *testing.T) {
	lim, _ := gcra(t, admit.PerSecond(10), "api")
	var ev events
	next := &okHandler{}
	h := mustNew(t, lim, Header("X-User"), WithObserver(ev.observe), WithMaxKeyLength(16)).Handler(next)
	checkResponse(t, do(h, "/", ""), 400, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_MISSING"}`+"\n")
	checkResponse(t, do(h, "/", "", "X-User", strings.Repeat("u", 17)), 431, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_TOO_LONG"}`+"\n")
	checkResponse(t, do(h, "/", "", "X-User", strings.Repeat("u", 16)), 200, with(okType,
		"RateLimit-Policy", `"api";q=10;w=1`,
		"RateLimit", `"api";r=9;t=1`,
		"X-RateLimit-Limit", "10",
		"X-RateLimit-Remaining", "9",
		"X-RateLimit-Reset", "1"), okBody)
	if got := ev.outcomes(); got != "unkeyed unkeyed admitted" {
		t.Errorf("outcomes %q", got)
	}
	if !errors.Is(ev.list[0].Err, ErrNoKey) || !errors.Is(ev.list[1].Err, ErrKeyTooLong) {
		t.Errorf("errors %v, %v", ev.list[0].Err, ev.list[1].Err)
	}

	// Skipped, but a key too long is still refused.
	ev = events{}
	h = mustNew(t, lim, Header("X-User"), WithSkipUnkeyed(), WithObserver(ev.observe), WithMaxKeyLength(16)).Handler(next)
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)
	checkResponse(t, do(h, "/", "", "X-User", strings.Repeat("u", 1<<20)), 431, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_TOO_LONG"}`+"\n")
	if got := ev.outcomes(); got != "skipped unkeyed" {
		t.Errorf("outcomes %q", got)
	}

	// problem+json.
	h = mustNew(t, lim, Header("X-User"), WithProblemJSON("", "")).Handler(next)
	checkResponse(t, do(h, "/", ""), 400, map[string]string{"Content-Type": "application/problem+json"},
		`{"type":"about:blank","title":"Bad Request","status":400,"detail":"the request carries no usable key for its rate limit","code":"KEY_MISSING"}`+"\n")
	checkResponse(t, do(h, "/", "", "X-User", strings.Repeat("u", 5000)), 431, map[string]string{"Content-Type": "application/problem+json"},
		`{"type":"about:blank","title":"Request Header Fields Too Large","status":431,"detail":"the request's rate-limit key is too long","code":"KEY_TOO_LONG"}`+"\n")
}

// TestLimiterRequestErrors: errors of the limiter about the request are
// refused whatever the failure policy.
func TestLimiterRequestErrors(t *testing.T) {
	short, err := keyed.New(admit.AlgGCRA, admit.PerSecond(10), keyed.WithMaxKeyLength(4))
	if err != nil {
		t.Fatal(err)
	}
	next := &okHandler{}
	h := mustNew(t, short, Header("X-User"), WithSkipUnkeyed()).Handler(next)
	checkResponse(t, do(h, "/", "", "X-User", "12345"), 431, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_TOO_LONG"}`+"\n")

	bad := &stub{d: admit.Decision{RetryAfter: admit.InfDuration}, err: admit.ErrInvalidCost}
	h = mustNew(t, bad, RemoteIP).Handler(next)
	checkResponse(t, do(h, "/", ""), 400, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_INVALID"}`+"\n")
	if next.calls.Load() != 0 {
		t.Errorf("handler called %d times", next.calls.Load())
	}
}

func TestCost(t *testing.T) {
	lim := &stub{d: admit.Decision{Allowed: true}}
	var ev events
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP, WithObserver(ev.observe), WithCost(func(r *http.Request) (int64, error) {
		switch r.URL.Path {
		case "/neg":
			return -1, nil
		case "/err":
			return 0, errors.New("no content length")
		}
		return r.ContentLength, nil
	})).Handler(next)
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("12345"))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || len(lim.costs) != 1 || lim.costs[0] != 5 || ev.list[0].Cost != 5 {
		t.Errorf("cost: %d %v %+v", w.Code, lim.costs, ev.list)
	}
	for _, p := range []string{"/neg", "/err"} {
		checkResponse(t, do(h, p, ""), 400, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_INVALID"}`+"\n")
	}
	if len(lim.costs) != 1 || !errors.Is(ev.list[1].Err, ErrInvalidCost) || !errors.Is(ev.list[2].Err, ErrNoKey) {
		t.Errorf("limiter called with %v; events %+v", lim.costs, ev.list)
	}
}

func TestObserverEvents(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Hour), "api")
	var ev events
	h := mustNew(t, lim, RemoteIP, WithObserver(ev.observe)).Handler(&okHandler{})
	do(h, "/", "192.0.2.9:80")
	do(h, "/", "192.0.2.9:80")
	do(h, "/", "@")
	if got := ev.outcomes(); got != "admitted refused unkeyed" {
		t.Fatalf("outcomes %q", got)
	}
	e := ev.list[0]
	if e.Key != "192.0.2.9" || e.Cost != 1 || !e.Decision.Allowed || e.Err != nil || e.Shadow {
		t.Errorf("admitted event %+v", e)
	}
	e = ev.list[1]
	if e.Key != "192.0.2.9" || e.Decision.Allowed || e.Decision.RetryAfter != time.Hour || e.Err != nil {
		t.Errorf("refused event %+v", e)
	}
	if !errors.Is(ev.list[2].Err, ErrNoClientIP) {
		t.Errorf("unkeyed event %+v", ev.list[2])
	}
	for o := Admitted; o <= Canceled+1; o++ {
		if o.String() == "" {
			t.Errorf("Outcome(%d) has no name", o)
		}
	}
	if Outcome(200).String() != "Outcome(200)" {
		t.Errorf("Outcome(200) = %q", Outcome(200).String())
	}
}

func TestConstructors(t *testing.T) {
	lim, _ := gcra(t, admit.PerSecond(1), "")
	chain, _ := compose.All(compose.Layer{Limiter: lim})
	var nilLim *keyed.Limiter
	var nilDecider *decider
	for _, tc := range []struct {
		name string
		err  error
		make func() (*Middleware, error)
	}{
		{"nil limiter", ErrNilArgument, func() (*Middleware, error) { return New(nil, RemoteIP) }},
		{"typed nil limiter", ErrNilArgument, func() (*Middleware, error) { return New(nilLim, RemoteIP) }},
		{"nil key", ErrNilArgument, func() (*Middleware, error) { return New(lim, nil) }},
		{"nil chain", ErrNilArgument, func() (*Middleware, error) { return NewChain(nil, nil) }},
		{"chain keys", ErrInvalidOption, func() (*Middleware, error) { return NewChain(chain, []KeyFunc{RemoteIP, RemoteIP}) }},
		{"chain nil key", ErrNilArgument, func() (*Middleware, error) { return NewChain(chain, []KeyFunc{nil}) }},
		{"nil decider", ErrNilArgument, func() (*Middleware, error) { return NewDecider(nil) }},
		{"typed nil decider", ErrNilArgument, func() (*Middleware, error) { return NewDecider(nilDecider) }},
		{"decider cost", ErrInvalidOption, func() (*Middleware, error) {
			return NewDecider(&decider{}, WithCost(func(*http.Request) (int64, error) { return 1, nil }))
		}},
		{"status 200", ErrInvalidOption, func() (*Middleware, error) { return New(lim, RemoteIP, WithStatus(200)) }},
		{"status 600", ErrInvalidOption, func() (*Middleware, error) { return New(lim, RemoteIP, WithStatus(600)) }},
		{"fields", ErrInvalidOption, func() (*Middleware, error) { return New(lim, RemoteIP, WithFields(8)) }},
		{"problem title", ErrInvalidOption, func() (*Middleware, error) { return New(lim, RemoteIP, WithProblemJSON("urn:x", "")) }},
		{"exempt path", ErrInvalidOption, func() (*Middleware, error) { return New(lim, RemoteIP, WithExemptPaths("healthz")) }},
		{"exempt prefix", ErrInvalidOption, func() (*Middleware, error) { return New(lim, RemoteIP, WithExemptPrefixes("")) }},
		{"fail closed", ErrInvalidOption, func() (*Middleware, error) { return New(lim, RemoteIP, WithFailClosed(-1)) }},
		{"max key length", ErrInvalidOption, func() (*Middleware, error) { return New(lim, RemoteIP, WithMaxKeyLength(0)) }},
	} {
		m, err := tc.make()
		if m != nil || !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, m, err, tc.err)
		}
	}
	if _, err := New(lim, RemoteIP, nil, WithStatus(503)); err != nil {
		t.Errorf("a nil option: %v", err)
	}
}
