package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

var apiFuzzSeeds = []string{
	`{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"alice"}]}]}`,
	`{"domain":"api","hits":0,"descriptors":[{"entries":[{"key":"job","value":"x"}],"hits":2}]}`,
	`{"domain":"api","hits":4294967295,"descriptors":[{"entries":[{"key":"tenant","value":"acme"}]},{"entries":[{"key":"report","value":"r"}]}]}`,
	`{"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}],"limit":{"requests_per_unit":5,"unit":"minute"}}]}`,
	`{"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}],"limit":{"rate":"3 per 1500ms burst 4"}}]}`,
	`{"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}],"limit":{"rate":"unlimited"}}]}`,
	`{"domain":"api","descriptors":[{"entries":[{"key":"k","value":"v"}],"limit":{"requests_per_unit":0,"unit":"second"}}]}`,
	`{"domain":"api","ttl_ms":1,"descriptors":[{"entries":[{"key":"job","value":"y"}]}]}`,
	`{"domain":"api","descriptors":[{"entries":[{"key":"route","value":"/login"}]},{"entries":[{"key":"route","value":"/x"}]}]}`,
	`{"domain":"api","descriptors":[{"entries":[{"key":"caller","value":"internal"},{"key":"x"}]}]}`,
	`{"domain":"","descriptors":[]}`,
	`{"domain":"api","hits":-1}`,
	`{"domain":"api","hits":1e400}`,
	`{"domain":"api","hits":99999999999999999999999999}`,
	`{"lease_id":"abc","failed":true}`,
	`{"domain":"\u0000\ud800","descriptors":[{"entries":[{"key":"\"","value":"\\"}]}]}`,
	`[`, `null`, `{}`, `""`, `{"domain":"api"} x`,
}

// apiFuzzRequest is an independent, lenient reading of a check's body:
// what the API must have seen to admit it.
type apiFuzzRequest struct {
	Domain      *string `json:"domain"`
	Descriptors []struct {
		Entries []struct {
			Key *string `json:"key"`
		} `json:"entries"`
	} `json:"descriptors"`
}

// FuzzCheckRequest sends any body to /v1/check and /v1/acquire: the API
// never panics, answers one of its statuses with a JSON body of the
// documented shape, decides only requests that are valid, and its
// decision agrees with its statuses.
func FuzzCheckRequest(f *testing.F) {
	for _, s := range apiFuzzSeeds {
		f.Add([]byte(s))
	}
	h := newAPIHarness(f, apiPolicy)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/v1/check", "/v1/acquire", "/v1/release", "/v1/extend"} {
			r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			w := httptest.NewRecorder()
			h.api.ServeHTTP(w, r)
			var m map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
				t.Fatalf("%s: answer %q is not JSON: %v", path, w.Body, err)
			}
			switch w.Code {
			case http.StatusOK:
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusNotFound, http.StatusServiceUnavailable:
				if len(m) != 2 || m["code"] == nil || m["message"] == "" {
					t.Fatalf("%s: error answer %s", path, w.Body)
				}
				if w.Code == http.StatusNotFound && m["code"] != apiCodeLeaseNotFound ||
					w.Code == http.StatusServiceUnavailable && m["code"] != apiCodeResourceExhausted {
					t.Fatalf("%s: %d %s", path, w.Code, w.Body)
				}
				continue
			default:
				t.Fatalf("%s: status %d: %s", path, w.Code, w.Body)
			}
			if path == "/v1/release" || path == "/v1/extend" {
				t.Fatalf("%s: an unknown lease was found: %s", path, w.Body)
			}
			// Decided: the request was valid.
			var req apiFuzzRequest
			if err := json.Unmarshal(body, &req); err != nil || req.Domain == nil || *req.Domain == "" || len(req.Descriptors) == 0 {
				t.Fatalf("%s: decided %q: %s", path, body, w.Body)
			}
			for _, d := range req.Descriptors {
				if len(d.Entries) == 0 {
					t.Fatalf("%s: decided a descriptor without entries: %q", path, body)
				}
				for _, e := range d.Entries {
					if e.Key == nil || *e.Key == "" {
						t.Fatalf("%s: decided an entry without a key: %q", path, body)
					}
				}
			}
			resp := apiDecode(t, w)
			if len(resp.Statuses) != len(req.Descriptors) {
				t.Fatalf("%s: %d statuses for %d descriptors", path, len(resp.Statuses), len(req.Descriptors))
			}
			over := false
			for _, st := range resp.Statuses {
				switch st.Code {
				case "OVER_LIMIT":
					over = true
				case "OK":
				default:
					t.Fatalf("%s: status code %q", path, st.Code)
				}
			}
			if resp.Allowed != resp.Decision.Allowed || resp.Allowed == over {
				t.Fatalf("%s: allowed %v, decision %v, a status over the limit %v: %s", path, resp.Allowed, resp.Decision.Allowed, over, w.Body)
			}
			if resp.LeaseID != "" {
				if path != "/v1/acquire" || !resp.Allowed {
					t.Fatalf("%s: a lease: %s", path, w.Body)
				}
				if err := h.leases.Release(context.Background(), resp.LeaseID); err != nil {
					t.Fatalf("releasing %s: %v", resp.LeaseID, err)
				}
			}
		}
	})
}

