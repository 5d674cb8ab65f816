package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/policy"
)

// algorithmsPolicy has one rule per algorithm, a quota and a concurrency
// cap, each matching alg=<name>.
const algorithmsPolicy = `
domain: api
rules:
  - {name: gcra, match: [{key: alg, value: gcra}], rate: 10/min, algorithm: gcra}
  - {name: token-bucket, match: [{key: alg, value: token_bucket}], rate: 10/min, algorithm: token_bucket}
  - {name: leaky-bucket, match: [{key: alg, value: leaky_bucket}], rate: 10/min, algorithm: leaky_bucket}
  - {name: fixed-window, match: [{key: alg, value: fixed_window}], rate: 10/min, algorithm: fixed_window}
  - {name: sliding-window, match: [{key: alg, value: sliding_window}], rate: 10/min, algorithm: sliding_window}
  - {name: sliding-log, match: [{key: alg, value: sliding_log}], rate: 10/min, algorithm: sliding_log}
  - {name: daily, match: [{key: alg, value: quota}], quota: 1000/day}
  - {name: inflight, match: [{key: alg, value: concurrency}], concurrency: 2}
  - {name: per-user, match: user, rate: 5/s burst 5}
  - {name: five-minutes, match: [{key: alg, value: five_minutes}], rate: 100 per 5 minutes}
  - {name: free, match: [{key: alg, value: unlimited}], unlimited: true}
  - {name: shadowed, match: [{key: alg, value: shadow}], rate: 1/min, shadow: true}
`

// TestRLSAlgorithms checks every field of each algorithm's status at two
// explicit instants: duration_until_reset is the time until the limit is
// back to full capacity, as each algorithm defines it.
func TestRLSAlgorithms(t *testing.T) {
	noGoroutineLeak(t)
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCClock(clk))

	algs := []string{"gcra", "token_bucket", "leaky_bucket", "fixed_window", "sliding_window", "sliding_log", "quota", "concurrency"}
	req := func(hits uint32) *rlsv3.RateLimitRequest {
		r := rlsReq("api", hits)
		for _, a := range algs {
			d := rlsDesc("alg", a)
			if a == "concurrency" {
				withHits(d, 1)
			}
			r.Descriptors = append(r.Descriptors, d)
		}
		return r
	}
	type want struct {
		name      string
		rpu       uint32
		unit      rlsv3.RateLimitResponse_RateLimit_Unit
		remaining uint32
		reset     time.Duration // -1: none
	}
	check := func(resp *rlsv3.RateLimitResponse, wants []want) {
		t.Helper()
		if resp.OverallCode != rlsv3.RateLimitResponse_OK {
			t.Fatalf("overall %v", resp.OverallCode)
		}
		for i, w := range wants {
			st := resp.Statuses[i]
			cl := st.CurrentLimit
			if st.Code != rlsv3.RateLimitResponse_OK || cl == nil || cl.Name != w.name || cl.RequestsPerUnit != w.rpu || cl.Unit != w.unit || cl.UnitMultiplier != nil || st.LimitRemaining != w.remaining || st.Quota != nil {
				t.Errorf("%s: status %v; want %+v", algs[i], st, w)
			}
			switch {
			case w.reset < 0 && st.DurationUntilReset != nil:
				t.Errorf("%s: duration_until_reset %v, want none", algs[i], st.DurationUntilReset.AsDuration())
			case w.reset >= 0 && (st.DurationUntilReset == nil || st.DurationUntilReset.AsDuration() != w.reset):
				t.Errorf("%s: duration_until_reset %v, want %v", algs[i], st.DurationUntilReset, w.reset)
			}
		}
	}
	// Three events at t0, 10 s into a minute.
	resp := h.shouldRateLimit(t, req(3))
	check(resp, []want{
		{"gcra", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 18 * time.Second},                                 // 3 emission intervals of 6 s
		{"token-bucket", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 18 * time.Second},                         // 3 tokens, one per 6 s
		{"leaky-bucket", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 18 * time.Second},                         // a level of 3, leaking one per 6 s
		{"fixed-window", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 50 * time.Second},                         // the minute's end
		{"sliding-window", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 110 * time.Second},                      // the next minute's end, when this one's count stops weighing
		{"sliding-log", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 60 * time.Second},                          // the events leave the log a minute on
		{"daily", 1000, rlsv3.RateLimitResponse_RateLimit_DAY, 997, 11*time.Hour + 59*time.Minute + 50*time.Second}, // midnight UTC
		{"inflight", 2, rlsv3.RateLimitResponse_RateLimit_UNKNOWN, 1, -1},                                           // slots: no unit, no reset
	})
	// The deciding limit (fewest remaining) is the concurrency cap.
	hm := headerMap(resp)
	if hm["RateLimit-Policy"] != `"inflight";q=2;qu="concurrent-requests"` || hm["RateLimit"] != `"inflight";r=1` || len(hm) != 2 {
		t.Errorf("headers %v", hm)
	}
	// Five seconds later, a peek (every descriptor's own hits_addend 0).
	clk.Advance(5 * time.Second)
	r := req(1)
	for _, d := range r.Descriptors {
		withHits(d, 0)
	}
	check(h.shouldRateLimit(t, r), []want{
		{"gcra", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 13 * time.Second},
		{"token-bucket", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 13 * time.Second},
		{"leaky-bucket", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 13 * time.Second},
		{"fixed-window", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 45 * time.Second},
		{"sliding-window", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 105 * time.Second},
		{"sliding-log", 10, rlsv3.RateLimitResponse_RateLimit_MINUTE, 7, 55 * time.Second},
		{"daily", 1000, rlsv3.RateLimitResponse_RateLimit_DAY, 997, 11*time.Hour + 59*time.Minute + 45*time.Second},
		{"inflight", 2, rlsv3.RateLimitResponse_RateLimit_UNKNOWN, 2, -1},
	})
	// One more second: the first GCRA event is back.
	clk.Advance(time.Second)
	resp = h.shouldRateLimit(t, rlsReq("api", 0, rlsDesc("alg", "gcra")))
	if st := resp.Statuses[0]; st.LimitRemaining != 7 || st.DurationUntilReset.AsDuration() != 18*time.Second {
		t.Errorf("gcra at t0+6s after one more event: %v", st)
	}
	hm = headerMap(resp)
	if hm["RateLimit-Policy"] != `"gcra";q=10;w=60` || hm["RateLimit"] != `"gcra";r=7;t=18` {
		t.Errorf("headers %v", hm)
	}
}

