package server

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// apiEnvoyPolicy is an envoyproxy/ratelimit configuration.
const apiEnvoyPolicy = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 2
  - key: path
    value: /health
  - key: tenant
    rate_limit:
      unlimited: true
`

// newEnvoyHarness is an API whose RLS dates its quota grants on the
// harness's clock.
func newEnvoyHarness(t *testing.T, yaml string, opts ...apiOption) *apiHarness {
	t.Helper()
	h := newAPIHarness(t, yaml)
	rls, err := newRLS(h.src, withGRPCClock(h.clock))
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAPI(h.src, append([]apiOption{withLeases(h.leases), withRLS(rls)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.api = a
	return h
}

// TestAPIEnvoyJSON drives /json as envoyproxy/ratelimit's users do: 200
// while under the limit, 429 over it, the RateLimitResponse in JSON.
func TestAPIEnvoyJSON(t *testing.T) {
	h := newEnvoyHarness(t, apiEnvoyPolicy)
	// envoyproxy/ratelimit's own example: a key without a value.
	body := `{"domain": "edge", "descriptors": [{"entries": [{"key": "remote_address", "value": "203.0.113.7"}]}, {"entries": [{"key": "path", "value": "/health"}]}, {"entries": [{"key": "tenant", "value": "t"}]}, {"entries": [{"key": "perday"}]}]}`
	// Descriptors nothing limits get a quota (WithGRPCQuotaTTL, 10 s).
	grant := `"quota":{"requests":4294967295,"validUntil":"2026-03-02T12:00:20Z"}`
	want := []struct {
		status int
		body   string
	}{
		{200, `{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"name":"edge.remote_address","requestsPerUnit":2,"unit":"MINUTE"},"limitRemaining":1,"durationUntilReset":"50s"},{"code":"OK",` + grant + `},{"code":"OK",` + grant + `},{"code":"OK",` + grant + `}],"responseHeadersToAdd":[{"key":"RateLimit-Policy","value":"\"edge.remote_address\";q=2;w=60"},{"key":"RateLimit","value":"\"edge.remote_address\";r=1;t=50"}]}`},
		{200, `{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"name":"edge.remote_address","requestsPerUnit":2,"unit":"MINUTE"},"durationUntilReset":"50s"},{"code":"OK",` + grant + `},{"code":"OK",` + grant + `},{"code":"OK",` + grant + `}],"responseHeadersToAdd":[{"key":"RateLimit-Policy","value":"\"edge.remote_address\";q=2;w=60"},{"key":"RateLimit","value":"\"edge.remote_address\";r=0;t=50"}]}`},
		{429, `{"overallCode":"OVER_LIMIT","statuses":[{"code":"OVER_LIMIT","currentLimit":{"name":"edge.remote_address","requestsPerUnit":2,"unit":"MINUTE"},"durationUntilReset":"50s"},{"code":"OK",` + grant + `},{"code":"OK",` + grant + `},{"code":"OK",` + grant + `}],"responseHeadersToAdd":[{"key":"RateLimit-Policy","value":"\"edge.remote_address\";q=2;w=60"},{"key":"RateLimit","value":"\"edge.remote_address\";r=0;t=50"},{"key":"Retry-After","value":"50"}]}`},
	}
	for i, w := range want {
		// curl --data sends a form's Content-Type: accepted.
		r := h.do(http.MethodPost, "/json", body, "Content-Type", "application/x-www-form-urlencoded")
		apiWantStatus(t, r, w.status)
		if got := strings.TrimSuffix(r.Body.String(), "\n"); got != w.body {
			t.Errorf("answer %d:\n got %s\nwant %s", i, got, w.body)
		}
		var resp rlsv3.RateLimitResponse
		if err := protojson.Unmarshal(r.Body.Bytes(), &resp); err != nil {
			t.Errorf("answer %d is not a RateLimitResponse: %v", i, err)
		}
		if r.Header().Get("Content-Type") != "application/json" {
			t.Errorf("Content-Type %q", r.Header().Get("Content-Type"))
		}
	}
	// The window ends 50 s later: admitted again.
	h.clock.Advance(50 * time.Second)
	apiWantStatus(t, h.post("/json", body), http.StatusOK)
}

// TestAPIEnvoyJSONForms: the proto3 JSON mapping's two spellings of field
// names, integers as strings, enums as names or numbers, hits_addend and
// limit overrides.
func TestAPIEnvoyJSONForms(t *testing.T) {
	h := newEnvoyHarness(t, apiEnvoyPolicy)
	forms := []string{
		`{"domain":"edge","hits_addend":2,"descriptors":[{"entries":[{"key":"remote_address","value":"a"}]}]}`,
		`{"domain":"edge","hitsAddend":"2","descriptors":[{"entries":[{"key":"remote_address","value":"b"}]}]}`,
		`{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"c"}],"hits_addend":2}]}`,
		`{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"d"}],"hitsAddend":"2"}]}`,
	}
	for _, f := range forms {
		r := h.post("/json", f)
		apiWantStatus(t, r, http.StatusOK)
		if !strings.Contains(r.Body.String(), `"requestsPerUnit":2`) || strings.Contains(r.Body.String(), "limitRemaining") {
			t.Errorf("%s: %s (want remaining 0, left out)", f, r.Body)
		}
	}
	// hits_addend 0 counts 1; a descriptor's 0 peeks.
	r := h.post("/json", `{"domain":"edge","hits_addend":0,"descriptors":[{"entries":[{"key":"remote_address","value":"e"}]},{"entries":[{"key":"remote_address","value":"f"}],"hits_addend":0}]}`)
	if !strings.Contains(r.Body.String(), `"limitRemaining":1,`) || !strings.Contains(r.Body.String(), `"limitRemaining":2,`) {
		t.Errorf("hits 0: %s", r.Body)
	}
	// A limit override, with a unit multiplier, by name or number.
	for i, unit := range []string{`"SECOND"`, `1`} {
		r = h.post("/json", `{"domain":"edge","descriptors":[{"entries":[{"key":"k","value":"`+strconv.Itoa(i)+`"}],"limit":{"requests_per_unit":3,"unit":`+unit+`,"unit_multiplier":30}}]}`)
		apiWantStatus(t, r, http.StatusOK)
		if !strings.Contains(r.Body.String(), `"requestsPerUnit":3,"unit":"SECOND","unitMultiplier":30},"limitRemaining":2`) {
			t.Errorf("override: %s", r.Body)
		}
	}
}

func TestAPIEnvoyJSONErrors(t *testing.T) {
	h := newEnvoyHarness(t, apiEnvoyPolicy, withMaxBodyBytes(1024))
	entry := `{"entries":[{"key":"remote_address","value":"a"}]}`
	cases := []struct {
		name, method, body string
		status             int
		code               string
	}{
		{"malformed", "POST", `{"domain":`, 400, apiCodeInvalidJSON},
		{"empty", "POST", ``, 400, apiCodeInvalidJSON},
		{"unknown field", "POST", `{"domain":"edge","descriptors":[` + entry + `],"extra":1}`, 400, apiCodeInvalidJSON},
		{"wrong type", "POST", `{"domain":5}`, 400, apiCodeInvalidJSON},
		{"no domain", "POST", `{"descriptors":[` + entry + `]}`, 400, apiCodeInvalidArgument},
		{"no descriptors", "POST", `{"domain":"edge"}`, 400, apiCodeInvalidArgument},
		{"no entries", "POST", `{"domain":"edge","descriptors":[{}]}`, 400, apiCodeInvalidArgument},
		{"empty key", "POST", `{"domain":"edge","descriptors":[{"entries":[{"key":"","value":"a"}]}]}`, 400, apiCodeInvalidArgument},
		{"negative hits", "POST", `{"domain":"edge","descriptors":[{"entries":[{"key":"a"}],"hits_addend":1,"is_negative_hits":true}]}`, 400, apiCodeInvalidArgument},
		{"hits -1", "POST", `{"domain":"edge","hits_addend":-1,"descriptors":[` + entry + `]}`, 400, apiCodeInvalidJSON},
		{"hits 2^32", "POST", `{"domain":"edge","hits_addend":4294967296,"descriptors":[` + entry + `]}`, 400, apiCodeInvalidJSON},
		{"descriptor hits 2^64", "POST", `{"domain":"edge","descriptors":[{"entries":[{"key":"a"}],"hits_addend":"18446744073709551615"}]}`, 400, apiCodeInvalidArgument},
		{"unknown unit", "POST", `{"domain":"edge","descriptors":[{"entries":[{"key":"a"}],"limit":{"requests_per_unit":1,"unit":"UNKNOWN"}}]}`, 400, apiCodeInvalidArgument},
		{"multiplier 0", "POST", `{"domain":"edge","descriptors":[{"entries":[{"key":"a"}],"limit":{"requests_per_unit":1,"unit":"SECOND","unit_multiplier":0}}]}`, 400, apiCodeInvalidArgument},
		{"too large", "POST", `{"domain":"` + strings.Repeat("x", 2000) + `"}`, 413, apiCodeBodyTooLarge},
		{"GET", "GET", ``, 405, apiCodeMethodNotAllowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			apiWantError(t, h.do(c.method, "/json", c.body), c.status, c.code)
		})
	}
	h.src.Set(nil)
	apiWantError(t, h.post("/json", `{"domain":"edge","descriptors":[`+entry+`]}`), http.StatusServiceUnavailable, apiCodeNoPolicy)
}
