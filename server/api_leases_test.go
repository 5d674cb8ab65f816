package server

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/policy"
)

var leaseIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// acquire acquires through the API and returns the answer.
func (h *apiHarness) acquire(t testing.TB, body string) *apiResponse {
	t.Helper()
	w := h.post("/v1/acquire", body)
	apiWantStatus(t, w, http.StatusOK)
	return apiDecode(t, w)
}

// TestAPILeases acquires a concurrency cap of 2 through the API: up to
// the cap, refused beyond, released (once), expired on the clock.
func TestAPILeases(t *testing.T) {
	h := newAPIHarness(t, apiPolicy)
	job := apiCheckBody("api", "job=build")
	a1 := h.acquire(t, job)
	a2 := h.acquire(t, job)
	for _, a := range []*apiResponse{a1, a2} {
		if !a.Allowed || !leaseIDPattern.MatchString(a.LeaseID) || a.TTLMs != 30000 || a.ExpiresAt != "2026-03-02T12:00:40.000Z" {
			t.Fatalf("acquire: %+v", a)
		}
	}
	if a1.LeaseID == a2.LeaseID {
		t.Fatal("two leases with one id")
	}
	if *a2.Statuses[0].Remaining != 0 || a2.Statuses[0].Kind != "concurrency" {
		t.Errorf("second acquire: %+v", a2.Statuses[0])
	}
	// Full: refused, no lease. A check sees the cap full too.
	a3 := h.acquire(t, job)
	if a3.Allowed || a3.LeaseID != "" || a3.Statuses[0].Code != "OVER_LIMIT" || a3.Decision.Rule != "jobs" {
		t.Fatalf("third acquire: %+v", a3)
	}
	if r := apiDecode(t, h.post("/v1/check", job)); r.Allowed {
		t.Fatal("check admitted with the cap full")
	}
	if n := h.leases.Len(); n != 2 {
		t.Fatalf("%d leases, want 2", n)
	}
	// Release one: room for one more.
	w := h.post("/v1/release", `{"lease_id":"`+a1.LeaseID+`"}`)
	apiWantStatus(t, w, http.StatusOK)
	if r := apiDecode(t, w); !r.Released {
		t.Fatalf("release: %s", w.Body)
	}
	apiWantError(t, h.post("/v1/release", `{"lease_id":"`+a1.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	apiWantError(t, h.post("/v1/extend", `{"lease_id":"`+a1.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	// A check takes a free slot and gives it back at once.
	for range 3 {
		if r := apiDecode(t, h.post("/v1/check", job)); !r.Allowed || *r.Statuses[0].Remaining != 0 {
			t.Fatalf("check with one slot free: %+v", r)
		}
	}
	a4 := h.acquire(t, job)
	if !a4.Allowed || a4.LeaseID == "" {
		t.Fatalf("acquire after release: %+v", a4)
	}
	// Extend a2 by 50 s from t0+20s; a4 expires at t0+30s.
	h.clock.Advance(20 * time.Second)
	w = h.post("/v1/extend", `{"lease_id":"`+a2.LeaseID+`","ttl_ms":50000}`)
	apiWantStatus(t, w, http.StatusOK)
	if r := apiDecode(t, w); !r.Extended || r.LeaseID != a2.LeaseID || r.TTLMs != 50000 || r.ExpiresAt != "2026-03-02T12:01:20.000Z" {
		t.Fatalf("extend: %s", w.Body)
	}
	h.clock.Advance(10 * time.Second) // a4's lease ends: its slot is free
	if n := h.leases.Len(); n != 1 {
		t.Fatalf("%d leases after a4's expiry, want 1", n)
	}
	apiWantError(t, h.post("/v1/release", `{"lease_id":"`+a4.LeaseID+`"}`), http.StatusNotFound, apiCodeLeaseNotFound)
	a5 := h.acquire(t, `{"domain":"api","ttl_ms":1500,"descriptors":[{"entries":[{"key":"job","value":"build"}]}]}`)
	if !a5.Allowed || a5.TTLMs != 1500 || a5.ExpiresAt != "2026-03-02T12:00:41.500Z" {
		t.Fatalf("acquire with ttl_ms: %+v", a5)
	}
	h.clock.Advance(40 * time.Second) // both expire
	if a := h.acquire(t, job); !a.Allowed || *a.Statuses[0].Remaining != 1 {
		t.Fatalf("after every lease expired: %+v", a)
	}
	// A request nothing caps holds nothing: admitted, no lease.
	if a := h.acquire(t, apiCheckBody("api", "user=alice")); !a.Allowed || a.LeaseID != "" || a.TTLMs != 0 {
		t.Fatalf("acquire without a cap: %+v", a)
	}
	// failed reports an outcome (Finish) and releases all the same.
	a6 := h.acquire(t, job)
	apiWantStatus(t, h.post("/v1/release", `{"lease_id":"`+a6.LeaseID+`","failed":true}`), http.StatusOK)
	a7 := h.acquire(t, job)
	apiWantStatus(t, h.post("/v1/release", `{"lease_id":"`+a7.LeaseID+`","failed":false}`), http.StatusOK)
	if n := h.leases.Len(); n != 1 {
		t.Fatalf("%d leases, want 1", n)
	}
}

// TestAPILeaseTableFull: beyond WithMaxLeases, an acquire is refused with
// 503 before it is checked (so it consumes nothing).
func TestAPILeaseTableFull(t *testing.T) {
	clock := admittest.NewManualClock(apiT0)
	src := new(Engines)
	src.Set(apiEngine(t, apiPolicy, clock))
	leases, err := newLeases(withLeaseClock(clock), withMaxLeases(1))
	if err != nil {
		t.Fatal(err)
	}
	defer leases.Close()
	a, err := newAPI(src, withLeases(leases))
	if err != nil {
		t.Fatal(err)
	}
	h := &apiHarness{api: a, src: src, clock: clock, leases: leases}
	body := apiCheckBody("api", "job=a", "user=alice")
	first := h.acquire(t, body)
	if !first.Allowed || first.LeaseID == "" {
		t.Fatalf("first acquire: %+v", first)
	}
	w := h.post("/v1/acquire", body)
	apiWantError(t, w, http.StatusServiceUnavailable, apiCodeTooManyLeases)
	if w.Header().Get("Retry-After") == "" {
		t.Error("no Retry-After on a 503")
	}
	// The refused acquire took nothing from per-user (2/s): one left.
	if r := apiDecode(t, h.post("/v1/check", apiCheckBody("api", "user=alice"))); !r.Allowed || *r.Statuses[0].Remaining != 0 {
		t.Fatalf("per-user after the refused acquire: %+v", r.Statuses[0])
	}
	if _, err := leases.Acquire(context.Background(), src.Engine(), &policy.Request{Domain: "api", Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "job", Value: "b"}}}}}, 0, new(policy.Result)); !errors.Is(err, errTooManyLeases) {
		t.Errorf("Acquire on a full table: %v", err)
	}
	apiWantStatus(t, h.post("/v1/release", `{"lease_id":"`+first.LeaseID+`"}`), http.StatusOK)
	if a := h.acquire(t, apiCheckBody("api", "job=a")); !a.Allowed || a.LeaseID == "" {
		t.Fatalf("acquire after release: %+v", a)
	}
}