// TestRLSOverLimit: all descriptors must pass; one over limit makes the
// request OVER_LIMIT and the others consume nothing.
func TestRLSOverLimit(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCClock(clk))
	// Five events for bob, at once.
	if resp := h.shouldRateLimit(t, rlsReq("api", 5, rlsDesc("user", "bob"))); resp.OverallCode != rlsv3.RateLimitResponse_OK || resp.Statuses[0].LimitRemaining != 0 {
		t.Fatalf("first: %v", resp)
	}
	// Bob is over; the GCRA descriptor, asked first, gives its event back.
	resp := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("alg", "gcra"), rlsDesc("user", "bob")))
	if resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("overall %v", resp.OverallCode)
	}
	g, u := resp.Statuses[0], resp.Statuses[1]
	if g.Code != rlsv3.RateLimitResponse_OK || g.LimitRemaining != 10 {
		t.Errorf("gcra status %v: want OK with all 10 left", g)
	}
	if u.Code != rlsv3.RateLimitResponse_OVER_LIMIT || u.LimitRemaining != 0 || u.CurrentLimit.RequestsPerUnit != 5 || u.CurrentLimit.Unit != rlsv3.RateLimitResponse_RateLimit_SECOND ||
		u.DurationUntilReset.AsDuration() != time.Second {
		t.Errorf("user status %v", u)
	}
	hm := headerMap(resp)
	if hm["RateLimit-Policy"] != `"per-user";q=5;w=1` || hm["RateLimit"] != `"per-user";r=0;t=1` || hm["Retry-After"] != "1" {
		t.Errorf("headers %v", hm)
	}
	// Nothing was taken from the GCRA descriptor.
	if st := h.shouldRateLimit(t, rlsReq("api", 0, withHits(rlsDesc("alg", "gcra"), 0))).Statuses[0]; st.LimitRemaining != 10 {
		t.Errorf("gcra after the refusal: %v", st)
	}
	// 200 ms later one event is back for bob.
	clk.Advance(200 * time.Millisecond)
	if resp := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("user", "bob"))); resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Errorf("after 200ms: %v", resp)
	}
}