// FuzzEnvoyJSON sends any body to /json: never a panic; a decided request
// is a valid RateLimitRequest and gets a RateLimitResponse with one status
// per descriptor, 200 iff its overall code is OK and 429 iff OVER_LIMIT.
func FuzzEnvoyJSON(f *testing.F) {
	for _, s := range apiFuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"a"}]}]}`,
		`{"domain":"edge","hitsAddend":"2","descriptors":[{"entries":[{"key":"perday"}],"hits_addend":0}]}`,
		`{"domain":"edge","descriptors":[{"entries":[{"key":"k","value":"v"}],"limit":{"requestsPerUnit":3,"unit":"HOUR","unitMultiplier":2}}]}`,
		`{"domain":"edge","descriptors":[{"entries":[{"key":"k"}],"limit":{"requests_per_unit":1,"unit":7}}]}`,
		`{"domain":"edge","descriptors":[{"entries":[{"key":"k"}],"is_negative_hits":true,"hits_addend":"18446744073709551615"}]}`,
	} {
		f.Add([]byte(s))
	}
	h := newAPIHarness(f, apiEnvoyPolicy)
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/json", bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.api.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusOK, http.StatusTooManyRequests:
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable:
			var m map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || len(m) != 2 || m["code"] == nil {
				t.Fatalf("error answer %q", w.Body)
			}
			if w.Code == http.StatusServiceUnavailable && m["code"] != apiCodeResourceExhausted {
				t.Fatalf("503: %s", w.Body)
			}
			return
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		var req rlsv3.RateLimitRequest
		if err := protojson.Unmarshal(body, &req); err != nil || req.Domain == "" || len(req.Descriptors) == 0 {
			t.Fatalf("decided %q (%v)", body, err)
		}
		var resp rlsv3.RateLimitResponse
		if err := protojson.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatalf("answer %q: %v", w.Body, err)
		}
		if len(resp.Statuses) != len(req.Descriptors) {
			t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(req.Descriptors))
		}
		over := false
		for _, st := range resp.Statuses {
			over = over || st.Code == rlsv3.RateLimitResponse_OVER_LIMIT
		}
		want := rlsv3.RateLimitResponse_OK
		if over {
			want = rlsv3.RateLimitResponse_OVER_LIMIT
		}
		if resp.OverallCode != want || (w.Code == http.StatusOK) != (want == rlsv3.RateLimitResponse_OK) {
			t.Fatalf("status %d, overall %v, a descriptor over %v", w.Code, resp.OverallCode, over)
		}
	})
}
