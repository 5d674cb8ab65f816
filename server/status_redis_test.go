package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/internal/status"
	"github.com/admit-go/admit/policy"
)

// TestStatusRedisInFlight: for a concurrency cap kept in Redis, admit
// serve reports the slots held through this instance, counted as they are
// granted and given back, with no call to Redis to read them
// (admit_layer_in_flight and /status.json's in_flight): leases of
// /v1/acquire (kept in Redis's lease records) until /v1/release, or until
// they run out on the engine's clock, which /v1/extend moves; the
// engine's grants until their Held is released; and, Redis down, those of
// the rule's fallback.
func TestStatusRedisInFlight(t *testing.T) {
	rs := redistest.NewStandalone(t)
	clock := admittest.NewManualClock(apiT0)
	s := startRedisServer(t, rs, `domain: api
rules:
  - name: jobs
    match: job
    store: redis
    concurrency: {max: 5, lease: 1m}
    failure: {policy: fallback, local_share: 1}
`, withEngine(policy.Config{Options: admit.Options{Clock: clock}}))
	base := "http://" + s.HTTPAddr().String()
	want := func(n int64, what string) {
		t.Helper()
		if v, ok := metric(t, s.registry(), "admit_layer_in_flight", "rule", "jobs"); !ok || v != float64(n) {
			t.Errorf("%s: admit_layer_in_flight{rule=jobs} = %v, %v; want %d", what, v, ok, n)
		}
		code, body := statusGet(t, base+"/status.json")
		var snap status.Snapshot
		if err := json.Unmarshal([]byte(body), &snap); code != 200 || err != nil {
			t.Fatalf("/status.json: %d %v %s", code, err, body)
		}
		for _, r := range snap.Rules {
			if r.Rule == "jobs" {
				if !r.Shared || r.InFlight == nil || *r.InFlight != n || r.Waiting == nil || *r.Waiting != 0 {
					t.Errorf("%s: /status.json's row %+v; want shared, %d in flight, 0 waiting", what, r, n)
				}
				return
			}
		}
		t.Errorf("%s: no row for jobs in %s", what, body)
	}
	post := func(path, body string) apiResponse {
		t.Helper()
		res, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var r apiResponse
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(&r); err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, res.StatusCode, b)
		}
		return r
	}
	acquire := func(hits int, ttl time.Duration) string {
		t.Helper()
		r := post("/v1/acquire", `{"domain":"api","hits":`+strconv.Itoa(hits)+`,"ttl_ms":`+strconv.Itoa(int(ttl/time.Millisecond))+
			`,"descriptors":[{"entries":[{"key":"job","value":"etl"}]}]}`)
		if !r.Allowed || r.LeaseID == "" {
			t.Fatalf("acquire: %+v", r)
		}
		return r.LeaseID
	}
	release := func(id string) {
		t.Helper()
		if r := post("/v1/release", `{"lease_id":"`+id+`"}`); !r.Released {
			t.Fatalf("release: %+v", r)
		}
	}

	want(0, "at start")
	a, b := acquire(2, time.Minute), acquire(1, time.Minute)
	want(3, "two leases of 2 and 1 slots")
	release(a)
	want(1, "the lease of 2 released")
	release(b)
	want(0, "both released")

	// A lease runs out on the engine's clock (Redis reclaims its slots
	// then on its own), later if extended.
	c := acquire(1, 10*time.Second)
	clock.Advance(5 * time.Second)
	if r := post("/v1/extend", `{"lease_id":"`+c+`","ttl_ms":20000}`); !r.Extended {
		t.Fatalf("extend: %+v", r)
	}
	clock.Advance(15 * time.Second)
	want(1, "at 20 s of a lease extended at 5 s for 20 s")
	clock.Advance(5 * time.Second)
	want(0, "the extended lease run out")

	// The engine's own grants (the gateway's), until their Held is
	// released.
	req := &policy.Request{Domain: "api", Hits: 3, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "job", Value: "etl"}}}}}
	var h compose.Held
	var res policy.Result
	if err := s.Engine().Check(t.Context(), req, &h, &res); err != nil || !res.Decision.Allowed {
		t.Fatalf("Check: %+v, %v", res.Decision, err)
	}
	want(3, "a check of 3 slots held")
	h.Release()
	want(0, "its Held released")

	// Redis down: the fallback's grants are this instance's too.
	rs.Kill()
	d := acquire(1, time.Minute)
	want(1, "a lease of the fallback")
	release(d)
	want(0, "released")
}