// TestRLSHeaderStyles: envoyproxy/ratelimit's fields (the descriptor
// refused, else the one with the least remaining), and none.
func TestRLSHeaderStyles(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCClock(clk), withGRPCHeaderStyle(rlsHeadersEnvoy))
	// Two descriptors admitted: bob has 4 of 5 left, gcra 9 of 10.
	resp := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("alg", "gcra"), rlsDesc("user", "bob")))
	want := map[string]string{"RateLimit-Limit": "5", "RateLimit-Remaining": "4", "RateLimit-Reset": "1"}
	if hm := headerMap(resp); len(hm) != 3 || hm["RateLimit-Limit"] != want["RateLimit-Limit"] ||
		hm["RateLimit-Remaining"] != want["RateLimit-Remaining"] || hm["RateLimit-Reset"] != want["RateLimit-Reset"] {
		t.Errorf("admitted: headers %v, want %v", hm, want)
	}
	// Bob over his limit: his descriptor, though listed last.
	h.shouldRateLimit(t, rlsReq("api", 4, rlsDesc("user", "bob")))
	resp = h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("user", "bob"), rlsDesc("alg", "gcra")))
	if hm := headerMap(resp); resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || hm["RateLimit-Limit"] != "5" || hm["RateLimit-Remaining"] != "0" || hm["RateLimit-Reset"] != "1" {
		t.Errorf("refused: %v, headers %v", resp.OverallCode, hm)
	}
	// A descriptor nothing limits: no fields.
	if resp := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("nothing", "here"))); len(resp.ResponseHeadersToAdd) != 0 {
		t.Errorf("unlimited: headers %v", resp.ResponseHeadersToAdd)
	}

	none := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCClock(clk), withGRPCHeaderStyle(rlsHeadersNone))
	if resp := none.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("user", "carol"))); len(resp.ResponseHeadersToAdd) != 0 {
		t.Errorf("RLSHeadersNone: headers %v", resp.ResponseHeadersToAdd)
	}
	for _, name := range []string{"ietf", "envoy", "none"} {
		if h, err := parseRLSHeaders(name); err != nil || h.String() != name {
			t.Errorf("ParseRLSHeaders(%q) = %v, %v", name, h, err)
		}
	}
	if _, err := parseRLSHeaders("draft-03"); !errors.Is(err, errInvalidConfig) {
		t.Errorf("ParseRLSHeaders(draft-03): %v", err)
	}
	if _, err := registerGRPCServices(grpc.NewServer(), grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCHeaderStyle(rlsHeaderStyle(9))); !errors.Is(err, errInvalidConfig) {
		t.Errorf("RLSHeaders(9): %v", err)
	}
}

