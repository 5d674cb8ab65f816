package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/policy"
)

// TestAPICheckBodies pins the exact answers of /v1/check, field by field,
// at instants of a manual clock.
func TestAPICheckBodies(t *testing.T) {
	h := newAPIHarness(t, apiPolicy)
	const rateLimit = `{"code":"OK","rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2}`
	steps := []struct {
		name, body   string
		advance      time.Duration
		want         string
		policy, rate string // the RateLimit-Policy and RateLimit fields
	}{
		{
			name: "admitted", body: apiCheckBody("api", "user=alice"),
			want:   `{"allowed":true,"decision":{"allowed":true,"rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":1,"retry_after_ms":0,"reset_after_ms":500},"statuses":[` + rateLimit + `,"remaining":1,"retry_after_ms":0,"reset_after_ms":500}]}`,
			policy: `"per-user";q=2;w=1`, rate: `"per-user";r=1;t=1`,
		},
		{
			name: "last event", body: apiCheckBody("api", "user=alice"),
			want:   `{"allowed":true,"decision":{"allowed":true,"rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":0,"retry_after_ms":0,"reset_after_ms":1000},"statuses":[` + rateLimit + `,"remaining":0,"retry_after_ms":0,"reset_after_ms":1000}]}`,
			policy: `"per-user";q=2;w=1`, rate: `"per-user";r=0;t=1`,
		},
		{
			name: "refused", body: apiCheckBody("api", "user=alice"), advance: 100 * time.Millisecond,
			want:   `{"allowed":false,"decision":{"allowed":false,"rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":0,"retry_after_ms":400,"reset_after_ms":900},"statuses":[{"code":"OVER_LIMIT","rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":0,"retry_after_ms":400,"reset_after_ms":900}]}`,
			policy: `"per-user";q=2;w=1`, rate: `"per-user";r=0;t=1`,
		},
		{
			name: "no limit, unlimited, exempt, shadow",
			body: apiCheckBody("api", "nothing=x", "caller=internal", "remote_address=127.0.0.1", "experiment=a"),
			want: `{"allowed":true,"decision":{"allowed":true,"unlimited":true},"statuses":[{"code":"OK"},{"code":"OK","rule":"internal","unlimited":true},{"code":"OK","rule":"per-ip","exempt":true},{"code":"OK","rule":"experiment","kind":"rate","limit":{"rate":1,"period_ms":60000,"burst":1},"remaining":0,"retry_after_ms":0,"reset_after_ms":60000,"shadow":true}]}`,
		},
		{
			name: "shadow refusal", body: apiCheckBody("api", "experiment=a"),
			want: `{"allowed":true,"shadow_refused":true,"decision":{"allowed":true,"unlimited":true},"statuses":[{"code":"OK","rule":"experiment","kind":"rate","limit":{"rate":1,"period_ms":60000,"burst":1},"remaining":0,"retry_after_ms":60000,"reset_after_ms":60000,"shadow":true,"would_refuse":true}]}`,
		},
		{
			name: "tiers, quota, concurrency", body: apiCheckBody("api", "tenant=acme", "report=r", "job=j"),
			want:   `{"allowed":true,"decision":{"allowed":true,"rule":"jobs","kind":"concurrency","limit":{"rate":2,"burst":2},"remaining":1,"retry_after_ms":0,"reset_after_ms":0},"statuses":[{"code":"OK","rule":"per-tenant","tier":"pro","kind":"rate","limit":{"rate":100,"period_ms":1000,"burst":100},"remaining":99,"retry_after_ms":0,"reset_after_ms":10},{"code":"OK","rule":"reports","kind":"quota","limit":{"rate":3,"period_ms":86400000,"burst":3},"remaining":2,"retry_after_ms":0,"reset_after_ms":43189900},{"code":"OK","rule":"jobs","kind":"concurrency","limit":{"rate":2,"burst":2},"remaining":1,"retry_after_ms":0,"reset_after_ms":0}]}`,
			policy: `"jobs";q=2;qu="concurrent-requests"`, rate: `"jobs";r=1`,
		},
		{
			name: "replaces", body: apiCheckBody("api", "route=/login", "route=/x"),
			want:   `{"allowed":true,"decision":{"allowed":true,"rule":"login","kind":"rate","limit":{"rate":1,"period_ms":60000,"burst":1},"remaining":0,"retry_after_ms":0,"reset_after_ms":60000},"statuses":[{"code":"OK","rule":"login","kind":"rate","limit":{"rate":1,"period_ms":60000,"burst":1},"remaining":0,"retry_after_ms":0,"reset_after_ms":60000},{"code":"OK","rule":"per-route","replaced":true}]}`,
			policy: `"login";q=1;w=60`, rate: `"login";r=0;t=60`,
		},
		{
			// Inline limits are fixed windows (the domain's overrides:
			// Envoy's algorithm), aligned on the epoch.
			name:   "inline limits",
			body:   `{"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}],"limit":{"requests_per_unit":5,"unit":"MINUTE"}},{"entries":[{"key":"k","value":"v"}],"limit":{"rate":"3 per 1500ms"}}]}`,
			want:   `{"allowed":true,"decision":{"allowed":true,"rule":"api/override/3/1s500ms","kind":"rate","limit":{"rate":3,"period_ms":1500,"burst":3},"remaining":2,"retry_after_ms":0,"reset_after_ms":400},"statuses":[{"code":"OK","rule":"api/override/5/min","kind":"rate","limit":{"rate":5,"period_ms":60000,"burst":5},"remaining":4,"retry_after_ms":0,"reset_after_ms":49900,"override":true},{"code":"OK","rule":"api/override/3/1s500ms","kind":"rate","limit":{"rate":3,"period_ms":1500,"burst":3},"remaining":2,"retry_after_ms":0,"reset_after_ms":400,"override":true}]}`,
			policy: `"api/override/3/1s500ms";q=3;w=2`, rate: `"api/override/3/1s500ms";r=2;t=1`,
		},
		{
			name: "never", body: `{"domain":"api","hits":4294967295,"descriptors":[{"entries":[{"key":"user","value":"bob"}]},{"entries":[{"key":"job","value":"x"}]}]}`,
			want:   `{"allowed":false,"decision":{"allowed":false,"rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":2,"reset_after_ms":0,"never":true},"statuses":[{"code":"OVER_LIMIT","rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":2,"reset_after_ms":0,"never":true},{"code":"OK","rule":"jobs","kind":"concurrency","limit":{"rate":2,"burst":2},"remaining":0,"retry_after_ms":0,"reset_after_ms":0,"skipped":true}]}`,
			policy: `"per-user";q=2;w=1`, rate: `"per-user";r=2`,
		},
		{
			name: "unknown domain", body: apiCheckBody("nope", "user=alice"),
			want: `{"allowed":true,"decision":{"allowed":true,"unlimited":true},"statuses":[{"code":"OK"}]}`,
		},
	}
	for _, s := range steps {
		h.clock.Advance(s.advance)
		w := h.post("/v1/check", s.body)
		apiWantStatus(t, w, http.StatusOK)
		if got := strings.TrimSuffix(w.Body.String(), "\n"); got != s.want {
			t.Errorf("%s:\n got %s\nwant %s", s.name, got, s.want)
		}
		apiDecode(t, w) // every member is known
		if got := w.Header().Get("RateLimit-Policy"); got != s.policy {
			t.Errorf("%s: RateLimit-Policy %q, want %q", s.name, got, s.policy)
		}
		if got := w.Header().Get("RateLimit"); got != s.rate {
			t.Errorf("%s: RateLimit %q, want %q", s.name, got, s.rate)
		}
		if ra := w.Header().Get("Retry-After"); ra != "" {
			t.Errorf("%s: Retry-After %q on a 200", s.name, ra)
		}
	}
}

