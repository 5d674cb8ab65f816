package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/server/admitv1"
)

// failurePolicy keeps a rate per failure policy in Redis, and has a
// descriptor nothing limits.
const failurePolicy = `domain: api
defaults: {store: redis}
rules:
  - {name: open, match: open, rate: 5/hour, failure: fail_open}
  - {name: closed, match: closed, rate: 5/hour, failure: fail_closed}
  - {name: fallback, match: fallback, rate: 5/hour, failure: {policy: fallback, local_share: 1}}
  - {name: shadowed, match: shadowed, rate: 5/hour, shadow: true, failure: fail_open}
  - {name: free, match: free, rate: unlimited, store: local}
`

// failureNames are the descriptors of failurePolicy, one per rule, and
// failureLimited those a limit applies to.
var (
	failureNames   = []string{"open", "closed", "fallback", "shadowed", "free"}
	failureLimited = map[string]bool{"open": true, "closed": true, "fallback": true, "shadowed": true}
)

// failureHarness is an instance of admit serve on a private Redis of
// failurePolicy, with clients of its APIs.
type failureHarness struct {
	t     *testing.T
	s     *Server
	rs    *redistest.Server
	base  string
	ctx   context.Context
	rls   rlsv3.RateLimitServiceClient
	admit admitv1.AdmitClient
}