// TestRLSHits: the request's hits_addend (0 counts as 1) and the
// descriptors' own (0 peeks), hits above the burst, 2^32-1.
func TestRLSHits(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCClock(clk))
	remaining := func(r *rlsv3.RateLimitRequest) []uint32 {
		t.Helper()
		var out []uint32
		for _, st := range h.shouldRateLimit(t, r).Statuses {
			out = append(out, st.LimitRemaining)
		}
		return out
	}
	steps := []struct {
		name string
		req  *rlsv3.RateLimitRequest
		want string
	}{
		{"hits_addend 0 counts as 1", rlsReq("api", 0, rlsDesc("user", "a")), "[4]"},
		{"hits_addend 2", rlsReq("api", 2, rlsDesc("user", "a")), "[2]"},
		{"own 0 peeks", rlsReq("api", 3, withHits(rlsDesc("user", "a"), 0)), "[2]"},
		{"own 1 beats the request's 3", rlsReq("api", 3, withHits(rlsDesc("user", "a"), 1), rlsDesc("user", "b")), "[1 2]"},
		{"own 0 for one, 1 for the other", rlsReq("api", 0, withHits(rlsDesc("user", "a"), 0), rlsDesc("user", "b")), "[1 1]"},
	}
	for _, s := range steps {
		if got := fmt.Sprint(remaining(s.req)); got != s.want {
			t.Errorf("%s: remaining %s, want %s", s.name, got, s.want)
		}
	}
	// More than the burst can never be admitted: OVER_LIMIT, without
	// Retry-After or t (waiting does not help), and nothing consumed.
	for _, n := range []uint32{6, math.MaxUint32} {
		resp := h.shouldRateLimit(t, rlsReq("api", n, rlsDesc("user", "c")))
		if resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || resp.Statuses[0].LimitRemaining != 5 {
			t.Errorf("hits %d: %v", n, resp)
		}
		if hm := headerMap(resp); hm["Retry-After"] != "" || hm["RateLimit"] != `"per-user";r=5` {
			t.Errorf("hits %d: fields %v, want no Retry-After and no t", n, hm)
		}
	}
	resp := h.shouldRateLimit(t, rlsReq("api", 1, withHits(rlsDesc("user", "c"), maxGRPCHits)))
	if resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Errorf("own hits 2^53: %v", resp)
	}
	// A concurrency cap asked for more slots than it has.
	resp = h.shouldRateLimit(t, rlsReq("api", math.MaxUint32, rlsDesc("alg", "concurrency")))
	if resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Errorf("concurrency, 2^32-1 slots: %v", resp)
	}
}

// TestRLSOverrides: a descriptor's limit is enforced instead of the rules,
// as requests_per_unit per unit × unit_multiplier, one per distinct limit
// and descriptor, as a fixed window.
func TestRLSOverrides(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCClock(clk))
	override := func(d *ratelimitv3.RateLimitDescriptor, rpu uint32, unit typev3.RateLimitUnit, mult *wrapperspb.UInt32Value) *ratelimitv3.RateLimitDescriptor {
		d.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: unit, UnitMultiplier: mult}
		return d
	}
	// 3 per minute for user a, overriding per-user (5/s).
	for i, want := range []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT} {
		resp := h.shouldRateLimit(t, rlsReq("api", 1, override(rlsDesc("user", "a"), 3, typev3.RateLimitUnit_MINUTE, nil)))
		st := resp.Statuses[0]
		if st.Code != want || st.CurrentLimit.RequestsPerUnit != 3 || st.CurrentLimit.Unit != rlsv3.RateLimitResponse_RateLimit_MINUTE ||
			st.CurrentLimit.Name != "api/override/3/min" || st.LimitRemaining != uint32(max(2-i, 0)) || st.DurationUntilReset.AsDuration() != 50*time.Second {
			t.Errorf("request %d: %v", i, st)
		}
	}
	// The rule still applies to a descriptor without the override.
	if st := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("user", "a"))).Statuses[0]; st.CurrentLimit.Name != "per-user" || st.LimitRemaining != 4 {
		t.Errorf("rule: %v", st)
	}
	// 10 per 30 seconds (unit_multiplier), reported as such.
	resp := h.shouldRateLimit(t, rlsReq("api", 4, override(rlsDesc("k", "v"), 10, typev3.RateLimitUnit_SECOND, wrapperspb.UInt32(30))))
	st := resp.Statuses[0]
	if st.Code != rlsv3.RateLimitResponse_OK || st.CurrentLimit.RequestsPerUnit != 10 || st.CurrentLimit.Unit != rlsv3.RateLimitResponse_RateLimit_SECOND ||
		st.CurrentLimit.GetUnitMultiplier().GetValue() != 30 || st.LimitRemaining != 6 || st.DurationUntilReset.AsDuration() != 20*time.Second {
		t.Errorf("10 per 30s: %v", st)
	}
	// 0 requests per unit refuses everything.
	if resp := h.shouldRateLimit(t, rlsReq("api", 1, override(rlsDesc("k", "z"), 0, typev3.RateLimitUnit_HOUR, nil))); resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Errorf("0 per hour: %v", resp)
	}
}