func TestAPIRefusalStatus(t *testing.T) {
	h := newAPIHarness(t, apiPolicy, withRefusalStatus(http.StatusTooManyRequests))
	body := apiCheckBody("api", "user=alice")
	for range 2 {
		apiWantStatus(t, h.post("/v1/check", body), http.StatusOK)
	}
	h.clock.Advance(100 * time.Millisecond)
	w := h.post("/v1/check", body)
	apiWantStatus(t, w, http.StatusTooManyRequests)
	if r := apiDecode(t, w); r.Allowed || r.Decision.RetryAfterMs == nil || *r.Decision.RetryAfterMs != 400 {
		t.Errorf("refusal %s", w.Body)
	}
	if ra := w.Header().Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1", ra)
	}
	// Without the fields, Retry-After stays.
	h = newAPIHarness(t, apiPolicy, withRefusalStatus(http.StatusTooManyRequests), withRateLimitFields(false))
	h.clock.Advance(0)
	for range 2 {
		w = h.post("/v1/check", body)
		if w.Header().Get("RateLimit") != "" || w.Header().Get("RateLimit-Policy") != "" {
			t.Errorf("fields without WithRateLimitFields: %v", w.Header())
		}
	}
	w = h.post("/v1/check", body)
	apiWantStatus(t, w, http.StatusTooManyRequests)
	if ra := w.Header().Get("Retry-After"); ra != "1" || w.Header().Get("RateLimit") != "" {
		t.Errorf("header %v, want Retry-After: 1 alone", w.Header())
	}
}

