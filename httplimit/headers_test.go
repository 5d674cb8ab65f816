package httplimit

// The fields of a response (X-RateLimit-*, RateLimit, RateLimit-Policy) by limit and kind.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/quota"
)

// TestFieldsGCRA follows one client of a GCRA limit of 2 per minute
// (T = 30 s) through admissions and refusals, checking every field.
func TestFieldsGCRA(t *testing.T) {
	lim, clk := gcra(t, admit.PerMinute(2), "api")
	next := &okHandler{}
	h := mustNew(t, lim, RemoteIP, Config{}).Handler(next)

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
	h := mustNew(t, lim, RemoteIP, Config{}).Handler(&okHandler{})
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
			h := mustNew(t, lim, RemoteIP, Config{Fields: tc.fields}).Handler(&okHandler{})
			checkResponse(t, do(h, "/", ""), 200, tc.allowed, okBody)
			checkResponse(t, do(h, "/", ""), 429, tc.refused, `{"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":10000}`+"\n")
		})
	}
}

// TestKinds: a concurrency limit's fields and body, and a quota's.
func TestKinds(t *testing.T) {
	cl, err := concurrency.New(concurrency.Config{Options: admit.Options{Name: "inflight"}, Max: 2})
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
	m, err := NewChain(chain, []KeyFunc{Const("")}, Config{})
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
	if n, _ := cl.InFlight(context.Background(), ""); n != 0 {
		t.Errorf("in flight after the requests: %d", n)
	}

	clk := time.Date(2030, 3, 10, 23, 0, 0, 0, time.UTC)
	q, err := quota.New(quota.Config{Options: admit.Options{Name: "daily", Clock: fixedClock(clk)}, Limit: 1, Period: quota.Day})
	if err != nil {
		t.Fatal(err)
	}
	h = mustNew(t, q, RemoteIP, Config{}).Handler(&okHandler{})
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

// TestDecisionEdges: a request that can never be admitted, an unlimited
// decision, odd rule names.
func TestDecisionEdges(t *testing.T) {
	never := &stub{d: admit.Decision{Limit: admit.PerSecond(5), RetryAfter: admit.InfDuration, ResetAfter: admit.InfDuration, Rule: `a "b"\c` + "\xff\n"}}
	h := mustNew(t, never, RemoteIP, Config{}).Handler(&okHandler{})
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
	h = mustNew(t, neverQuota, RemoteIP, Config{ProblemJSON: true}).Handler(&okHandler{})
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
	h = mustNew(t, unlimited, RemoteIP, Config{}).Handler(&okHandler{})
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)

	zero := &stub{d: admit.Decision{Allowed: true}} // a Guard's fail-open
	h = mustNew(t, zero, RemoteIP, Config{}).Handler(&okHandler{})
	checkResponse(t, do(h, "/", ""), 200, okType, okBody)

	// A refusal without a limit or a wait (a concurrency layer whose
	// holders have no lease) still says to wait 1 s.
	bare := &stub{d: admit.Decision{Rule: "x"}}
	h = mustNew(t, bare, RemoteIP, Config{}).Handler(&okHandler{})
	checkResponse(t, do(h, "/", ""), 429, map[string]string{
		"Content-Type": "application/json",
		"Retry-After":  "1",
	}, `{"code":"RATE_LIMIT","limit_dim":"x","retry_after_ms":1000}`+"\n")

	huge := &stub{d: admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 1, Period: admit.InfDuration, Burst: admit.Inf - 1}, Remaining: admit.Inf - 1, ResetAfter: 2 * 365 * 24 * time.Hour}}
	h = mustNew(t, huge, RemoteIP, Config{}).Handler(&okHandler{})
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