// TestRLSShadowUnlimitedUnknown: shadow rules report and never refuse;
// unlimited and unmatched descriptors, and unknown domains, are OK with a
// quota.
func TestRLSShadowUnlimitedUnknown(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCClock(clk))
	for i := range 3 {
		resp := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("alg", "shadow")))
		st := resp.Statuses[0]
		if resp.OverallCode != rlsv3.RateLimitResponse_OK || st.Code != rlsv3.RateLimitResponse_OK || st.CurrentLimit.GetName() != "shadowed" || st.Quota != nil {
			t.Errorf("shadow request %d: %v", i, resp)
		}
	}
	until := grpcT0.Add(defaultGRPCQuotaTTL)
	for _, r := range []*rlsv3.RateLimitRequest{
		rlsReq("api", 1, rlsDesc("alg", "unlimited"), rlsDesc("nothing", "matches")),
		rlsReq("no-such-domain", 1, rlsDesc("user", "a")),
	} {
		resp := h.shouldRateLimit(t, r)
		if resp.OverallCode != rlsv3.RateLimitResponse_OK || resp.Quota == nil || !resp.Quota.GetValidUntil().AsTime().Equal(until) || len(resp.ResponseHeadersToAdd) != 0 {
			t.Errorf("%v: %v", r, resp)
		}
		for _, st := range resp.Statuses {
			if st.Code != rlsv3.RateLimitResponse_OK || st.CurrentLimit != nil || st.LimitRemaining != 0 || st.DurationUntilReset != nil ||
				st.Quota.GetRequests() != math.MaxUint32 || !st.Quota.GetValidUntil().AsTime().Equal(until) {
				t.Errorf("%v: status %v", r, st)
			}
		}
	}
	// A limited descriptor among them: no quota for the set.
	resp := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("alg", "unlimited"), rlsDesc("user", "q")))
	if resp.Quota != nil || resp.Statuses[0].Quota == nil || resp.Statuses[1].Quota != nil {
		t.Errorf("mixed: %v", resp)
	}
	// WithGRPCQuotaTTL(0) grants none, WithGRPCHeaders(false) sends no field.
	h2 := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)), withGRPCQuotaTTL(0), withGRPCHeaders(false))
	resp = h2.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("alg", "unlimited"), rlsDesc("user", "q")))
	if resp.Quota != nil || resp.Statuses[0].Quota != nil || len(resp.ResponseHeadersToAdd) != 0 {
		t.Errorf("without quota and headers: %v", resp)
	}
}

// TestRLSEnvoyConfig: an envoyproxy/ratelimit configuration, its units and
// its matching, through the service.
func TestRLSEnvoyConfig(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	e := grpcEngine(t, `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /login
    rate_limit: {unit: hour, requests_per_unit: 1, name: login}
`, clk)
	h := startGRPC(t, grpcSource(e), withGRPCClock(clk))
	for i, want := range []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT} {
		resp := h.shouldRateLimit(t, rlsReq("edge", 1, rlsDesc("remote_address", "203.0.113.7")))
		st := resp.Statuses[0]
		if resp.OverallCode != want || st.CurrentLimit.GetRequestsPerUnit() != 2 || st.CurrentLimit.GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE || st.DurationUntilReset.AsDuration() != 50*time.Second {
			t.Errorf("request %d: %v", i, resp)
		}
	}
	resp := h.shouldRateLimit(t, rlsReq("edge", 1, rlsDesc("path", "/login")))
	if st := resp.Statuses[0]; st.CurrentLimit.GetUnit() != rlsv3.RateLimitResponse_RateLimit_HOUR || st.LimitRemaining != 0 || st.DurationUntilReset.AsDuration() != 59*time.Minute+50*time.Second {
		t.Errorf("login: %v", resp)
	}
}

