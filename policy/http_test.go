package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
)

// multiTenant is the reference design's multi-tenant API (as in
// testdata/example.yaml) with small numbers, so that a test reaches each
// layer's limit in a few requests.
const multiTenant = `
version: 1
tier_tables:
  plans:
    default: free
    tiers:
      free:
        rate: 5/s
        quota: 8/day
        concurrency: 2
      enterprise:
        rate: 100/s
        quota: 100000/day
        concurrency: 50
    assign:
      acme: enterprise
domain: api
keys: [remote_address, user, tenant, route, generic_key]
rules:
  - name: per-ip
    match: remote_address
    rate: 10/s
  - name: per-user
    match: user
    rate: 2/s
  - name: per-tenant
    match: tenant
    tiers: plans
    store: redis
    failure: {policy: fallback, breaker: true, timeout: 5s}
  - name: login
    match:
      - key: route
        value: POST /login
    rate: 2/s
    store: redis
    failure: {policy: fail_closed, breaker: true, timeout: 5s}
  - name: global
    match:
      - key: generic_key
        value: global
    concurrency: 3
`

// gateway is an httptest server running the multi-tenant policy in front
// of a mux, on real Redis, at the instants of a manual clock.
type gateway struct {
	srv     *httptest.Server
	clock   *admittest.ManualClock
	release chan struct{} // closing it lets the /slow requests finish
	started chan struct{} // a /slow request has entered its handler
}