func TestAPIHits(t *testing.T) {
	h := newAPIHarness(t, apiPolicy)
	remaining := func(w *httptest.ResponseRecorder) []int64 {
		t.Helper()
		apiWantStatus(t, w, http.StatusOK)
		r := apiDecode(t, w)
		var out []int64
		for _, st := range r.Statuses {
			if st.Remaining == nil {
				t.Fatalf("no remaining: %s", w.Body)
			}
			out = append(out, *st.Remaining)
		}
		return out
	}
	// hits 0 peeks; a descriptor's own hits replace the request's.
	if got := remaining(h.post("/v1/check", `{"domain":"api","hits":0,"descriptors":[{"entries":[{"key":"tenant","value":"acme"}]}]}`)); got[0] != 100 {
		t.Errorf("peek: remaining %v, want 100", got)
	}
	got := remaining(h.post("/v1/check", `{"domain":"api","hits":5,"descriptors":[{"entries":[{"key":"tenant","value":"acme"}]},{"entries":[{"key":"tenant","value":"globex"}],"hits":0},{"entries":[{"key":"user","value":"u"}],"hits":1}]}`))
	if fmt.Sprint(got) != "[95 2 1]" {
		t.Errorf("remaining %v, want [95 2 1]", got)
	}
	// null is not given.
	got = remaining(h.post("/v1/check", `{"domain":"api","hits":null,"descriptors":[{"entries":[{"key":"tenant","value":"acme"}],"hits":null}]}`))
	if got[0] != 94 {
		t.Errorf("remaining %v, want [94]", got)
	}
}