// TestRLSCurrentLimit: the Envoy form of limits whose period is not a
// unit.
func TestRLSCurrentLimit(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, algorithmsPolicy, clk)))
	st := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("alg", "five_minutes"))).Statuses[0]
	if l := st.CurrentLimit; l.RequestsPerUnit != 100 || l.Unit != rlsv3.RateLimitResponse_RateLimit_MINUTE || l.GetUnitMultiplier().GetValue() != 5 {
		t.Errorf("100 per 5 minutes: %v", l)
	}
}

// TestRLSEngineSwap: the engine is replaced between requests (and while
// requests are in flight); each request is decided by one engine, and a
// new engine built with Config.Previous keeps the state of unchanged rules.
func TestRLSEngineSwap(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	src := new(Engines)
	h := startGRPC(t, src, withGRPCClock(clk))
	_, err := h.rls.ShouldRateLimit(context.Background(), rlsReq("api", 1, rlsDesc("user", "a")))
	wantCode(t, err, codes.Unavailable) // no engine yet

	e1 := grpcEngine(t, algorithmsPolicy, clk)
	src.Set(e1)
	h.shouldRateLimit(t, rlsReq("api", 2, rlsDesc("user", "a")))
	// A new policy: per-user unchanged (its state kept), gcra now 1/min.
	e2 := grpcEngine(t, strings.Replace(algorithmsPolicy, "{name: gcra, match: [{key: alg, value: gcra}], rate: 10/min", "{name: gcra, match: [{key: alg, value: gcra}], rate: 1/min", 1), clk, policy.Config{Previous: e1})
	if old := src.Set(e2); old != e1 {
		t.Fatal("Set returned another engine")
	}
	_ = e1.Close()
	resp := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("user", "a"), rlsDesc("alg", "gcra")))
	if resp.Statuses[0].LimitRemaining != 2 || resp.Statuses[1].CurrentLimit.RequestsPerUnit != 1 {
		t.Errorf("after the swap: %v", resp)
	}

	// Swaps while 8 goroutines ask: every answer is one engine's.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				resp, err := h.rls.ShouldRateLimit(context.Background(), rlsReq("api", 0, withHits(rlsDesc("alg", "gcra"), 0)))
				if err != nil {
					// A request that met a closed engine is UNAVAILABLE.
					if c := err; !strings.Contains(c.Error(), "closed") {
						errs <- fmt.Errorf("goroutine %d request %d: %v", g, i, err)
						return
					}
					continue
				}
				if rpu := resp.Statuses[0].CurrentLimit.GetRequestsPerUnit(); rpu != 1 && rpu != 10 {
					errs <- fmt.Errorf("goroutine %d request %d: limit %d", g, i, rpu)
					return
				}
			}
		}()
	}
	prev := e2
	for i := range 20 {
		y := algorithmsPolicy
		if i%2 == 0 {
			y = strings.Replace(y, "rate: 10/min, algorithm: gcra", "rate: 1/min, algorithm: gcra", 1)
		}
		next := grpcEngine(t, y, clk, policy.Config{Previous: prev})
		src.Set(next)
		_ = prev.Close()
		prev = next
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRLSConcurrencyGate: through RLS a concurrency cap admits iff it has
// room now and holds nothing after the call; slots held by admit.v1
// leases count.
func TestRLSConcurrencyGate(t *testing.T) {
	noGoroutineLeak(t)
	clk := admittest.NewManualClock(grpcT0)
	e := grpcEngine(t, algorithmsPolicy, clk)
	h := startGRPC(t, grpcSource(e), withGRPCClock(clk))
	for i := range 5 {
		if resp := h.shouldRateLimit(t, rlsReq("api", 2, rlsDesc("alg", "concurrency"))); resp.OverallCode != rlsv3.RateLimitResponse_OK || resp.Statuses[0].LimitRemaining != 0 {
			t.Fatalf("request %d: %v", i, resp)
		}
	}
	// A lease holds one of the two slots: RLS can have the other only.
	var held compose.Held
	var res policy.Result
	if err := e.Check(context.Background(), &policy.Request{Domain: "api", Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "alg", Value: "concurrency"}}}}}, &held, &res); err != nil || !res.Decision.Allowed {
		t.Fatalf("holding a slot: %v, %v", err, res.Decision)
	}
	if resp := h.shouldRateLimit(t, rlsReq("api", 2, rlsDesc("alg", "concurrency"))); resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Errorf("2 slots with one held: %v", resp)
	}
	if resp := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("alg", "concurrency"))); resp.OverallCode != rlsv3.RateLimitResponse_OK || resp.Statuses[0].LimitRemaining != 0 {
		t.Errorf("1 slot with one held: %v", resp)
	}
	held.Release()
	if resp := h.shouldRateLimit(t, rlsReq("api", 2, rlsDesc("alg", "concurrency"))); resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Errorf("after the release: %v", resp)
	}
}