// TestLeasesReaper: the table's goroutine gives back expired leases on
// its clock, without any call.
func TestLeasesReaper(t *testing.T) {
	apiNoLeak(t)
	clock := admittest.NewManualClock(apiT0)
	reaped := make(chan int, 16)
	l, err := newLeases(withLeaseClock(clock), leaseOptionFunc(func(o *leaseOptions) { o.reaped = func(n int) { reaped <- n } }))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := apiEngine(t, apiPolicy, clock)
	req := &policy.Request{Domain: "api", Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "job", Value: "x"}}}}}
	var res policy.Result
	ctx := context.Background()
	long, err := l.Acquire(ctx, e, req, time.Minute, &res)
	if err != nil || long.ID == "" {
		t.Fatalf("Acquire: %v %+v", err, long)
	}
	short, err := l.Acquire(ctx, e, req, 10*time.Second, &res)
	if err != nil || short.ID == "" {
		t.Fatalf("Acquire: %v %+v", err, short)
	}
	if _, err := l.Acquire(ctx, e, req, 0, &res); err != nil || res.Decision.Allowed {
		t.Fatalf("third Acquire over the cap of 2: %v %+v", err, res.Decision)
	}
	// The goroutine sleeps until the short lease's expiry.
	waitTimers := func() {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := clock.BlockUntilTimers(c, 1); err != nil {
			t.Fatal("the reaper never armed its timer")
		}
	}
	waitTimers()
	clock.Advance(10 * time.Second)
	select {
	case n := <-reaped:
		if n != 1 {
			t.Fatalf("reaped %d, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reaper did not run")
	}
	// The slot is back: the engine admits one more (checked directly,
	// not through the table, which would reap by itself).
	var h2 apiHeld
	if err := e.Check(ctx, req, &h2.held, &h2.res); err != nil || !h2.res.Decision.Allowed {
		t.Fatalf("after the reaper: %v %+v", err, h2.res.Decision)
	}
	h2.held.Release()
	waitTimers()
	clock.Advance(time.Hour)
	select {
	case n := <-reaped:
		if n != 1 {
			t.Fatalf("reaped %d, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reaper did not run")
	}
	if err := l.Release(context.Background(), long.ID); !errors.Is(err, errLeaseNotFound) {
		t.Errorf("Release of an expired lease: %v", err)
	}
}

// TestLeasesAcquireWaitsForReaper: a lease that has expired is free for
// the next acquire even while the table's goroutine, which took it off the
// table, has not yet given its slots back: the acquire waits for it (and
// gives up with its context), rather than finding the cap still full.
func TestLeasesAcquireWaitsForReaper(t *testing.T) {
	apiNoLeak(t)
	clock := admittest.NewManualClock(apiT0)
	inReaper, letGo := make(chan struct{}), make(chan struct{})
	l, err := newLeases(withLeaseClock(clock), leaseOptionFunc(func(o *leaseOptions) {
		o.reaping = func() {
			inReaper <- struct{}{}
			<-letGo
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := apiEngine(t, apiPolicy, clock)
	req := &policy.Request{Domain: "api", Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "job", Value: "w"}}}}}
	var res policy.Result
	ctx := context.Background()
	for range 2 {
		if ls, err := l.Acquire(ctx, e, req, 10*time.Second, &res); err != nil || ls.ID == "" {
			t.Fatalf("Acquire: %v %+v", err, ls)
		}
	}
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilTimers(c, 1); err != nil {
		t.Fatal("the reaper never armed its timer")
	}
	clock.Advance(10 * time.Second)
	select {
	case <-inReaper: // both leases are off the table, their slots still held
	case <-time.After(5 * time.Second):
		t.Fatal("the reaper did not run")
	}
	// An acquire now waits for the reaper: with a context already done it
	// gives up, taking nothing.
	done, stop := context.WithCancel(ctx)
	stop()
	if ls, err := l.Acquire(done, e, req, 0, &res); !errors.Is(err, context.Canceled) || ls.ID != "" {
		t.Fatalf("Acquire while the reaper gives back: %v %+v", err, ls)
	}
	// Len waits for the reaper too: it returns once the slots are back.
	lenDone := make(chan int)
	go func() { lenDone <- l.Len() }()
	close(letGo)
	if n := <-lenDone; n != 0 {
		t.Fatalf("Len %d with both leases expired", n)
	}
	var direct apiHeld // checked on the engine, not through the table
	if err := e.Check(ctx, req, &direct.held, &direct.res); err != nil || direct.res.Statuses[0].Decision.Remaining != 1 {
		t.Fatalf("after Len: %v %+v", err, direct.res.Statuses)
	}
	direct.held.Release()
	// Both slots are free for the next one.
	ls, err := l.Acquire(ctx, e, req, 0, &res)
	if err != nil || ls.ID == "" || res.Statuses[0].Decision.Remaining != 1 {
		t.Fatalf("Acquire after the reaper: %v %+v %+v", err, ls, res.Statuses)
	}
}

// apiHeld is a check's Held and Result, for checks made directly on
// the engine.
type apiHeld struct {
	held compose.Held
	res  policy.Result
}

// TestLeasesClose: Close gives every slot back, stops the goroutine, and
// is idempotent; the table then refuses every call.
func TestLeasesClose(t *testing.T) {
	apiNoLeak(t)
	clock := admittest.NewManualClock(apiT0)
	l, err := newLeases(withLeaseClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	e := apiEngine(t, apiPolicy, clock)
	req := &policy.Request{Domain: "api", Hits: 2, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "job", Value: "x"}}}}}
	var res policy.Result
	ls, err := l.Acquire(context.Background(), e, req, 0, &res)
	if err != nil || ls.ID == "" {
		t.Fatalf("Acquire: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var h apiHeld
	if err := e.Check(context.Background(), req, &h.held, &h.res); err != nil || !h.res.Decision.Allowed {
		t.Fatalf("slots not given back by Close: %v %+v", err, h.res.Decision)
	}
	h.held.Release()
	for name, err := range map[string]error{
		"Release": l.Release(context.Background(), ls.ID),
		"Finish":  l.Finish(context.Background(), ls.ID, false),
		"Extend":  func() error { _, err := l.Extend(context.Background(), ls.ID, 0); return err }(),
		"Acquire": func() error { _, err := l.Acquire(context.Background(), e, req, 0, &res); return err }(),
	} {
		if !errors.Is(err, errLeasesClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	// The API answers 503.
	src := new(Engines)
	src.Set(e)
	a, err := newAPI(src, withLeases(l))
	if err != nil {
		t.Fatal(err)
	}
	hh := &apiHarness{api: a}
	apiWantError(t, hh.post("/v1/acquire", apiCheckBody("api", "job=x")), http.StatusServiceUnavailable, apiCodeUnavailable)
	apiWantError(t, hh.post("/v1/release", `{"lease_id":"`+ls.ID+`"}`), http.StatusServiceUnavailable, apiCodeUnavailable)
}

// TestAPICloseOwnLeases: an API's own lease table is closed by its Close.
func TestAPICloseOwnLeases(t *testing.T) {
	apiNoLeak(t)
	src := new(Engines)
	src.Set(apiEngine(t, apiPolicy, admittest.NewManualClock(apiT0)))
	a, err := newAPI(src)
	if err != nil {
		t.Fatal(err)
	}
	h := &apiHarness{api: a}
	if r := apiDecode(t, h.post("/v1/acquire", apiCheckBody("api", "job=x"))); r.LeaseID == "" {
		t.Fatal("no lease")
	}
	_ = a.Close()
	_ = a.Close()
	if r := apiDecode(t, h.post("/v1/check", apiCheckBody("api", "job=x"))); *r.Statuses[0].Remaining != 1 {
		t.Fatalf("slot held after Close: %+v", r.Statuses[0])
	}
}

func TestLeasesTTL(t *testing.T) {
	l, err := newLeases(withLeaseTTL(time.Second, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for in, want := range map[time.Duration]time.Duration{0: time.Second, time.Millisecond: time.Millisecond, time.Minute: time.Minute} {
		if got, err := l.TTL(in); err != nil || got != want {
			t.Errorf("TTL(%v) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []time.Duration{-1, time.Minute + 1} {
		if _, err := l.TTL(in); !errors.Is(err, errInvalidTTL) {
			t.Errorf("TTL(%v): %v", in, err)
		}
	}
	if _, err := l.Extend(context.Background(), "x", -1); !errors.Is(err, errInvalidTTL) {
		t.Errorf("Extend(-1): %v", err)
	}
	for i, o := range []leaseOption{withMaxLeases(0), withLeaseTTL(0, time.Second), withLeaseTTL(time.Minute, time.Second)} {
		if _, err := newLeases(o); !errors.Is(err, errInvalidConfig) {
			t.Errorf("option %d: %v", i, err)
		}
	}
}

// TestLeasesConcurrent acquires and releases from many goroutines on
// the system clock: the cap is never exceeded, and every slot comes back.
func TestLeasesConcurrent(t *testing.T) {
	apiNoLeak(t)
	p, err := policy.Parse("p.yaml", []byte("domain: d\nrules:\n  - name: c\n    match: k\n    concurrency: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.NewEngine(p, storesOf(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLeases(withLeaseTTL(time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	req := policy.Request{Domain: "d", Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "k", Value: "v"}}}}}
	var (
		mu      sync.Mutex
		held    int
		maxHeld int
		wg      sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			var res policy.Result
			for i := range 200 {
				ttl := time.Second
				if i%7 == 0 {
					ttl = time.Millisecond // some expire instead
				}
				ls, err := l.Acquire(context.Background(), e, &req, ttl, &res)
				if err != nil {
					t.Error(err)
					return
				}
				if ls.ID == "" {
					continue
				}
				// While a lease that cannot expire is held, it counts.
				counted := ttl == time.Second
				if counted {
					mu.Lock()
					held++
					maxHeld = max(maxHeld, held)
					mu.Unlock()
					runtime.Gosched()
					mu.Lock()
					held--
					mu.Unlock()
				}
				switch err := l.Release(context.Background(), ls.ID); {
				case err == nil:
				case errors.Is(err, errLeaseNotFound) && ttl == time.Millisecond:
				default:
					t.Errorf("goroutine %d: Release: %v", g, err)
				}
			}
		})
	}
	wg.Wait()
	_ = l.Close()
	var h apiHeld
	req.Hits = 3
	if err := e.Check(context.Background(), &req, &h.held, &h.res); err != nil || !h.res.Decision.Allowed {
		t.Fatalf("slots missing at the end: %v %+v", err, h.res.Decision)
	}
	h.held.Release()
	if maxHeld > 3 {
		t.Errorf("%d leases at once, the cap is 3", maxHeld)
	}
}

func TestLeaseIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newLeaseID()
		if !leaseIDPattern.MatchString(id) || seen[id] {
			t.Fatalf("id %q (seen: %v)", id, seen[id])
		}
		seen[id] = true
	}
}

// TestLeasesExtendRelease extends and releases one lease at once, many
// times: each extension either succeeds or finds the lease gone, and the
// slots always come back.
func TestLeasesExtendRelease(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("domain: d\nrules:\n  - name: c\n    match: k\n    concurrency: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.NewEngine(p, storesOf(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLeases()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	req := policy.Request{Domain: "d", Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "k", Value: "v"}}}}}
	var res policy.Result
	for i := range 300 {
		ls, err := l.Acquire(context.Background(), e, &req, 0, &res)
		if err != nil || ls.ID == "" {
			t.Fatalf("acquire %d: %+v, %v (%+v)", i, ls, err, res.Decision)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := l.Extend(context.Background(), ls.ID, time.Minute); err != nil && !errors.Is(err, errLeaseNotFound) {
				t.Errorf("extend: %v", err)
			}
		})
		wg.Go(func() {
			if err := l.Release(context.Background(), ls.ID); err != nil {
				t.Errorf("release: %v", err)
			}
		})
		wg.Wait()
	}
	if n := l.Len(); n != 0 {
		t.Errorf("%d leases left", n)
	}
}
