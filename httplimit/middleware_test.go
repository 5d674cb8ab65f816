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
	"github.com/admit-go/admit/keyed"
)

func TestStatusAndProblemJSON(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Minute), "per-user")
	m := mustNew(t, lim, RemoteIP, Config{Status: http.StatusServiceUnavailable, ProblemJSON: true, Fields: NoFields})
	h := m.Handler(&okHandler{})
	do(h, "/", "")
	w := do(h, "/", "")
	checkResponse(t, w, 503, map[string]string{
		"Content-Type": "application/problem+json",
		"Retry-After":  "60",
	}, `{"type":"https://iana.org/assignments/http-problem-types#temporary-reduced-capacity","title":"Temporary Reduced Capacity","status":503,"detail":"Rate limit \"per-user\" exceeded; retry after 60 seconds.","violated-policies":["per-user"],"code":"RATE_LIMIT","limit_dim":"per-user","retry_after_ms":60000}`+"\n")

	lim, _ = gcra(t, admit.Every(time.Second), "api")
	h = mustNew(t, lim, RemoteIP, Config{ProblemJSON: true, Fields: NoFields}).Handler(&okHandler{})
	do(h, "/", "")
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type": "application/problem+json",
		"Retry-After":  "1",
	}, `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota Exceeded","status":429,"detail":"Rate limit \"api\" exceeded; retry after 1 second.","violated-policies":["api"],"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":1000}`+"\n")

	lim, _ = gcra(t, admit.Every(time.Second), "api")
	h = mustNew(t, lim, RemoteIP, Config{ProblemJSON: true, ProblemType: "https://example.com/probs/slow-down", ProblemTitle: "Slow Down", Fields: NoFields}).Handler(&okHandler{})
	do(h, "/", "")
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type": "application/problem+json",
		"Retry-After":  "1",
	}, `{"type":"https://example.com/probs/slow-down","title":"Slow Down","status":429,"detail":"Rate limit \"api\" exceeded; retry after 1 second.","violated-policies":["api"],"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":1000}`+"\n")
}

func TestRefusalHandler(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Second), "api")
	var got admit.Decision
	h := mustNew(t, lim, RemoteIP, Config{Fields: LegacyFields, RefusalHandler: func(w http.ResponseWriter, r *http.Request, d admit.Decision, status int) {
		got = d
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		_, _ = w.Write([]byte("slow down"))
	}}).Handler(&okHandler{})
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

func (c fixedClock) Now() time.Time                     { return time.Time(c) }
func (c fixedClock) NewTimer(time.Duration) admit.Timer { panic("no timers") }

func TestExemptions(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Hour), "api")
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP, Config{ExemptPaths: []string{"/healthz", "/readyz"}, ExemptPrefixes: []string{"/metrics", "/debug/"}, Exempt: func(r *http.Request) bool { return r.Header.Get("X-Internal") == "yes" }}).Handler(next)
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
	h := mustNew(t, lim, RemoteIP, Config{Shadow: true, Observe: ev.observe}).Handler(next)
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
	h := mustNew(t, lim, RemoteIP, Config{Observe: ev.observe}).Handler(next)
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)
	if got := ev.outcomes(); got != "failed-open" || !errors.Is(ev.list[0].Err, down) {
		t.Errorf("fail open: %q %v", got, ev.list[0].Err)
	}

	ev = events{}
	h = mustNew(t, lim, RemoteIP, Config{FailClosed: true, Observe: ev.observe}).Handler(next)
	checkResponse(t, do(h, "/", ""), 503, map[string]string{
		"Content-Type": "application/json",
		"Retry-After":  "1",
	}, `{"code":"RATE_LIMIT","limit_dim":"fail-closed","retry_after_ms":1000}`+"\n")
	if got := ev.outcomes(); got != "failed-closed" {
		t.Errorf("fail closed: %q", got)
	}

	h = mustNew(t, lim, RemoteIP, Config{FailClosed: true, FailClosedRetryAfter: 2500 * time.Millisecond, ProblemJSON: true}).Handler(next)
	checkResponse(t, do(h, "/", ""), 503, map[string]string{
		"Content-Type": "application/problem+json",
		"Retry-After":  "3",
	}, `{"type":"https://iana.org/assignments/http-problem-types#temporary-reduced-capacity","title":"Temporary Reduced Capacity","status":503,"detail":"The rate limiter is unavailable; retry after 3 seconds.","violated-policies":["fail-closed"],"code":"RATE_LIMIT","limit_dim":"fail-closed","retry_after_ms":2500}`+"\n")

	// Shadow mode serves what fail closed would refuse.
	h = mustNew(t, lim, RemoteIP, Config{FailClosed: true, Shadow: true}).Handler(next)
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)
}

