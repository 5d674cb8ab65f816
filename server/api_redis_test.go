package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/internal/stores/inredis"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/redisstore"
)

// apiRedisPolicy keeps its rules in Redis, each with its failure policy.
const apiRedisPolicy = `
domain: api
defaults:
  store: redis
rules:
  - name: per-user
    match: user
    rate: 3/min
    failure: {policy: fail_closed, timeout: 1s}
  - name: jobs
    match: job
    concurrency: {max: 2, lease: 1h}
    failure: fail_open
  - name: batches
    match: batch
    store: local
    concurrency: 1
`

// apiRedisInstances returns n APIs, each with its engine and lease table,
// sharing one private Redis (which the test may kill): n instances of
// admit serve. The engines decide at the instants of clock.
func apiRedisInstances(t *testing.T, n int) ([]*apiHarness, *redistest.Server) {
	return apiRedisFleet(t, n, false)
}

// apiRedisFleet is apiRedisInstances whose lease tables keep the leases
// of caps kept in Redis there when shared is set (WithLeaseStore), as
// admit serve's do.
func apiRedisFleet(t *testing.T, n int, shared bool) ([]*apiHarness, *redistest.Server) {
	t.Helper()
	srv := redistest.NewStandalone(t)
	store, err := redisstore.New(srv.Client(t), redisstore.Config{Prefix: redistest.Prefix(t), MinTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	clock := admittest.NewManualClock(apiT0)
	p, err := policy.Parse("policy.yaml", []byte(apiRedisPolicy))
	if err != nil {
		t.Fatal(err)
	}
	probe := srv.Client(t)
	out := make([]*apiHarness, n)
	for i := range out {
		e, err := policy.NewEngine(p, redisBackends(store, clock))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		src := new(Engines)
		src.Set(e)
		leaseOpts := []leaseOption{withLeaseClock(clock)}
		if shared {
			leaseOpts = append(leaseOpts, withLeaseStore(inredis.LeaseRecords(store)))
		}
		leases, err := newLeases(leaseOpts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = leases.Close() })
		ready, err := newReadiness(src, withProbe("redis", func(ctx context.Context) error { return probe.Ping(ctx).Err() }))
		if err != nil {
			t.Fatal(err)
		}
		a, err := newAPI(src, withLeases(leases), withReadiness(ready))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &apiHarness{api: a, src: src, clock: clock, leases: leases}
	}
	return out, srv
}

// TestAPIRedis: two instances on one Redis enforce one rate and one
// concurrency cap together, through /v1/check, /json and leases.
func TestAPIRedis(t *testing.T) {
	in, _ := apiRedisInstances(t, 2)
	a, b := in[0], in[1]
	user := apiCheckBody("api", "user=alice")
	for i := range 3 {
		h := in[i%2]
		r := apiDecode(t, h.post("/v1/check", user))
		if !r.Allowed || *r.Statuses[0].Remaining != int64(2-i) {
			t.Fatalf("check %d: %+v", i, r.Statuses[0])
		}
	}
	if r := apiDecode(t, b.post("/v1/check", user)); r.Allowed || r.Statuses[0].Code != "OVER_LIMIT" || *r.Statuses[0].RetryAfterMs != 20000 {
		t.Fatalf("fourth check: %+v", r.Statuses[0])
	}
	w := a.post("/json", user)
	apiWantStatus(t, w, http.StatusTooManyRequests)
	if !strings.Contains(w.Body.String(), `"code":"OVER_LIMIT","currentLimit":{"name":"per-user","requestsPerUnit":3,"unit":"MINUTE"}`) {
		t.Errorf("/json: %s", w.Body)
	}

	job := apiCheckBody("api", "job=etl")
	l1 := a.acquire(t, job)
	l2 := b.acquire(t, job)
	if !l1.Allowed || !l2.Allowed || l1.LeaseID == "" || l2.LeaseID == "" {
		t.Fatalf("acquires: %+v %+v", l1, l2)
	}
	if r := a.acquire(t, job); r.Allowed || r.LeaseID != "" {
		t.Fatalf("third acquire over a cap of 2 in Redis: %+v", r)
	}
	// A lease is released through the instance that holds it.
	apiWantError(t, a.post("/v1/release", `{"lease_id":"`+l2.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	apiWantStatus(t, b.post("/v1/release", `{"lease_id":"`+l2.LeaseID+`"}`), http.StatusOK)
	if r := a.acquire(t, job); !r.Allowed || r.LeaseID == "" {
		t.Fatalf("acquire after release: %+v", r)
	}
	// Expiry on the instance's clock gives the slots back in Redis.
	a.clock.Advance(31 * time.Second)
	if n := a.leases.Len(); n != 0 {
		t.Fatalf("%d leases after their TTL", n)
	}
	if r := b.acquire(t, apiCheckBody("api", "job=etl", "job=etl")); !r.Allowed {
		t.Fatalf("both slots free after expiry: %+v", r)
	}
}

// TestAPIRedisDown: with Redis killed, each rule's failure policy decides
// (fail_closed refuses, fail_open admits), /readyz reports the probe.
func TestAPIRedisDown(t *testing.T) {
	in, srv := apiRedisInstances(t, 1)
	h := in[0]
	if w := h.do(http.MethodGet, "/readyz", ""); w.Code != http.StatusOK {
		t.Fatalf("/readyz with Redis up: %d %s", w.Code, w.Body)
	}
	srv.Kill()
	r := apiDecode(t, h.post("/v1/check", apiCheckBody("api", "user=bob")))
	if r.Allowed || !strings.HasSuffix(r.Decision.Rule, "fail-closed") {
		t.Errorf("fail_closed rule with Redis down: %+v", r.Decision)
	}
	a := h.acquire(t, apiCheckBody("api", "job=x"))
	if !a.Allowed || a.LeaseID != "" {
		t.Errorf("fail_open cap with Redis down: %+v", a)
	}
	w := h.do(http.MethodGet, "/readyz", "")
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"status":"not ready"`) {
		t.Errorf("/readyz with Redis down: %d %s", w.Code, w.Body)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.do(http.MethodGet, "/readyz", "").Code != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/readyz not ready after Redis restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAPIRedisLeaseTTL: the slots of a cap kept in Redis expire there with
// the API's lease, not the rule's own: taken for ttl_ms, renewed by
// /v1/extend (shorter or longer); a lease whose slots Redis no longer
// holds ends; an extension Redis cannot be told of fails, and the lease
// keeps its expiry.
func TestAPIRedisLeaseTTL(t *testing.T) {
	in, srv := apiRedisInstances(t, 2)
	a, b := in[0], in[1]
	// The rule "jobs" holds its slots 1 h in Redis by itself; the cap is 2.
	acquire := func(h *apiHarness, ttlMs string) *apiResponse {
		t.Helper()
		return h.acquire(t, `{"domain":"api","ttl_ms":`+ttlMs+`,"descriptors":[{"entries":[{"key":"job","value":"etl"}]},{"entries":[{"key":"job","value":"etl"}]}]}`)
	}
	// retryMs is how long a refused acquire of one slot has to wait: until
	// the earliest lease on the key expires in Redis.
	retryMs := func() int64 {
		t.Helper()
		r := b.acquire(t, apiCheckBody("api", "job=etl"))
		if r.Allowed || r.Decision.RetryAfterMs == nil {
			t.Fatalf("acquire over the cap: %+v", r)
		}
		return *r.Decision.RetryAfterMs
	}
	within := func(what string, got, want int64) {
		t.Helper()
		// Redis's clock runs while the test does: allow it 5 s.
		if got > want || got < want-5000 {
			t.Errorf("%s: retry after %d ms, want about %d", what, got, want)
		}
	}

	l := acquire(a, "60000")
	if !l.Allowed || l.LeaseID == "" || l.TTLMs != 60000 {
		t.Fatalf("acquire: %+v", l)
	}
	within("slots taken for ttl_ms 60000", retryMs(), 60000)

	extend := func(id, ttlMs string) *httptest.ResponseRecorder {
		return a.post("/v1/extend", `{"lease_id":"`+id+`","ttl_ms":`+ttlMs+`}`)
	}
	if r := apiDecode(t, extend(l.LeaseID, "600000")); !r.Extended || r.TTLMs != 600000 {
		t.Fatalf("extend to 10 min: %+v", r)
	}
	within("extended to 600000", retryMs(), 600000)
	if r := apiDecode(t, extend(l.LeaseID, "10000")); !r.Extended || r.TTLMs != 10000 {
		t.Fatalf("extend to 10 s: %+v", r)
	}
	within("shortened to 10000", retryMs(), 10000)
	// The table gives the slots back in Redis when the lease expires (on
	// the instance's clock).
	a.clock.Advance(11 * time.Second)
	if n := a.leases.Len(); n != 0 {
		t.Fatalf("%d leases after their TTL", n)
	}
	if r := b.acquire(t, apiCheckBody("api", "job=etl", "job=etl")); !r.Allowed {
		t.Fatalf("both slots free after the lease expired: %+v", r)
	}
	l = acquire(a, "60000")
	if l.Allowed {
		t.Fatalf("acquire while b holds both slots: %+v", l)
	}
	if err := srv.Client(t).FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	l = acquire(a, "60000")
	if !l.Allowed || l.LeaseID == "" {
		t.Fatalf("acquire: %+v", l)
	}

	// Redis loses the slots (as when their lease expired there): the lease
	// ends at its next extension.
	if err := srv.Client(t).FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	apiWantError(t, extend(l.LeaseID, "10000"), http.StatusNotFound, apiCodeLeaseNotFound)
	if n := a.leases.Len(); n != 0 {
		t.Fatalf("%d leases after Redis lost the slots, want 0", n)
	}

	// Redis down: the extension fails and the lease stays as it was.
	l = acquire(a, "60000")
	if !l.Allowed || l.LeaseID == "" {
		t.Fatalf("acquire: %+v", l)
	}
	srv.Kill()
	msg := apiWantError(t, extend(l.LeaseID, "120000"), http.StatusServiceUnavailable, apiCodeUnavailable)
	if !strings.Contains(msg, "retry") {
		t.Errorf("message %q", msg)
	}
	if n := a.leases.Len(); n != 1 {
		t.Fatalf("%d leases after a failed extension, want 1", n)
	}
	a.clock.Advance(61 * time.Second)
	if n := a.leases.Len(); n != 0 {
		t.Fatalf("%d leases at the old expiry, want 0", n)
	}
}

// TestAPIRedisSharedLeases: with the leases of caps kept in Redis kept
// there too, any instance releases or extends a lease another granted, a
// lease outlives the table that granted it, and a lease holding a cap kept
// in memory stays with its instance.
func TestAPIRedisSharedLeases(t *testing.T) {
	in, srv := apiRedisFleet(t, 3, true)
	a, b, c := in[0], in[1], in[2]
	job := apiCheckBody("api", "job=etl")
	l1 := a.acquire(t, job)
	l2 := a.acquire(t, job)
	if !l1.Allowed || !l2.Allowed || !leaseIDPattern.MatchString(l1.LeaseID) || !leaseIDPattern.MatchString(l2.LeaseID) || l1.TTLMs != 30000 {
		t.Fatalf("acquires: %+v %+v", l1, l2)
	}
	if n := a.leases.Len(); n != 0 {
		t.Errorf("%d leases in the granting table, want 0: they are in Redis", n)
	}
	if r := c.acquire(t, job); r.Allowed {
		t.Fatalf("third acquire over a cap of 2: %+v", r)
	}

	// Released through another instance: its slot is free for all.
	r := apiDecode(t, b.post("/v1/release", `{"lease_id":"`+l1.LeaseID+`"}`))
	if !r.Released {
		t.Fatalf("release through b: %+v", r)
	}
	apiWantError(t, c.post("/v1/release", `{"lease_id":"`+l1.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	l3 := c.acquire(t, job)
	if !l3.Allowed || l3.LeaseID == "" {
		t.Fatalf("acquire after the release: %+v", l3)
	}

	// Extended through another instance, for longer and then shorter.
	retryMs := func() int64 {
		t.Helper()
		r := b.acquire(t, job)
		if r.Allowed || r.Decision.RetryAfterMs == nil {
			t.Fatalf("acquire over the cap: %+v", r)
		}
		return *r.Decision.RetryAfterMs
	}
	for _, ttl := range []int64{600000, 45000} {
		e := apiDecode(t, c.post("/v1/extend", `{"lease_id":"`+l2.LeaseID+`","ttl_ms":`+strconv.FormatInt(ttl, 10)+`}`))
		if !e.Extended || e.LeaseID != l2.LeaseID || e.TTLMs != ttl {
			t.Fatalf("extend through c to %d ms: %+v", ttl, e)
		}
		// l3 (30 s) expires first, unless l2 does.
		want := min(ttl, 30000)
		if got := retryMs(); got > want || got < want-5000 {
			t.Errorf("after extending to %d ms: retry after %d ms, want about %d", ttl, got, want)
		}
	}

	// The granting table closes (the instance restarts): its leases stay.
	if err := a.leases.Close(); err != nil {
		t.Fatal(err)
	}
	if r := b.acquire(t, job); r.Allowed {
		t.Fatalf("acquire after the granting table closed: %+v", r)
	}
	for _, id := range []string{l2.LeaseID, l3.LeaseID} {
		if r := apiDecode(t, b.post("/v1/release", `{"lease_id":"`+id+`"}`)); !r.Released {
			t.Fatalf("release: %+v", r)
		}
	}
	both := b.acquire(t, apiCheckBody("api", "job=etl", "job=etl"))
	if !both.Allowed {
		t.Fatalf("both slots free after the releases: %+v", both)
	}
	if r := apiDecode(t, c.post("/v1/release", `{"lease_id":"`+both.LeaseID+`"}`)); !r.Released {
		t.Fatalf("release: %+v", r)
	}

	// A lease holding a cap kept in memory stays with its instance.
	mixed := b.acquire(t, apiCheckBody("api", "batch=nightly"))
	if !mixed.Allowed || mixed.LeaseID == "" || b.leases.Len() != 1 {
		t.Fatalf("acquire of a local cap: %+v, %d leases in the table", mixed, b.leases.Len())
	}
	apiWantError(t, c.post("/v1/release", `{"lease_id":"`+mixed.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	apiWantError(t, c.post("/v1/extend", `{"lease_id":"`+mixed.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	if r := apiDecode(t, b.post("/v1/release", `{"lease_id":"`+mixed.LeaseID+`"}`)); !r.Released {
		t.Fatalf("release: %+v", r)
	}

	// Its slots vanish from Redis (as when they expired there) while its
	// record stays: the next extension ends the lease.
	gone := b.acquire(t, job)
	if !gone.Allowed || gone.LeaseID == "" {
		t.Fatalf("acquire: %+v", gone)
	}
	rc := srv.Client(t)
	for _, pattern := range []string{"*:conc:*", "*:concw:*"} {
		keys, err := rc.Keys(t.Context(), pattern).Result()
		if err != nil || len(keys) == 0 {
			t.Fatalf("keys %s: %v, %v", pattern, keys, err)
		}
		if err := rc.Del(t.Context(), keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	apiWantError(t, c.post("/v1/extend", `{"lease_id":"`+gone.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	apiWantError(t, b.post("/v1/release", `{"lease_id":"`+gone.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	if keys := rc.Keys(t.Context(), "*leases:*").Val(); len(keys) != 0 {
		t.Errorf("records left: %q", keys)
	}

	// Redis down: a release or extension of a lease kept there is refused
	// with 503 and may be retried.
	l4 := b.acquire(t, job)
	if !l4.Allowed || l4.LeaseID == "" {
		t.Fatalf("acquire: %+v", l4)
	}
	srv.Kill()
	apiWantError(t, c.post("/v1/release", `{"lease_id":"`+l4.LeaseID+`"}`), http.StatusServiceUnavailable, apiCodeUnavailable)
	apiWantError(t, c.post("/v1/extend", `{"lease_id":"`+l4.LeaseID+`"}`), http.StatusServiceUnavailable, apiCodeUnavailable)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The restarted Redis kept nothing (no persistence): the lease is gone.
	apiWantError(t, c.post("/v1/release", `{"lease_id":"`+l4.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	// An id that is not one of ours does not reach Redis.
	apiWantError(t, c.post("/v1/release", `{"lease_id":"../../x"}`), http.StatusNotFound, apiCodeLeaseNotFound)
}

// TestAPIRedisReset: /v1/reset of a limit kept in Redis resets it for
// every instance; with Redis down it answers 503.
func TestAPIRedisReset(t *testing.T) {
	in, srv := apiRedisInstances(t, 2)
	a, b := in[0], in[1]
	reset, err := newAPI(a.src, withReset(true))
	if err != nil {
		t.Fatal(err)
	}
	user := apiCheckBody("api", "user=carol")
	for range 3 {
		apiDecode(t, a.post("/v1/check", user))
	}
	if r := apiDecode(t, b.post("/v1/check", user)); r.Allowed {
		t.Fatalf("fourth check: %+v", r)
	}
	do := func(body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/reset", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		reset.ServeHTTP(w, req)
		return w
	}
	if w := do(user); w.Code != http.StatusOK || w.Body.String() != "{\"reset\":1}\n" {
		t.Fatalf("reset: %d %s", w.Code, w.Body)
	}
	if r := apiDecode(t, b.post("/v1/check", user)); !r.Allowed {
		t.Errorf("the other instance after the reset: %+v", r)
	}
	srv.Kill()
	msg := apiWantError(t, do(user), http.StatusServiceUnavailable, apiCodeUnavailable)
	if !strings.Contains(msg, "0 limits reset") {
		t.Errorf("message %q", msg)
	}
}
