package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/policy"
)

// apiT0 is the instant the API tests start at: 10 s into a minute, so
// that the windows of Envoy's fixed-window rules end 50 s later.
var apiT0 = time.Date(2026, 3, 2, 12, 0, 10, 0, time.UTC)

// apiPolicy is the policy of most API tests, in the domain "api".
const apiPolicy = `
version: 1
domain: api
tier_tables:
  plans:
    default: free
    tiers:
      free:
        rate: 2/s
      pro:
        rate: 100/s
    assign:
      acme: pro
rules:
  - name: per-user
    match: user
    rate: 2/s
  - name: per-tenant
    match: tenant
    tiers: plans
  - name: jobs
    match: job
    concurrency: 2
  - name: internal
    match:
      - key: caller
        value: internal
    unlimited: true
  - name: experiment
    match: experiment
    rate: 1/min
    shadow: true
  - name: reports
    match: report
    quota: 3/day
  - name: per-ip
    match: remote_address
    rate: 10/s
    exempt:
      remote_address: [127.0.0.1]
  - name: login
    match:
      - key: route
        value: /login
    rate: 1/min
    replaces: [per-route]
  - name: per-route
    match: route
    rate: 100/s
`

// apiEngine returns an engine enforcing yaml on clock.
func apiEngine(t testing.TB, yaml string, clock *admittest.ManualClock) *policy.Engine {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	e, err := policy.NewEngine(p, storesOf(nil, clock))
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// apiHarness is an API on a manual clock, deciding with the engine of
// src (apiPolicy unless changed).
type apiHarness struct {
	api    *API
	src    *Engines
	clock  *admittest.ManualClock
	leases *leaseTable
}

func newAPIHarness(t testing.TB, yaml string, opts ...apiOption) *apiHarness {
	t.Helper()
	clock := admittest.NewManualClock(apiT0)
	src := new(Engines)
	if yaml != "" {
		src.Set(apiEngine(t, yaml, clock))
	}
	leases, err := newLeases(withLeaseClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leases.Close() })
	a, err := newAPI(src, append([]apiOption{withLeases(leases)}, opts...)...)
	if err != nil {
		t.Fatalf("NewAPI: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return &apiHarness{api: a, src: src, clock: clock, leases: leases}
}

// do sends a request to the API and returns the recorded answer.
func (h *apiHarness) do(method, path, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.api.ServeHTTP(w, r)
	return w
}

func (h *apiHarness) post(path, body string) *httptest.ResponseRecorder {
	return h.do(http.MethodPost, path, body)
}

// apiResponse is the body of a check or an acquire.
type apiResponse struct {
	Allowed       bool            `json:"allowed"`
	LeaseID       string          `json:"lease_id"`
	TTLMs         int64           `json:"ttl_ms"`
	ExpiresAt     string          `json:"expires_at"`
	ShadowRefused bool            `json:"shadow_refused"`
	Decision      apiRespDecision `json:"decision"`
	Statuses      []apiRespStatus `json:"statuses"`
	Extended      bool            `json:"extended"`
	Released      bool            `json:"released"`
	Code          string          `json:"code"`
	Message       string          `json:"message"`
}

type apiRespLimit struct {
	Rate     int64   `json:"rate"`
	PeriodMs float64 `json:"period_ms"`
	Burst    int64   `json:"burst"`
}

type apiRespDecision struct {
	Allowed      bool          `json:"allowed"`
	Rule         string        `json:"rule"`
	Kind         string        `json:"kind"`
	Limit        *apiRespLimit `json:"limit"`
	Remaining    *int64        `json:"remaining"`
	RetryAfterMs *int64        `json:"retry_after_ms"`
	ResetAfterMs *int64        `json:"reset_after_ms"`
	DelayMs      *int64        `json:"delay_ms"`
	Never        bool          `json:"never"`
	Unlimited    bool          `json:"unlimited"`
}

type apiRespStatus struct {
	Code         string        `json:"code"`
	Rule         string        `json:"rule"`
	Tier         string        `json:"tier"`
	Kind         string        `json:"kind"`
	Limit        *apiRespLimit `json:"limit"`
	Remaining    *int64        `json:"remaining"`
	RetryAfterMs *int64        `json:"retry_after_ms"`
	ResetAfterMs *int64        `json:"reset_after_ms"`
	DelayMs      *int64        `json:"delay_ms"`
	Never        bool          `json:"never"`
	Shadow       bool          `json:"shadow"`
	WouldRefuse  bool          `json:"would_refuse"`
	Exempt       bool          `json:"exempt"`
	Unlimited    bool          `json:"unlimited"`
	Replaced     bool          `json:"replaced"`
	Override     bool          `json:"override"`
	Skipped      bool          `json:"skipped"`
	Error        string        `json:"error"`
}

// apiDecode decodes an answer's body, failing t on a member the types
// above do not know (each one is documented) or a body that is not JSON.
func apiDecode(t testing.TB, w *httptest.ResponseRecorder) *apiResponse {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json (body %s)", ct, w.Body)
	}
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	var r apiResponse
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("answer %s: %v", w.Body, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("answer %q: more than one JSON value", w.Body)
	}
	return &r
}

// apiWantStatus fails t unless w has HTTP status code.
func apiWantStatus(t testing.TB, w *httptest.ResponseRecorder, code int) {
	t.Helper()
	if w.Code != code {
		t.Fatalf("status %d, want %d; body %s", w.Code, code, w.Body)
	}
}

// apiWantError fails t unless w is an error answer of status and code:
// exactly {"code","message"}, a non-empty message.
func apiWantError(t testing.TB, w *httptest.ResponseRecorder, status int, code string) string {
	t.Helper()
	apiWantStatus(t, w, status)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("error body %q: %v", w.Body, err)
	}
	msg, _ := m["message"].(string)
	if len(m) != 2 || m["code"] != code || msg == "" {
		t.Fatalf("error body %s, want {\"code\":%q,\"message\":...}", w.Body, code)
	}
	return msg
}

// apiNoLeak fails t if more goroutines run at its end than at its start,
// once those that are ending have ended.
func apiNoLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("%d goroutines at the end, %d at the start:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// apiCheckBody returns the body of a check of one descriptor per
// key=value argument.
func apiCheckBody(domain string, kvs ...string) string {
	var b strings.Builder
	b.WriteString(`{"domain":`)
	js, _ := json.Marshal(domain)
	b.Write(js)
	b.WriteString(`,"descriptors":[`)
	for i, kv := range kvs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, v, _ := strings.Cut(kv, "=")
		kj, _ := json.Marshal(k)
		vj, _ := json.Marshal(v)
		b.WriteString(`{"entries":[{"key":` + string(kj) + `,"value":` + string(vj) + `}]}`)
	}
	b.WriteString("]}")
	return b.String()
}
