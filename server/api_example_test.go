package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
	"github.com/admit-go/admit/server"
)

// exampleEngine returns an engine of a small policy deciding on clock.
func exampleEngine(clock *admittest.ManualClock) *policy.Engine {
	p, err := policy.ParseYAML("policy.yaml", []byte(`
domain: api
rules:
  - name: per-user
    match: user
    rate: 2/s
  - name: jobs
    match: job
    concurrency: 1
`))
	if err != nil {
		panic(err)
	}
	e, err := policy.NewEngine(p, policy.WithBackend(policy.StoreLocal, backends.Memory()), policy.WithClock(clock))
	if err != nil {
		panic(err)
	}
	return e
}

// A check round trip: two requests of user alice are admitted, the third
// is refused with the time to wait.
func ExampleAPI() {
	clock := admittest.NewManualClock(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	var engines server.Engines
	engines.Set(exampleEngine(clock))
	api, err := server.NewAPI(&engines)
	if err != nil {
		panic(err)
	}
	defer api.Close()

	for range 3 {
		body := `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"alice"}]}]}`
		r := httptest.NewRequest(http.MethodPost, "/v1/check", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		var answer struct {
			Allowed  bool `json:"allowed"`
			Decision struct {
				Remaining    int64 `json:"remaining"`
				RetryAfterMs int64 `json:"retry_after_ms"`
			} `json:"decision"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
			panic(err)
		}
		fmt.Println(w.Code, answer.Allowed, answer.Decision.Remaining, answer.Decision.RetryAfterMs, w.Header().Get("RateLimit"))
		clock.Advance(100 * time.Millisecond)
	}
	// Output:
	// 200 true 1 0 "per-user";r=1;t=1
	// 200 true 0 0 "per-user";r=0;t=1
	// 200 false 0 300 "per-user";r=0;t=1
}

// The body of a refused check, as it is sent.
func ExampleAPI_check() {
	clock := admittest.NewManualClock(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	var engines server.Engines
	engines.Set(exampleEngine(clock))
	api, err := server.NewAPI(&engines, server.WithRefusalStatus(http.StatusTooManyRequests))
	if err != nil {
		panic(err)
	}
	defer api.Close()
	body := `{"domain":"api","hits":3,"descriptors":[{"entries":[{"key":"user","value":"bob"}]}]}`
	w := httptest.NewRecorder()
	api.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/check", strings.NewReader(body)))
	fmt.Printf("%d Retry-After: %q\n", w.Code, w.Header().Get("Retry-After"))
	fmt.Print(w.Body)
	// Output:
	// 429 Retry-After: ""
	// {"allowed":false,"decision":{"allowed":false,"rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":2,"reset_after_ms":0,"never":true},"statuses":[{"code":"OVER_LIMIT","rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":2,"reset_after_ms":0,"never":true}]}
}

// A concurrency slot held under a lease, then released.
func ExampleAPI_acquire() {
	clock := admittest.NewManualClock(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	var engines server.Engines
	engines.Set(exampleEngine(clock))
	leases, err := server.NewLeases(server.WithLeaseClock(clock))
	if err != nil {
		panic(err)
	}
	defer leases.Close()
	api, err := server.NewAPI(&engines, server.WithLeases(leases))
	if err != nil {
		panic(err)
	}
	post := func(path, body string) map[string]any {
		w := httptest.NewRecorder()
		api.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			panic(err)
		}
		m["status"] = w.Code
		return m
	}
	job := `{"domain":"api","ttl_ms":60000,"descriptors":[{"entries":[{"key":"job","value":"nightly"}]}]}`
	first := post("/v1/acquire", job)
	fmt.Println(first["allowed"], first["expires_at"], len(first["lease_id"].(string)))
	second := post("/v1/acquire", job)
	fmt.Println(second["allowed"], second["lease_id"])
	released := post("/v1/release", `{"lease_id":"`+first["lease_id"].(string)+`"}`)
	fmt.Println(released["status"], released["released"])
	again := post("/v1/release", `{"lease_id":"`+first["lease_id"].(string)+`"}`)
	fmt.Println(again["status"], again["code"])
	// Output:
	// true 2026-03-02T12:01:00.000Z 32
	// false <nil>
	// 200 true
	// 404 LEASE_NOT_FOUND
}

// Readiness with a probe of the store: not ready while it fails, unless
// the policy's failure policies decide meanwhile (WithDegradedReady).
func ExampleNewReadiness() {
	var engines server.Engines
	engines.Set(exampleEngine(admittest.NewManualClock(time.Time{})))
	storeDown := func(ctx context.Context) error { return errors.New("connection refused") }
	for _, degraded := range []bool{false, true} {
		ready, err := server.NewReadiness(&engines, server.WithProbe("redis", storeDown), server.WithDegradedReady(degraded))
		if err != nil {
			panic(err)
		}
		w := httptest.NewRecorder()
		ready.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		fmt.Print(w.Code, " ", w.Body)
	}
	// Output:
	// 503 {"status":"not ready","policy":"loaded","probes":{"redis":"connection refused"}}
	// 200 {"status":"degraded","policy":"loaded","probes":{"redis":"connection refused"}}
}