// TestAPIErrors sends bad requests: each gets its status and code, and
// the error body shape.
func TestAPIErrors(t *testing.T) {
	h := newAPIHarness(t, apiPolicy, withMaxBodyBytes(4<<20))
	many := func(n int) string {
		kvs := make([]string, n)
		for i := range kvs {
			kvs[i] = fmt.Sprintf("user=u%d", i)
		}
		return apiCheckBody("api", kvs...)
	}
	desc := `{"entries":[{"key":"user","value":"alice"}]}`
	long := strings.Repeat("x", defaultMaxValueLength+1)
	cases := []struct {
		name, path, method, body, ctype string
		status                          int
		code                            string
	}{
		{"malformed", "/v1/check", "", `{"domain":"api",`, "", 400, apiCodeInvalidJSON},
		{"not JSON", "/v1/check", "", `domain=api`, "", 400, apiCodeInvalidJSON},
		{"empty body", "/v1/check", "", ``, "", 400, apiCodeInvalidJSON},
		{"array", "/v1/check", "", `[]`, "", 400, apiCodeInvalidJSON},
		{"two values", "/v1/check", "", `{"domain":"api","descriptors":[` + desc + `]} {}`, "", 400, apiCodeInvalidJSON},
		{"unknown field", "/v1/check", "", `{"domain":"api","descriptors":[` + desc + `],"hitz":1}`, "", 400, apiCodeUnknownField},
		{"unknown nested field", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a","valu":"b"}]}]}`, "", 400, apiCodeUnknownField},
		{"ttl on check", "/v1/check", "", `{"domain":"api","descriptors":[` + desc + `],"ttl_ms":5}`, "", 400, apiCodeUnknownField},
		{"domain type", "/v1/check", "", `{"domain":5,"descriptors":[` + desc + `]}`, "", 400, apiCodeInvalidJSON},
		{"hits string", "/v1/check", "", `{"domain":"api","hits":"1","descriptors":[` + desc + `]}`, "", 400, apiCodeInvalidJSON},
		{"hits fraction", "/v1/check", "", `{"domain":"api","hits":1.5,"descriptors":[` + desc + `]}`, "", 400, apiCodeInvalidJSON},
		{"hits exponent", "/v1/check", "", `{"domain":"api","hits":1e3,"descriptors":[` + desc + `]}`, "", 400, apiCodeInvalidJSON},
		{"descriptors object", "/v1/check", "", `{"domain":"api","descriptors":{}}`, "", 400, apiCodeInvalidJSON},
		{"no domain", "/v1/check", "", `{"descriptors":[` + desc + `]}`, "", 400, apiCodeMissingField},
		{"empty domain", "/v1/check", "", `{"domain":"","descriptors":[` + desc + `]}`, "", 400, apiCodeMissingField},
		{"null body", "/v1/check", "", `null`, "", 400, apiCodeMissingField},
		{"no descriptors", "/v1/check", "", `{"domain":"api"}`, "", 400, apiCodeMissingField},
		{"empty descriptors", "/v1/check", "", `{"domain":"api","descriptors":[]}`, "", 400, apiCodeMissingField},
		{"no entries", "/v1/check", "", `{"domain":"api","descriptors":[{}]}`, "", 400, apiCodeMissingField},
		{"empty entries", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[]}]}`, "", 400, apiCodeMissingField},
		{"empty key", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"","value":"x"}]}]}`, "", 400, apiCodeMissingField},
		{"negative hits", "/v1/check", "", `{"domain":"api","hits":-1,"descriptors":[` + desc + `]}`, "", 422, apiCodeInvalidArgument},
		{"hits 2^32", "/v1/check", "", `{"domain":"api","hits":4294967296,"descriptors":[` + desc + `]}`, "", 422, apiCodeInvalidArgument},
		{"hits overflow", "/v1/check", "", `{"domain":"api","hits":99999999999999999999999,"descriptors":[` + desc + `]}`, "", 422, apiCodeInvalidArgument},
		{"descriptor hits negative", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"hits":-7}]}`, "", 422, apiCodeInvalidArgument},
		{"long value", "/v1/check", "", apiCheckBody("api", "user="+long), "", 422, apiCodeInvalidArgument},
		{"1 MB value", "/v1/check", "", apiCheckBody("api", "user="+strings.Repeat("v", 1<<20)), "", 422, apiCodeInvalidArgument},
		{"long key", "/v1/check", "", apiCheckBody("api", long+"=v"), "", 422, apiCodeInvalidArgument},
		{"long domain", "/v1/check", "", apiCheckBody(long, "user=v"), "", 422, apiCodeInvalidArgument},
		{"limit both forms", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"limit":{"rate":"1/s","requests_per_unit":1,"unit":"second"}}]}`, "", 422, apiCodeInvalidArgument},
		{"limit empty", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"limit":{}}]}`, "", 422, apiCodeInvalidArgument},
		{"limit no unit", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"limit":{"requests_per_unit":1}}]}`, "", 422, apiCodeInvalidArgument},
		{"limit bad unit", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"limit":{"requests_per_unit":1,"unit":"fortnight"}}]}`, "", 422, apiCodeInvalidArgument},
		{"limit rpu 2^32", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"limit":{"requests_per_unit":4294967296,"unit":"second"}}]}`, "", 422, apiCodeInvalidArgument},
		{"limit bad rate", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"limit":{"rate":"fast"}}]}`, "", 422, apiCodeInvalidArgument},
		{"limit rate type", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"limit":{"rate":100}}]}`, "", 400, apiCodeInvalidJSON},
		{"inline key too long", "/v1/check", "", `{"domain":"api","descriptors":[{"entries":[{"key":"a","value":"` + strings.Repeat("v", 4000) + `"},{"key":"b","value":"` + strings.Repeat("w", 4000) + `"}],"limit":{"rate":"1/s"}}]}`, "", 422, apiCodeInvalidArgument},
		{"too many descriptors", "/v1/check", "", many(defaultMaxDescriptors + 1), "", 413, apiCodeTooManyDescriptors},
		{"10,000 descriptors", "/v1/check", "", many(10000), "", 413, apiCodeTooManyDescriptors},
		{"body too large", "/v1/check", "", `{"domain":"` + strings.Repeat("d", 4<<20) + `"}`, "", 413, apiCodeBodyTooLarge},
		{"text/plain", "/v1/check", "", apiCheckBody("api", "user=a"), "text/plain", 415, apiCodeUnsupportedMedia},
		{"form", "/v1/acquire", "", apiCheckBody("api", "user=a"), "application/x-www-form-urlencoded", 415, apiCodeUnsupportedMedia},
		{"GET", "/v1/check", "GET", "", "", 405, apiCodeMethodNotAllowed},
		{"PUT release", "/v1/release", "PUT", `{"lease_id":"x"}`, "", 405, apiCodeMethodNotAllowed},
		{"unknown path", "/v1/checks", "", apiCheckBody("api", "user=a"), "", 404, apiCodeNotFound},
		{"metrics without handler", "/metrics", "GET", "", "", 404, apiCodeNotFound},
		{"acquire ttl 0", "/v1/acquire", "", `{"domain":"api","descriptors":[` + desc + `],"ttl_ms":0}`, "", 422, apiCodeInvalidArgument},
		{"acquire ttl negative", "/v1/acquire", "", `{"domain":"api","descriptors":[` + desc + `],"ttl_ms":-5}`, "", 422, apiCodeInvalidArgument},
		{"acquire ttl above max", "/v1/acquire", "", `{"domain":"api","descriptors":[` + desc + `],"ttl_ms":3600001}`, "", 422, apiCodeInvalidArgument},
		{"release no id", "/v1/release", "", `{}`, "", 400, apiCodeMissingField},
		{"release ttl", "/v1/release", "", `{"lease_id":"x","ttl_ms":5}`, "", 400, apiCodeUnknownField},
		{"extend failed", "/v1/extend", "", `{"lease_id":"x","failed":true}`, "", 400, apiCodeUnknownField},
		{"release unknown", "/v1/release", "", `{"lease_id":"00000000000000000000000000000000"}`, "", 404, apiCodeLeaseNotFound},
		{"extend unknown", "/v1/extend", "", `{"lease_id":"nope"}`, "", 404, apiCodeLeaseNotFound},
		{"release bad JSON", "/v1/release", "", `{"lease_id":`, "", 400, apiCodeInvalidJSON},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			var hdr []string
			if c.ctype != "" {
				hdr = []string{"Content-Type", c.ctype}
			}
			w := h.do(method, c.path, c.body, hdr...)
			msg := apiWantError(t, w, c.status, c.code)
			if len(msg) > 512 {
				t.Errorf("message of %d bytes", len(msg))
			}
			if c.status == http.StatusMethodNotAllowed && w.Header().Get("Allow") != "POST" {
				t.Errorf("Allow %q", w.Header().Get("Allow"))
			}
		})
	}
	// Nothing was consumed by the bad requests.
	w := h.post("/v1/check", apiCheckBody("api", "user=alice", "user=a"))
	if r := apiDecode(t, w); *r.Statuses[0].Remaining != 1 || *r.Statuses[1].Remaining != 1 {
		t.Errorf("after the bad requests: %s", w.Body)
	}
}