func newFailureHarness(t *testing.T) *failureHarness {
	t.Helper()
	rs := redistest.NewStandalone(t)
	s := startRedisServer(t, rs, failurePolicy)
	conn, err := grpc.NewClient(s.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &failureHarness{t: t, s: s, rs: rs, base: "http://" + s.HTTPAddr().String(), ctx: ctx,
		rls: rlsv3.NewRateLimitServiceClient(conn), admit: admitv1.NewAdmitClient(conn)}
}

// post posts body to the HTTP API's path.
func (h *failureHarness) post(path, body string) (int, []byte) {
	h.t.Helper()
	resp, err := http.Post(h.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestFailurePolicyQuota: with Redis down, a descriptor a limit applies
// to is never granted quota through Envoy's protocol (gRPC and /json),
// whatever its failure policy decided, while one nothing limits still
// is; nor is a refused request's set of descriptors.
func TestFailurePolicyQuota(t *testing.T) {
	h := newFailureHarness(t)
	ctx, rls, post, rs := h.ctx, h.rls, h.post, h.rs
	names, limited := failureNames, failureLimited
	rlsRequest := func(hits uint64) *rlsv3.RateLimitRequest {
		r := rlsReq("api", 1)
		for _, n := range names {
			r.Descriptors = append(r.Descriptors, withHits(rlsDesc(n, "k"), hits))
		}
		return r
	}
	checkRLS := func(what string, resp *rlsv3.RateLimitResponse) {
		t.Helper()
		if resp.Quota != nil {
			t.Errorf("%s: quota %v for the whole set, which has limited descriptors", what, resp.Quota)
		}
		for i, st := range resp.Statuses {
			if got := st.Quota != nil; got == limited[names[i]] {
				t.Errorf("%s: %s: quota %v; want one only where nothing limits", what, names[i], st.Quota)
			}
		}
	}
	// Peeks (hits 0), which fail_closed admits, then checks.
	for _, hits := range []uint64{0, 1} {
		if resp, err := rls.ShouldRateLimit(ctx, rlsRequest(hits)); err != nil {
			t.Fatal(err)
		} else {
			checkRLS("Redis up", resp)
		}
	}

	rs.Kill()
	for _, hits := range []uint64{0, 1} {
		resp, err := rls.ShouldRateLimit(ctx, rlsRequest(hits))
		if err != nil {
			t.Fatal(err)
		}
		checkRLS("Redis down, ShouldRateLimit", resp)
		if hits == 1 && (resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || resp.Statuses[1].Code != rlsv3.RateLimitResponse_OVER_LIMIT) {
			t.Errorf("Redis down: fail_closed did not refuse: %v", resp)
		}
		body, err := protojson.Marshal(rlsRequest(hits))
		if err != nil {
			t.Fatal(err)
		}
		code, b := post("/json", string(body))
		var out rlsv3.RateLimitResponse
		if err := protojson.Unmarshal(b, &out); err != nil || (code != 200 && code != 429) {
			t.Fatalf("/json: %d %s (%v)", code, b, err)
		}
		checkRLS("Redis down, /json", &out)
	}
	// Only open and free, so that the request is admitted: still no
	// quota for open.
	resp, err := rls.ShouldRateLimit(ctx, rlsReq("api", 1, rlsDesc("open", "k"), rlsDesc("free", "k")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.OverallCode != rlsv3.RateLimitResponse_OK || resp.Quota != nil || resp.Statuses[0].Quota != nil || resp.Statuses[1].Quota == nil {
		t.Errorf("Redis down, fail_open admits: %v; want quota for free only", resp)
	}
	// fail_closed alone refuses: no quota for the set either.
	resp, err = rls.ShouldRateLimit(ctx, rlsReq("api", 1, rlsDesc("closed", "k")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || resp.Quota != nil || resp.Statuses[0].Quota != nil {
		t.Errorf("Redis down, fail_closed refuses: %v; want no quota", resp)
	}

}

// TestFailurePolicyError: with Redis down, each status a failure policy
// decided says so: "error": "store failure" in the HTTP API, error in
// admit.v1; the others have no error.
func TestFailurePolicyError(t *testing.T) {
	h := newFailureHarness(t)
	ctx, adm, post := h.ctx, h.admit, h.post
	names, limited := failureNames, failureLimited
	h.rs.Kill()
	// The HTTP API and admit.v1 say which statuses a failure policy
	// decided: all of them in a peek (which fail_closed admits); in a
	// check, which fail_closed would refuse before the others are asked,
	// those of the other rules.
	for _, tc := range []struct {
		hits  int64
		names []string
	}{
		{0, names},
		{1, []string{"open", "fallback", "shadowed", "free"}},
	} {
		var descs []string
		var adescs []*admitv1.Descriptor
		for _, n := range tc.names {
			descs = append(descs, `{"entries":[{"key":"`+n+`","value":"k"}]}`)
			adescs = append(adescs, admitDesc(n, "k"))
		}
		code, b := post("/v1/check", `{"domain":"api","hits":`+strconv.FormatInt(tc.hits, 10)+`,"descriptors":[`+strings.Join(descs, ",")+`]}`)
		var out struct {
			Allowed  bool
			Statuses []struct {
				Error string `json:"error"`
			} `json:"statuses"`
		}
		if err := json.Unmarshal(b, &out); err != nil || code != 200 || !out.Allowed || len(out.Statuses) != len(tc.names) {
			t.Fatalf("/v1/check: %d %s (%v)", code, b, err)
		}
		a, err := adm.Check(ctx, &admitv1.CheckRequest{Domain: "api", Hits: &tc.hits, Descriptors: adescs})
		if err != nil || !a.Decision.Allowed {
			t.Fatalf("admit.v1 Check: %v, %v", a, err)
		}
		for i, n := range tc.names {
			want := ""
			if limited[n] {
				want = "store failure"
			}
			if got := out.Statuses[i].Error; got != want {
				t.Errorf("hits %d: /v1/check: %s: error %q, want %q, in %s", tc.hits, n, got, want, b)
			}
			if got := a.Statuses[i].GetError(); got != want {
				t.Errorf("hits %d: admit.v1 Check: %s: error %q, want %q: %v", tc.hits, n, got, want, a.Statuses[i])
			}
		}
	}
	// The failures are counted under the store's name.
	if v, ok := metric(t, h.s.registry(), "admit_store_errors_total", "limiter", "redis", "op", "decide"); !ok || v == 0 {
		t.Errorf("admit_store_errors_total{limiter=\"redis\",op=\"decide\"} = %v, %v", v, ok)
	}
}

// TestServerRedisFailurePolicies kills Redis under load: each rule
// follows its failure policy, and decisions come from Redis again once
// it is back. Each phase uses keys of its own: keys Redis refused are
// still refused while it is down (the store's deny cache is exact).
func TestServerRedisFailurePolicies(t *testing.T) {
	const src = `domain: api
defaults:
  store: redis
rules:
  - name: open
    match: [{key: rule, value: open}, id]
    rate: 5/hour
    failure: {policy: fail_open, timeout: 5s}
  - name: closed
    match: [{key: rule, value: closed}, id]
    rate: 5/hour
    failure: {policy: fail_closed, timeout: 5s}
  - name: fallback
    match: [{key: rule, value: fallback}, id]
    rate: 5/hour
    failure: {policy: fallback, local_share: 1, timeout: 5s}
`
	rs := redistest.NewStandalone(t)
	client, _, err := testRedisClient("redis://" + rs.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	up := &echoUpstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	s := startServer(t, withPolicy(p), withRedis(client), withUpstream(u), withAdminAddr("127.0.0.1:0"),
		withDescriptorSpecs("rule=!header:X-Rule,id=!header:X-Id"))
	front := "http://" + s.HTTPAddr().String()
	admitted := func(rule, id string, n int) int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodGet, front+"/", nil)
				req.Header.Set("X-Rule", rule)
				req.Header.Set("X-Id", id)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return ok
	}
	for _, rule := range []string{"open", "closed", "fallback"} {
		if got := admitted(rule, "up", 8); got != 5 {
			t.Fatalf("%s with Redis up: %d of 8 admitted, want 5", rule, got)
		}
	}
	rs.Kill()
	if got := admitted("open", "down", 20); got != 20 {
		t.Errorf("fail_open with Redis down: %d of 20 admitted, want all", got)
	}
	if got := admitted("closed", "down", 20); got != 0 {
		t.Errorf("fail_closed with Redis down: %d of 20 admitted, want none", got)
	}
	if got := admitted("fallback", "down", 20); got != 5 {
		t.Errorf("fallback with Redis down: %d of 20 admitted, want the local limit's 5", got)
	}
	if v, ok := metric(t, s.registry(), "admit_store_errors_total"); !ok || v == 0 {
		t.Errorf("admit_store_errors_total = %v, %v: the failures were not counted", v, ok)
	}
	if err := rs.Restart(); err != nil {
		t.Fatal(err)
	}
	// The restarted Redis decides again: 5 of a new key.
	eventually(t, 20*time.Second, "decisions from Redis again", func() bool { return admitted("closed", "back", 1) == 1 })
	if got := admitted("closed", "back", 8); got != 4 {
		t.Errorf("fail_closed with Redis back: %d of 8 admitted, want 4 more", got)
	}
}
