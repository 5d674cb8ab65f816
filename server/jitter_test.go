package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/server/admitv1"
)

// jitterPolicy is a fixed window of 5 a minute per user.
const jitterPolicy = "domain: api\nrules:\n  - name: per-user\n    match: user\n    algorithm: fixed_window\n    rate: 5/min\n"

// jitterServer starts a Server enforcing jitterPolicy on a manual clock
// at a whole minute + 20s, after the user's 5 admissions: a refusal's
// exact wait is 40s.
func jitterServer(t *testing.T, opts ...option) *Server {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(jitterPolicy))
	if err != nil {
		t.Fatal(err)
	}
	clock := admittest.NewManualClock(admittest.Epoch.Add(20 * time.Second))
	opts = append([]option{withPolicy(p), withEngine(policy.Config{Options: admit.Options{Clock: clock}})}, opts...)
	s := startServer(t, opts...)
	for range 5 {
		if ok, _ := apiCheckRetry(t, s); !ok {
			t.Fatal("one of the first 5 refused")
		}
	}
	return s
}

// apiCheckRetry sends one /v1/check of the user and returns whether it
// was admitted and the retry_after_ms of its decision.
func apiCheckRetry(t *testing.T, s *Server) (bool, time.Duration) {
	t.Helper()
	resp, err := http.Post("http://"+s.HTTPAddr().String()+"/v1/check", "application/json", bytes.NewReader([]byte(apiCheckBody("api", "user=alice"))))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r apiResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Allowed {
		return true, 0
	}
	if r.Decision.RetryAfterMs == nil || r.Statuses[0].RetryAfterMs == nil || *r.Statuses[0].RetryAfterMs != *r.Decision.RetryAfterMs {
		t.Fatalf("refusal without a retry_after_ms, or one its status does not repeat: %+v", r)
	}
	if *r.Statuses[0].ResetAfterMs < *r.Decision.RetryAfterMs {
		t.Fatalf("the status's reset_after_ms %d is before the retry %d", *r.Statuses[0].ResetAfterMs, *r.Decision.RetryAfterMs)
	}
	return false, time.Duration(*r.Decision.RetryAfterMs) * time.Millisecond
}

// TestRetryJitterServerDefault: admit serve jitters by default, 10% of the
// wait at most, never less than the exact wait; RetryJitter -1 turns it
// off.
func TestRetryJitterServerDefault(t *testing.T) {
	s := jitterServer(t)
	distinct := map[time.Duration]bool{}
	for range 20 {
		ok, ra := apiCheckRetry(t, s)
		if ok || ra < 40*time.Second || ra > 44*time.Second {
			t.Fatalf("refusal: admitted %v, retry %v; want a retry in [40s, 44s]", ok, ra)
		}
		distinct[ra] = true
	}
	if len(distinct) < 2 {
		t.Errorf("20 refusals told %v: the default jitter spreads them", distinct)
	}
	off := jitterServer(t, func(c *Config) { c.RetryJitter = -1 })
	for range 5 {
		if ok, ra := apiCheckRetry(t, off); ok || ra != 40*time.Second {
			t.Fatalf("RetryJitter -1: admitted %v, retry %v; want the exact 40s", ok, ra)
		}
	}
	capped := jitterServer(t, func(c *Config) { c.RetryJitter, c.RetryJitterMax = 1, time.Second })
	for range 10 {
		if ok, ra := apiCheckRetry(t, capped); ok || ra < 40*time.Second || ra > 41*time.Second {
			t.Fatalf("RetryJitter 1 capped at 1s: admitted %v, retry %v; want [40s, 41s]", ok, ra)
		}
	}
}

// TestRetryJitterRLS: Envoy's rate-limit service says the jittered time in
// Retry-After and in the refused descriptor's duration_until_reset (which
// Envoy's X-RateLimit-Reset carries: no field tells a client to come
// earlier), and admit.v1 in retry_after; a fixed seed spreads them.
func TestRetryJitterRLS(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(jitterPolicy))
	if err != nil {
		t.Fatal(err)
	}
	clock := admittest.NewManualClock(admittest.Epoch.Add(20 * time.Second))
	j := admit.Jitter{Fraction: 0.5, Source: admittest.Source(4, 2)}
	s := startServer(t, withPolicy(p), withEngine(policy.Config{Options: admit.Options{Clock: clock}, RetryJitter: j}))
	conn, err := grpc.NewClient(s.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rls, adm := rlsv3.NewRateLimitServiceClient(conn), admitv1.NewAdmitClient(conn)
	ctx := context.Background()
	req := rlsReq("api", 1, rlsDesc("user", "alice"))
	for range 5 {
		if resp, err := rls.ShouldRateLimit(ctx, req); err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OK {
			t.Fatalf("admission: %v %v", resp, err)
		}
	}
	seen := map[string]bool{}
	for i := range 40 {
		resp, err := rls.ShouldRateLimit(ctx, req)
		if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("refusal %d: %v %v", i, resp, err)
		}
		ra, err := strconv.ParseInt(headerMap(resp)["Retry-After"], 10, 64)
		if err != nil || ra < 40 || ra > 60 {
			t.Fatalf("refusal %d: Retry-After %q, want 40 to 60", i, headerMap(resp)["Retry-After"])
		}
		seen[headerMap(resp)["Retry-After"]] = true
		reset := resp.Statuses[0].DurationUntilReset.AsDuration()
		if reset < 40*time.Second || int64(math.Ceil(reset.Seconds())) != ra {
			t.Errorf("refusal %d: duration_until_reset %v with Retry-After %d", i, reset, ra)
		}
	}
	if len(seen) < 10 {
		t.Errorf("40 refusals told %d distinct Retry-After values: %v", len(seen), seen)
	}
	user := "alice"
	resp, err := adm.Check(ctx, &admitv1.CheckRequest{Domain: "api", Descriptors: []*admitv1.Descriptor{{Entries: []*admitv1.Entry{{Key: "user", Value: user}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := resp.Decision; d.Allowed || d.RetryAfter.AsDuration() < 40*time.Second || d.RetryAfter.AsDuration() > 60*time.Second {
		t.Errorf("admit.v1: %+v, want a refusal with a retry_after in [40s, 60s]", d)
	}
}

func TestRetryJitterConfig(t *testing.T) {
	c := Config{}.resolved()
	if c.RetryJitter != 0.1 || c.RetryJitterMax != time.Minute {
		t.Errorf("defaults: %v %v, want 0.1 and 1m", c.RetryJitter, c.RetryJitterMax)
	}
	if c := (Config{RetryJitter: -1, RetryJitterMax: -1}).resolved(); c.RetryJitter != 0 || c.RetryJitterMax != 0 {
		t.Errorf("negative: %v %v, want off and no cap", c.RetryJitter, c.RetryJitterMax)
	}
	for _, f := range []float64{1.5, math.NaN()} {
		var ce *ConfigError
		if err := (Config{RetryJitter: f}).Validate(); err == nil || !errors.As(err, &ce) || ce.Field != "RetryJitter" {
			t.Errorf("RetryJitter %v: %v", f, err)
		}
	}
}