// TestAPIContentTypes accepts JSON however it is named, and no type at
// all.
func TestAPIContentTypes(t *testing.T) {
	h := newAPIHarness(t, apiPolicy)
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "application/problem+json", ""} {
		r := httptest.NewRequest(http.MethodPost, "/v1/check", strings.NewReader(apiCheckBody("api", "nothing=x")))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		w := httptest.NewRecorder()
		h.api.ServeHTTP(w, r)
		apiWantStatus(t, w, http.StatusOK)
	}
}

// TestAPIMessages: error messages name the field and quote little of
// what the client sent.
func TestAPIMessages(t *testing.T) {
	h := newAPIHarness(t, apiPolicy)
	cases := []struct {
		body   string
		status int
		code   string
		want   string
	}{
		{`{"domain":"api","descriptors":[{"entries":[{"key":1}]}]}`, 400, apiCodeInvalidJSON, "descriptors.entries.key: want a string, got a JSON number"},
		{`{"domain":"api","hits":1.5,"descriptors":[]}`, 400, apiCodeInvalidJSON, "hits: want an integer, got a JSON number 1.5"},
		{`{"domain":"api","hits":"2","descriptors":[]}`, 400, apiCodeInvalidJSON, "hits: want an integer, got a JSON string"},
		{`{"domain":"api","descriptors":[{"entries":[{"key":"a"}]},{}]}`, 400, apiCodeMissingField, "descriptors[1].entries: at least one entry is required"},
		{`{"domain":"api","descriptors":[{"entries":[{"key":"a"},{"value":"b"}]}]}`, 400, apiCodeMissingField, "descriptors[0].entries[1].key is required"},
		{`{"domain":"api","x` + strings.Repeat("y", 200) + `":1}`, 400, apiCodeUnknownField, `unknown field "xyyy`},
		{`{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"hits":-1}]}`, 422, apiCodeInvalidArgument, "descriptors[0].hits: -1 is outside [0, 4294967295]"},
		{`{"domain":"api","descriptors":[{"entries":[{"key":"a"}],"limit":{"requests_per_unit":1,"unit":"eon"}}]}`, 422, apiCodeInvalidArgument, `descriptors[0].limit.unit: "eon"`},
		{`{"domain":"api"`, 400, apiCodeInvalidJSON, "the body ends in the middle of its JSON value"},
		{`{"domain":"api"}}`, 400, apiCodeInvalidJSON, "invalid JSON at byte"},
		{`{"domain":"api","descriptors":[{"entries":[{"key":"a"}]}]} 5`, 400, apiCodeInvalidJSON, "more than one JSON value"},
	}
	for _, c := range cases {
		msg := apiWantError(t, h.post("/v1/check", c.body), c.status, c.code)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: message %q, want %q in it", c.body, msg, c.want)
		}
		if len(msg) > 200 {
			t.Errorf("%s: message of %d bytes", c.body, len(msg))
		}
	}
}