// TestCanceled: the caller's context ends while the limiter decides.
func TestCanceled(t *testing.T) {
	lim := &stub{err: context.Canceled}
	var ev events
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP, Config{Observe: ev.observe}).Handler(next)
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
	h := mustNew(t, lim, Header("X-User"), Config{Observe: ev.observe, MaxKeyLength: 16}).Handler(next)
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
	if !errors.Is(ev.list[0].Err, ErrNoKey) || !errors.Is(ev.list[1].Err, admit.ErrKeyTooLong) {
		t.Errorf("errors %v, %v", ev.list[0].Err, ev.list[1].Err)
	}

	// Skipped, but a key too long is still refused.
	ev = events{}
	h = mustNew(t, lim, Header("X-User"), Config{SkipUnkeyed: true, Observe: ev.observe, MaxKeyLength: 16}).Handler(next)
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)
	checkResponse(t, do(h, "/", "", "X-User", strings.Repeat("u", 1<<20)), 431, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_TOO_LONG"}`+"\n")
	if got := ev.outcomes(); got != "skipped unkeyed" {
		t.Errorf("outcomes %q", got)
	}

	// problem+json.
	h = mustNew(t, lim, Header("X-User"), Config{ProblemJSON: true}).Handler(next)
	checkResponse(t, do(h, "/", ""), 400, map[string]string{"Content-Type": "application/problem+json"},
		`{"type":"about:blank","title":"Bad Request","status":400,"detail":"the request carries no usable key for its rate limit","code":"KEY_MISSING"}`+"\n")
	checkResponse(t, do(h, "/", "", "X-User", strings.Repeat("u", 5000)), 431, map[string]string{"Content-Type": "application/problem+json"},
		`{"type":"about:blank","title":"Request Header Fields Too Large","status":431,"detail":"the request's rate-limit key is too long","code":"KEY_TOO_LONG"}`+"\n")
}

