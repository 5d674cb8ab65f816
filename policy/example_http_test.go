package policy_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
)

// A policy in front of an HTTP handler: the requests' descriptors come
// from their client address and X-Tenant header, and httplimit writes the
// decision's fields and the refusals.
func ExampleNewHTTP() {
	p, err := policy.Parse("policy.yaml", []byte(`
domain: api
rules:
  - {name: per-ip, match: remote_address, rate: 100/s}
  - {name: per-tenant, match: tenant, rate: 2/s}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	clock := admittest.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := policy.NewEngine(p, policy.Config{
		Options:  admit.Options{Clock: clock},
		Backends: map[string]policy.Backend{policy.StoreLocal: backends.Memory()},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	d, err := policy.NewHTTP(e, "api",
		policy.HTTPDescriptor{{Key: "remote_address", Value: httplimit.RemoteIP, Required: true}},
		policy.HTTPDescriptor{{Key: "tenant", Value: httplimit.Header("X-Tenant")}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := httplimit.NewDecider(d, httplimit.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	for range 3 {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "203.0.113.7:4711"
		r.Header.Set("X-Tenant", "acme")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("RateLimit"), w.Body.String())
	}
	// Output:
	// 200 "per-tenant";r=1;t=1 hello
	// 200 "per-tenant";r=0;t=1 hello
	// 429 "per-tenant";r=0;t=1 {"code":"RATE_LIMIT","limit_dim":"per-tenant","retry_after_ms":500}
}