func TestAPIStrictDomains(t *testing.T) {
	h := newAPIHarness(t, apiPolicy, withStrictDomains(true))
	apiWantError(t, h.post("/v1/check", apiCheckBody("nope", "user=a")), 422, apiCodeUnknownDomain)
	apiWantError(t, h.post("/v1/acquire", apiCheckBody("nope", "user=a")), 422, apiCodeUnknownDomain)
	apiWantError(t, h.post("/json", apiCheckBody("nope", "user=a")), 400, apiCodeUnknownDomain)
	apiWantStatus(t, h.post("/v1/check", apiCheckBody("api", "user=a")), http.StatusOK)
}

// TestAPIEngineSwap replaces the engine between requests: each request
// is decided by the engine of its time, a reload keeps the state of the
// rules that did not change, and without an engine the API answers 503.
func TestAPIEngineSwap(t *testing.T) {
	h := newAPIHarness(t, "")
	body := apiCheckBody("api", "user=alice", "tenant=t")
	apiWantError(t, h.post("/v1/check", body), http.StatusServiceUnavailable, apiCodeNoPolicy)
	apiWantError(t, h.post("/v1/acquire", body), http.StatusServiceUnavailable, apiCodeNoPolicy)
	apiWantError(t, h.post("/json", body), http.StatusServiceUnavailable, apiCodeNoPolicy)

	old := apiEngine(t, apiPolicy, h.clock)
	h.src.Set(old)
	r := apiDecode(t, h.post("/v1/check", body))
	if !r.Allowed || *r.Statuses[0].Remaining != 1 || *r.Statuses[1].Remaining != 1 {
		t.Fatalf("first engine: %+v", r)
	}
	// per-user unchanged, per-tenant's free tier now 5/s.
	changed := strings.Replace(apiPolicy, "rate: 2/s\n      pro:", "rate: 5/s\n      pro:", 1)
	p, err := policy.Parse("policy.yaml", []byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	e2, err := policy.NewEngine(p, func() policy.Config { c := storesOf(nil, h.clock); c.Previous = old; return c }())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e2.Close() })
	if prev := h.src.Set(e2); prev != old {
		t.Fatal("Set returned another engine")
	}
	r = apiDecode(t, h.post("/v1/check", body))
	if !r.Allowed || *r.Statuses[0].Remaining != 0 || *r.Statuses[1].Remaining != 4 {
		t.Fatalf("after the reload: per-user keeps its state, per-tenant starts afresh at 5: %+v", r.Statuses)
	}
	// The old engine, closed, is not asked again: requests use the new.
	_ = old.Close()
	r = apiDecode(t, h.post("/v1/check", body))
	if r.Allowed || r.Statuses[0].Code != "OVER_LIMIT" {
		t.Fatalf("third request: %+v", r)
	}
	h.src.Set(nil)
	apiWantError(t, h.post("/v1/check", body), http.StatusServiceUnavailable, apiCodeNoPolicy)
}