// TestLimiterRequestErrors: errors of the limiter about the request are
// refused whatever the failure policy.
func TestLimiterRequestErrors(t *testing.T) {
	short, err := keyed.New(keyed.Config{Limit: admit.PerSecond(10), MaxKeyLength: 4})
	if err != nil {
		t.Fatal(err)
	}
	next := &okHandler{}
	h := mustNew(t, short, Header("X-User"), Config{SkipUnkeyed: true}).Handler(next)
	checkResponse(t, do(h, "/", "", "X-User", "12345"), 431, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_TOO_LONG"}`+"\n")

	bad := &stub{d: admit.Decision{RetryAfter: admit.InfDuration}, err: admit.ErrInvalidCost}
	h = mustNew(t, bad, RemoteIP, Config{}).Handler(next)
	checkResponse(t, do(h, "/", ""), 400, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_INVALID"}`+"\n")
	if next.calls.Load() != 0 {
		t.Errorf("handler called %d times", next.calls.Load())
	}
}

func TestCost(t *testing.T) {
	lim := &stub{d: admit.Decision{Allowed: true}}
	var ev events
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP, Config{Observe: ev.observe, Cost: func(r *http.Request) (int64, error) {
		switch r.URL.Path {
		case "/neg":
			return -1, nil
		case "/err":
			return 0, errors.New("no content length")
		}
		return r.ContentLength, nil
	}}).Handler(next)
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("12345"))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || len(lim.costs) != 1 || lim.costs[0] != 5 || ev.list[0].Cost != 5 {
		t.Errorf("cost: %d %v %+v", w.Code, lim.costs, ev.list)
	}
	for _, p := range []string{"/neg", "/err"} {
		checkResponse(t, do(h, p, ""), 400, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_INVALID"}`+"\n")
	}
	if len(lim.costs) != 1 || !errors.Is(ev.list[1].Err, admit.ErrInvalidCost) || !errors.Is(ev.list[2].Err, ErrNoKey) {
		t.Errorf("limiter called with %v; events %+v", lim.costs, ev.list)
	}
}

func TestObserverEvents(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Hour), "api")
	var ev events
	h := mustNew(t, lim, RemoteIP, Config{Observe: ev.observe}).Handler(&okHandler{})
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
		{"nil limiter", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(nil, RemoteIP, Config{}) }},
		{"typed nil limiter", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(nilLim, RemoteIP, Config{}) }},
		{"nil key", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(lim, nil, Config{}) }},
		{"nil chain", admit.ErrInvalidConfig, func() (*Middleware, error) { return NewChain(nil, nil, Config{}) }},
		{"chain keys", admit.ErrInvalidConfig, func() (*Middleware, error) { return NewChain(chain, []KeyFunc{RemoteIP, RemoteIP}, Config{}) }},
		{"chain nil key", admit.ErrInvalidConfig, func() (*Middleware, error) { return NewChain(chain, []KeyFunc{nil}, Config{}) }},
		{"nil decider", admit.ErrInvalidConfig, func() (*Middleware, error) { return NewDecider(nil, Config{}) }},
		{"typed nil decider", admit.ErrInvalidConfig, func() (*Middleware, error) { return NewDecider(nilDecider, Config{}) }},
		{"decider cost", admit.ErrInvalidConfig, func() (*Middleware, error) {
			return NewDecider(&decider{}, Config{Cost: func(*http.Request) (int64, error) { return 1, nil }})
		}},
		{"status 200", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(lim, RemoteIP, Config{Status: 200}) }},
		{"status 600", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(lim, RemoteIP, Config{Status: 600}) }},
		{"fields", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(lim, RemoteIP, Config{Fields: 8}) }},
		{"problem title", admit.ErrInvalidConfig, func() (*Middleware, error) {
			return New(lim, RemoteIP, Config{ProblemJSON: true, ProblemType: "urn:x"})
		}},
		{"exempt path", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(lim, RemoteIP, Config{ExemptPaths: []string{"healthz"}}) }},
		{"exempt prefix", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(lim, RemoteIP, Config{ExemptPrefixes: []string{""}}) }},
		{"fail closed", admit.ErrInvalidConfig, func() (*Middleware, error) {
			return New(lim, RemoteIP, Config{FailClosed: true, FailClosedRetryAfter: -1})
		}},
		{"max key length", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(lim, RemoteIP, Config{MaxKeyLength: -1}) }},
		{"no fields and others", admit.ErrInvalidConfig, func() (*Middleware, error) { return New(lim, RemoteIP, Config{Fields: NoFields | IETFFields}) }},
		{"problem type without problem", admit.ErrInvalidConfig, func() (*Middleware, error) {
			return New(lim, RemoteIP, Config{ProblemType: "urn:x", ProblemTitle: "X"})
		}},
	} {
		m, err := tc.make()
		if m != nil || !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, m, err, tc.err)
		}
	}
	if _, err := New(lim, RemoteIP, Config{Status: 503}); err != nil {
		t.Errorf("status 503: %v", err)
	}
	// The zero Config gives the defaults.
	m, err := New(lim, RemoteIP, Config{})
	if err != nil || m.status != 429 || m.fields != IETFFields|LegacyFields || m.maxKeyLen != 4096 || m.failRetry != time.Second || m.failure == nil {
		t.Errorf("the zero Config: %+v, %v", m, err)
	}
}
