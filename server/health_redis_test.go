package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/admit-go/admit/internal/redistest"
)

// probeBound is how long a probe of a hung Redis may take in the tests:
// the probe timeout and a generous second for a loaded machine, far below
// the 5 s go-redis waits for a reply by default (its ReadTimeout).
const probeBound = defaultProbeTimeout + time.Second

// TestReadyzRedisHung: with Redis frozen (SIGSTOP), /readyz answers
// "degraded" within its probe timeout, however long the client would
// wait for Redis; so do /healthz and the gRPC health service, which do not
// ask Redis at all. Checks while a probe is still stuck join it rather
// than start another.
func TestReadyzRedisHung(t *testing.T) {
	const src = `domain: api
rules:
  - {name: per-user, match: user, rate: 5/hour, store: redis, failure: {policy: fail_open, timeout: 50ms}}
`
	rs := redistest.NewStandalone(t)
	s := startRedisServer(t, rs, src)
	base := "http://" + s.HTTPAddr().String()
	get := func(path string) (int, map[string]any, time.Duration) {
		t.Helper()
		start := time.Now()
		c := http.Client{Timeout: 30 * time.Second}
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		elapsed := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, b)
		}
		return resp.StatusCode, body, elapsed
	}
	if code, body, _ := get("/readyz"); code != 200 || body["status"] != "ready" {
		t.Fatalf("Redis up: %d %v", code, body)
	}

	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Resume() })
	// Two checks: the first starts a PING that Redis never answers, the
	// second finds it still waiting on the socket.
	for i := range 2 {
		code, body, elapsed := get("/readyz")
		probes, _ := body["probes"].(map[string]any)
		msg, _ := probes["redis"].(string)
		if code != 200 || body["status"] != "degraded" || !strings.Contains(msg, "no answer within") {
			t.Errorf("check %d, Redis hung: %d %v; want 200, degraded, no answer", i, code, body)
		}
		if elapsed > probeBound {
			t.Errorf("check %d, Redis hung: /readyz took %v; want the probe timeout, %v (at most %v here)", i, elapsed, defaultProbeTimeout, probeBound)
		}
		t.Logf("check %d, Redis hung: /readyz answered in %v", i, elapsed)
	}
	if code, body, elapsed := get("/healthz"); code != 200 || body["status"] != "ok" || elapsed > probeBound {
		t.Errorf("/healthz, Redis hung: %d %v in %v", code, body, elapsed)
	}
	conn, err := grpc.NewClient(s.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if elapsed := time.Since(start); err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING || elapsed > probeBound {
		t.Errorf("gRPC health, Redis hung: %v, %v in %v", h, err, elapsed)
	}

	if err := rs.Resume(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "/readyz ready once Redis answers again", func() bool {
		code, body, _ := get("/readyz")
		return code == 200 && body["status"] == "ready"
	})
}