// apiSwapSource is an EngineSource handing out a stale engine once, as a
// request that started just before a reload sees it.
type apiSwapSource struct {
	mu    sync.Mutex
	stale *policy.Engine
	cur   *policy.Engine
}

func (s *apiSwapSource) Engine() *policy.Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stale != nil {
		e := s.stale
		s.stale = nil
		return e
	}
	return s.cur
}

// TestAPIClosedEngine: a request given an engine closed by a reload is
// decided by the new engine; with none, it gets 503.
func TestAPIClosedEngine(t *testing.T) {
	clock := admittest.NewManualClock(apiT0)
	old, cur := apiEngine(t, apiPolicy, clock), apiEngine(t, apiPolicy, clock)
	_ = old.Close()
	src := &apiSwapSource{stale: old, cur: cur}
	a, err := newAPI(src)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := &apiHarness{api: a, clock: clock}
	for _, path := range []string{"/v1/check", "/v1/acquire"} {
		src.mu.Lock()
		src.stale = old
		src.mu.Unlock()
		w := h.post(path, apiCheckBody("api", "user=alice"))
		apiWantStatus(t, w, http.StatusOK)
	}
	src.mu.Lock()
	src.stale, src.cur = old, old
	src.mu.Unlock()
	apiWantError(t, h.post("/v1/check", apiCheckBody("api", "user=alice")), http.StatusServiceUnavailable, apiCodeUnavailable)
}

// TestAPIConcurrent checks one key from many goroutines on the system
// clock: no more are admitted than the burst and what refills meanwhile.
func TestAPIConcurrent(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("domain: api\nrules:\n  - name: r\n    match: k\n    rate: 50/h\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.NewEngine(p, storesOf(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	src := new(Engines)
	src.Set(e)
	a, err := newAPI(src)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				r := httptest.NewRequest(http.MethodPost, "/v1/check", strings.NewReader(apiCheckBody("api", "k=same")))
				w := httptest.NewRecorder()
				a.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					t.Errorf("status %d: %s", w.Code, w.Body)
					return
				}
				if strings.HasPrefix(w.Body.String(), `{"allowed":true`) {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n < 50 || n > 51 {
		t.Errorf("%d admitted, want the burst, 50 (51 if an event came back)", n)
	}
}

func TestAPIPathsAndMetrics(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# metrics\n")) })
	h := newAPIHarness(t, apiPolicy, withMetrics(metrics))
	w := h.do(http.MethodGet, "/metrics", "")
	if w.Code != 200 || w.Body.String() != "# metrics\n" {
		t.Errorf("/metrics: %d %q", w.Code, w.Body)
	}
	want := "[/v1/check /v1/acquire /v1/release /v1/extend /json /healthz /readyz /metrics]"
	if got := fmt.Sprint(h.api.paths()); got != want {
		t.Errorf("Paths %s, want %s", got, want)
	}
	for _, p := range h.api.paths() {
		if w := h.do(http.MethodGet, p, ""); w.Code == http.StatusNotFound {
			t.Errorf("GET %s: 404", p)
		}
	}
	if h.api.table() != h.leases {
		t.Error("Leases is not the table given")
	}
}

func TestNewAPIOptions(t *testing.T) {
	src := new(Engines)
	bad := []apiOption{
		withLeases(nil), withReadiness(nil), withMetrics(nil), withRLS(nil),
		withMaxBodyBytes(0), withMaxDescriptors(-1), withMaxValueLength(0),
		withRefusalStatus(302), withRefusalStatus(0), withRefusalStatus(600),
	}
	for i, o := range bad {
		if _, err := newAPI(src, o); !errors.Is(err, errInvalidConfig) {
			t.Errorf("option %d: %v, want errInvalidConfig", i, err)
		}
	}
	if _, err := newAPI(nil); !errors.Is(err, errInvalidConfig) {
		t.Errorf("nil source: %v", err)
	}
	for _, code := range []int{200, 429, 503, 400} {
		a, err := newAPI(src, withRefusalStatus(code), nil)
		if err != nil {
			t.Errorf("WithRefusalStatus(%d): %v", code, err)
			continue
		}
		_ = a.Close()
		_ = a.Close() // idempotent
	}
}

// TestAPICancelled: a request whose client went away is not decided as a
// success.
func TestAPICancelled(t *testing.T) {
	h := newAPIHarness(t, apiPolicy)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodPost, "/v1/check", strings.NewReader(apiCheckBody("api", "user=alice"))).WithContext(ctx)
	w := httptest.NewRecorder()
	h.api.ServeHTTP(w, r)
	// The in-memory limiters decide without looking at the context; the
	// answer is either a decision or 503, never an error of another kind.
	if w.Code != http.StatusOK && w.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d: %s", w.Code, w.Body)
	}
}