func newGateway(t *testing.T) *gateway {
	t.Helper()
	store := redisStore(t, redistest.Standalone(t).Client(t), redisstore.Config{})
	p, err := Parse("multi-tenant.yaml", []byte(multiTenant))
	if err != nil {
		t.Fatal(err)
	}
	clock := admittest.NewManualClock(t0)
	e, err := newEngine(p, withRedis(store, clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	g := &gateway{clock: clock, release: make(chan struct{}), started: make(chan struct{}, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "orders") })
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "welcome") })
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		g.started <- struct{}{}
		<-g.release
		io.WriteString(w, "slow")
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	// The test's client is the trusted proxy: it names the client in
	// X-Forwarded-For.
	ip, err := httplimit.NewClientIP(httplimit.ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewHTTP(e, "api",
		HTTPDescriptor{{Key: "remote_address", Value: ip.Key, Required: true}},
		HTTPDescriptor{{Key: "user", Value: httplimit.Header("X-User")}},
		HTTPDescriptor{{Key: "tenant", Value: httplimit.Header("X-Tenant")}},
		HTTPDescriptor{{Key: "route", Value: httplimit.RouteOf(mux)}},
		HTTPDescriptor{{Key: "generic_key", Value: httplimit.Const("global")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	m, err := httplimit.NewDecider(d, httplimit.Config{ExemptPaths: []string{"/healthz"}})
	if err != nil {
		t.Fatal(err)
	}
	g.srv = httptest.NewServer(m.Handler(mux))
	t.Cleanup(g.srv.Close)
	return g
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (g *gateway) do(t *testing.T, method, path, ip, user, tenant string) reply {
	t.Helper()
	req, err := http.NewRequest(method, g.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", ip)
	if user != "" {
		req.Header.Set("X-User", user)
	}
	if tenant != "" {
		req.Header.Set("X-Tenant", tenant)
	}
	resp, err := g.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// fields checks the rate-limit fields of a reply, and that it has no
// other field of the family.
func fields(t *testing.T, what string, r reply, want map[string]string) {
	t.Helper()
	for _, name := range []string{"Ratelimit", "Ratelimit-Policy", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Retry-After"} {
		got := strings.Join(r.header.Values(name), ", ")
		if got != want[name] {
			t.Errorf("%s: %s is %q, want %q", what, name, got, want[name])
		}
	}
}

// refused429 checks a 429 and its JSON body.
func refused429(t *testing.T, what string, r reply, dim string, retryMS int64, kind string) {
	t.Helper()
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("%s: status %d, body %q; want 429", what, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("%s: body %q: %v", what, r.body, err)
	}
	want := map[string]any{"code": "RATE_LIMIT", "limit_dim": dim, "retry_after_ms": float64(retryMS)}
	if kind != "" {
		want["kind"] = kind
	}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Errorf("%s: body %v, want %v", what, body, want)
	}
}

// TestHTTPMultiTenant drives the reference design's multi-tenant API
// through net/http: per-IP and per-user limits in memory, per-tenant plans
// and the /login limit in Redis, a global concurrency cap. Each layer
// refuses in turn, and every field and body is checked.
func TestHTTPMultiTenant(t *testing.T) {
	g := newGateway(t)

	// An admitted request: the most restrictive layer is per-user (2/s:
	// 1 left, full again in 500ms).
	r := g.do(t, "GET", "/orders", "203.0.113.1", "ann", "acme")
	if r.status != 200 || r.body != "orders" {
		t.Fatalf("first request: %d %q", r.status, r.body)
	}
	fields(t, "admitted", r, map[string]string{
		"Ratelimit-Policy":      `"per-user";q=2;w=1`,
		"Ratelimit":             `"per-user";r=1;t=1`,
		"X-Ratelimit-Limit":     "2",
		"X-Ratelimit-Remaining": "1",
		"X-Ratelimit-Reset":     "1",
	})

	// per-user: ann's third request in the same instant, from another
	// address.
	g.do(t, "GET", "/orders", "203.0.113.2", "ann", "acme")
	r = g.do(t, "GET", "/orders", "203.0.113.3", "ann", "acme")
	refused429(t, "per-user", r, "per-user", 500, "")
	fields(t, "per-user refusal", r, map[string]string{
		"Ratelimit-Policy":      `"per-user";q=2;w=1`,
		"Ratelimit":             `"per-user";r=0;t=1`,
		"X-Ratelimit-Limit":     "2",
		"X-Ratelimit-Remaining": "0",
		"X-Ratelimit-Reset":     "1",
		"Retry-After":           "1",
	})

	// per-ip: ten requests of one address, each from another user; the
	// per-user refusal above gave its per-ip event back, so 203.0.113.3
	// has its ten.
	for i := range 10 {
		if r := g.do(t, "GET", "/orders", "203.0.113.3", fmt.Sprint("u", i), "acme"); r.status != 200 {
			t.Fatalf("per-ip request %d: %d %s", i, r.status, r.body)
		}
	}
	r = g.do(t, "GET", "/orders", "203.0.113.3", "u10", "acme")
	refused429(t, "per-ip", r, "per-ip", 100, "")
	if got := r.header.Get("Ratelimit-Policy"); got != `"per-ip";q=10;w=1` {
		t.Errorf("per-ip policy field %q", got)
	}

	// per-tenant, in Redis: newco is on the free plan (5/s), whoever
	// sends its requests.
	for i := range 5 {
		if r := g.do(t, "GET", "/orders", fmt.Sprint("198.51.100.", i), fmt.Sprint("n", i), "newco"); r.status != 200 {
			t.Fatalf("newco request %d: %d %s", i, r.status, r.body)
		}
	}
	r = g.do(t, "GET", "/orders", "198.51.100.9", "n9", "newco")
	refused429(t, "per-tenant", r, "per-tenant/free/rate", 200, "")

	// The plan's daily quota (8/day), in Redis: initech (free too) sends a
	// request a second, within its rate, and its ninth is refused until
	// midnight UTC.
	for i := range 8 {
		g.clock.Advance(time.Second)
		if r := g.do(t, "GET", "/orders", fmt.Sprint("192.0.2.", i), fmt.Sprint("i", i), "initech"); r.status != 200 {
			t.Fatalf("initech request %d: %d %s", i, r.status, r.body)
		}
	}
	g.clock.Advance(time.Second)
	r = g.do(t, "GET", "/orders", "192.0.2.9", "i9", "initech")
	midnight := time.Date(t0.Year(), t0.Month(), t0.Day()+1, 0, 0, 0, 0, time.UTC)
	wait := midnight.Sub(g.clock.Now())
	refused429(t, "quota", r, "per-tenant/free/quota", wait.Milliseconds(), "QUOTA_EXCEEDED")
	if got, want := r.header.Get("Retry-After"), fmt.Sprint(int64(wait/time.Second)); got != want {
		t.Errorf("quota Retry-After %q, want %q", got, want)
	}

	// login, in Redis: 2/s for everyone together.
	for i := range 2 {
		if r := g.do(t, "POST", "/login", fmt.Sprint("203.0.113.10", i), fmt.Sprint("l", i), "acme"); r.status != 200 || r.body != "welcome" {
			t.Fatalf("login %d: %d %s", i, r.status, r.body)
		}
	}
	r = g.do(t, "POST", "/login", "203.0.113.109", "l9", "acme")
	refused429(t, "login", r, "login", 500, "")
	// Other routes are not limited by it.
	if r := g.do(t, "GET", "/orders", "203.0.113.108", "l8", "acme"); r.status != 200 {
		t.Fatalf("orders after the login refusal: %d %s", r.status, r.body)
	}

	// global: three requests in flight at most.
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := g.do(t, "GET", "/slow", fmt.Sprint("203.0.113.20", i), fmt.Sprint("s", i), "acme"); r.status != 200 || r.body != "slow" {
				t.Errorf("slow request %d: %d %s", i, r.status, r.body)
			}
		}()
	}
	for range 3 {
		<-g.started
	}
	r = g.do(t, "GET", "/orders", "203.0.113.209", "s9", "acme")
	if r.status != 429 {
		t.Fatalf("fourth in flight: %d %s", r.status, r.body)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || body["limit_dim"] != "global" || body["kind"] != "CONCURRENCY_LIMIT" {
		t.Errorf("concurrency refusal body %q (%v)", r.body, err)
	}
	close(g.release)
	wg.Wait()
	if r := g.do(t, "GET", "/orders", "203.0.113.209", "s9", "acme"); r.status != 200 {
		t.Errorf("after the slow requests ended: %d %s", r.status, r.body)
	}

	// Exempt paths are never limited nor annotated; requests without an
	// address a trusted proxy named are refused as unkeyed.
	if r := g.do(t, "GET", "/healthz", "203.0.113.3", "u10", "acme"); r.status != 200 || r.header.Get("Ratelimit") != "" {
		t.Errorf("healthz: %d %v", r.status, r.header)
	}
	if r := g.do(t, "GET", "/orders", "not-an-address", "x", "acme"); r.status != 400 {
		t.Errorf("garbage X-Forwarded-For: %d %s", r.status, r.body)
	}
}

// TestHTTPDescriptors checks how NewHTTP builds descriptors: optional
// entries leave their descriptor out, required ones make the request
// unkeyed, and a new engine takes over with SetEngine.
func TestHTTPDescriptors(t *testing.T) {
	e, _ := engine(t, `
version: 1
domain: api
rules:
  - name: per-user
    match: user
    rate: 1/s
  - name: per-pair
    match: [{key: tenant}, {key: route}]
    rate: 2/s
`)
	d, err := NewHTTP(e, "api",
		HTTPDescriptor{{Key: "user", Value: httplimit.Header("X-User")}},
		HTTPDescriptor{{Key: "tenant", Value: httplimit.Header("X-Tenant"), Required: true}, {Key: "route", Value: httplimit.Const("/r")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-Tenant", "t1")
	var h compose.Held
	// No user: only the pair is limited.
	for i := range 2 {
		dec, err := d.Decide(req, &h)
		if err != nil || !dec.Allowed || dec.Rule != "per-pair" {
			t.Fatalf("request %d: %+v %v", i, dec, err)
		}
	}
	if dec, err := d.Decide(req, &h); err != nil || dec.Allowed || dec.Rule != "per-pair" {
		t.Fatalf("third: %+v %v", dec, err)
	}
	// No tenant: required, so the request cannot be decided.
	req = httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-User", "u")
	if _, err := d.Decide(req, &h); !errors.Is(err, httplimit.ErrNoKey) {
		t.Fatalf("without the required tenant: %v", err)
	}
	// A request that carries no descriptor is not limited.
	d2, err := NewHTTP(e, "api", HTTPDescriptor{{Key: "user", Value: httplimit.Header("X-User")}})
	if err != nil {
		t.Fatal(err)
	}
	if dec, err := d2.Decide(httptest.NewRequest("GET", "/", nil), &h); err != nil || !dec.Allowed || dec.Limit != admit.Unlimited {
		t.Fatalf("no descriptor: %+v %v", dec, err)
	}
	// SetEngine: the new engine decides, with its own state.
	e2, _ := engine(t, "version: 1\ndomain: api\nrules:\n  - name: per-user\n    match: user\n    rate: 5/s\n")
	if err := d2.SetEngine(e2); err != nil {
		t.Fatal(err)
	}
	if d2.Engine() != e2 {
		t.Fatal("Engine() is not the new engine")
	}
	if dec, _ := d2.Decide(req, &h); dec.Limit.Rate != 5 || dec.Remaining != 4 {
		t.Fatalf("after SetEngine: %+v", dec)
	}
	other, _ := engine(t, "version: 1\ndomain: other\nrules:\n  - name: x\n    match: user\n    rate: 5/s\n")
	if err := d2.SetEngine(other); !errors.Is(err, admit.ErrInvalidConfig) || d2.Engine() != e2 {
		t.Fatalf("SetEngine of an engine without the domain: %v", err)
	}
	if err := d2.SetEngine(nil); !errors.Is(err, admit.ErrInvalidConfig) {
		t.Fatalf("SetEngine(nil): %v", err)
	}
	// Bad constructions.
	for i, f := range []func() (*HTTP, error){
		func() (*HTTP, error) {
			return NewHTTP(nil, "api", HTTPDescriptor{{Key: "a", Value: httplimit.Const("x")}})
		},
		func() (*HTTP, error) {
			return NewHTTP(e, "nope", HTTPDescriptor{{Key: "a", Value: httplimit.Const("x")}})
		},
		func() (*HTTP, error) { return NewHTTP(e, "api") },
		func() (*HTTP, error) { return NewHTTP(e, "api", HTTPDescriptor{}) },
		func() (*HTTP, error) {
			return NewHTTP(e, "api", HTTPDescriptor{{Key: "", Value: httplimit.Const("x")}})
		},
		func() (*HTTP, error) { return NewHTTP(e, "api", HTTPDescriptor{{Key: "a"}}) },
	} {
		if _, err := f(); !errors.Is(err, admit.ErrInvalidConfig) {
			t.Errorf("bad construction %d: %v", i, err)
		}
	}
}

// TestHTTPAllocations: deciding a keyed request through NewHTTP allocates
// nothing beyond the engine's own (none for rate limits in memory).
func TestHTTPAllocations(t *testing.T) {
	e, _ := engine(t, "version: 1\ndomain: api\nrules:\n  - name: per-user\n    match: user\n    rate: 1000000/s\n")
	d, err := NewHTTP(e, "api", HTTPDescriptor{{Key: "user", Value: httplimit.Header("X-User")}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-User", "ann")
	var h compose.Held
	d.Decide(req, &h)
	// Under the race detector sync.Pool drops values at random, and a new
	// scratch costs its own allocations (the struct, its entries and
	// descriptors, the engine's scratch).
	limit := 0.0
	if raceEnabled {
		limit = 4
	}
	if n := testing.AllocsPerRun(100, func() { d.Decide(req, &h) }); n > limit {
		t.Errorf("%v allocations per decision, want at most %v", n, limit)
	}
}

// BenchmarkHTTP is the cost of a policy in front of a handler: an admitted
// request through httplimit and NewHTTP with one rule in memory, against
// the bare handler.
func BenchmarkHTTP(b *testing.B) {
	e, _ := engine(b, "version: 1\ndomain: api\nrules:\n  - name: per-user\n    match: user\n    rate: 1000000000/s\n")
	d, err := NewHTTP(e, "api", HTTPDescriptor{{Key: "user", Value: httplimit.Header("X-User")}})
	if err != nil {
		b.Fatal(err)
	}
	m, err := httplimit.NewDecider(d, httplimit.Config{})
	if err != nil {
		b.Fatal(err)
	}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-User", "ann")
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"policy", m.Handler(bare)}} {
		b.Run(c.name, func(b *testing.B) {
			w := &nopWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				c.h.ServeHTTP(w, req)
			}
		})
	}
}

// nopWriter is a ResponseWriter that keeps only its header map, reused
// from request to request.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}