// TestRLSEngineErrors: errors of the engine become gRPC codes.
func TestRLSEngineErrors(t *testing.T) {
	clk := admittest.NewManualClock(grpcT0)
	e := grpcEngine(t, algorithmsPolicy, clk, policy.Config{MaxOverrides: 1})
	h := startGRPC(t, grpcSource(e), withGRPCClock(clk))
	ov := func(rpu uint32) *rlsv3.RateLimitRequest {
		d := rlsDesc("k", "v")
		d.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: typev3.RateLimitUnit_SECOND}
		return rlsReq("api", 1, d)
	}
	h.shouldRateLimit(t, ov(1))
	_, err := h.rls.ShouldRateLimit(context.Background(), ov(2))
	wantCode(t, err, codes.ResourceExhausted) // a second distinct inline limit
	// A value of the longest length the API takes is decided, though the
	// key it makes is longer than the limiters take (it is stored by its
	// digest); one byte more is INVALID_ARGUMENT.
	long := strings.Repeat("x", defaultGRPCMaxValueBytes)
	if resp := h.shouldRateLimit(t, rlsReq("api", 1, rlsDesc("user", long))); resp.OverallCode != rlsv3.RateLimitResponse_OK {
		t.Errorf("a value of %d bytes: %v", len(long), resp)
	}
	_, err = h.rls.ShouldRateLimit(context.Background(), rlsReq("api", 1, rlsDesc("user", long+"x")))
	wantCode(t, err, codes.InvalidArgument)
	// A closed engine, a cancelled call.
	_ = e.Close()
	_, err = h.rls.ShouldRateLimit(context.Background(), rlsReq("api", 1, rlsDesc("user", "a")))
	wantCode(t, err, codes.Unavailable)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = h.rls.ShouldRateLimit(ctx, rlsReq("api", 1, rlsDesc("user", "a")))
	wantCode(t, err, codes.Canceled)

	for _, c := range []struct {
		err  error
		want codes.Code
	}{
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{fmt.Errorf("x: %w", context.Canceled), codes.Canceled},
		{errors.New("redis: connection refused"), codes.Unavailable},
		{policy.ErrInvalidRequest, codes.InvalidArgument},
	} {
		wantCode(t, grpcCheckError(c.err), c.want)
	}
}

func TestNewRLSOptions(t *testing.T) {
	src := grpcSource(nil)
	for _, opt := range []grpcOption{
		withGRPCMaxDescriptors(0), withGRPCMaxEntries(-1), withGRPCMaxValueBytes(0), withGRPCQuotaTTL(-time.Second),
	} {
		if _, err := newRLS(src, opt); !errors.Is(err, errInvalidConfig) {
			t.Errorf("NewRLS with a bad option: %v", err)
		}
	}
	if _, err := newRLS(nil); !errors.Is(err, errInvalidConfig) {
		t.Errorf("NewRLS(nil): %v", err)
	}
	if _, err := newRLS(src, nil, withGRPCClock(nil), withGRPCMaxDescriptors(3)); err != nil {
		t.Errorf("NewRLS with nil options: %v", err)
	}
	if rlsServiceName != rlsv3.RateLimitService_ServiceDesc.ServiceName {
		t.Errorf("rlsServiceName %q", rlsServiceName)
	}
}