// TestAPIReset: /v1/reset gives a client's limits back when WithReset
// allows it, and is refused with 403 otherwise.
func TestAPIReset(t *testing.T) {
	off := newAPIHarness(t, apiPolicy)
	apiWantError(t, off.post("/v1/reset", apiCheckBody("api", "user=alice")), http.StatusForbidden, apiCodeForbidden)

	h := newAPIHarness(t, apiPolicy, withReset(true))
	alice := apiCheckBody("api", "user=alice")
	for range 2 {
		if r := apiDecode(t, h.post("/v1/check", alice)); !r.Allowed {
			t.Fatalf("check: %+v", r)
		}
	}
	if r := apiDecode(t, h.post("/v1/check", alice)); r.Allowed {
		t.Fatalf("third check: %+v", r)
	}
	w := h.post("/v1/reset", apiCheckBody("api", "user=alice", "tenant=acme", "job=etl"))
	apiWantStatus(t, w, http.StatusOK)
	if w.Body.String() != "{\"reset\":2}\n" {
		t.Errorf("reset: %s, want 2 limits (the user's rate and the tenant's tier; not the concurrency cap)", w.Body)
	}
	if r := apiDecode(t, h.post("/v1/check", alice)); !r.Allowed {
		t.Errorf("check after the reset: %+v", r)
	}
	if w := h.post("/v1/reset", apiCheckBody("elsewhere", "user=alice")); w.Body.String() != "{\"reset\":0}\n" {
		t.Errorf("an unknown domain: %d %s", w.Code, w.Body)
	}
	apiWantError(t, h.post("/v1/reset", `{"domain":"api","descriptors":[{"entries":[]}]}`), http.StatusBadRequest, apiCodeMissingField)
	apiWantError(t, h.post("/v1/reset", `{"domain":"api","ttl_ms":5,"descriptors":[{"entries":[{"key":"user","value":"a"}]}]}`), http.StatusBadRequest, apiCodeUnknownField)
	apiWantError(t, h.do(http.MethodGet, "/v1/reset", ""), http.StatusMethodNotAllowed, apiCodeMethodNotAllowed)
	// Bad bodies, each with its error, and nothing reset.
	h.post("/v1/check", alice)
	many := `{"domain":"api","descriptors":[` + strings.Repeat(`{"entries":[{"key":"user","value":"alice"}]},`, 1000) + `{"entries":[{"key":"user","value":"alice"}]}]}`
	for name, c := range map[string]struct {
		body   string
		status int
		code   string
	}{
		"malformed":  {`{"domain":`, http.StatusBadRequest, apiCodeInvalidJSON},
		"empty":      {``, http.StatusBadRequest, apiCodeInvalidJSON},
		"no domain":  {`{"descriptors":[{"entries":[{"key":"user","value":"alice"}]}]}`, http.StatusBadRequest, apiCodeMissingField},
		"empty key":  {`{"domain":"api","descriptors":[{"entries":[{"key":"","value":"alice"}]}]}`, http.StatusBadRequest, apiCodeMissingField},
		"negative":   {`{"domain":"api","hits":-1,"descriptors":[{"entries":[{"key":"user","value":"alice"}]}]}`, http.StatusUnprocessableEntity, apiCodeInvalidArgument},
		"huge value": {`{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"` + strings.Repeat("a", 5000) + `"}]}]}`, http.StatusUnprocessableEntity, apiCodeInvalidArgument},
		"too many":   {many, http.StatusRequestEntityTooLarge, apiCodeTooManyDescriptors},
		"huge body":  {`{"domain":"api","x":"` + strings.Repeat("a", 2<<20) + `"}`, http.StatusRequestEntityTooLarge, apiCodeBodyTooLarge},
	} {
		w := h.post("/v1/reset", c.body)
		if w.Code != c.status || !strings.Contains(w.Body.String(), `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", name, w.Code, w.Body, c.status, c.code)
		}
	}
	if r := apiDecode(t, h.post("/v1/check", alice)); r.Allowed {
		t.Errorf("a bad reset reset something: %+v", r)
	}
}
