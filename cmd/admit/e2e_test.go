package main

// End-to-end tests: they build the admit binary and run it as the README
// and docs/SERVE.md say (with free ports instead of 8080 and 8081, so
// that they never collide with a service on the machine).

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	rlsv3common "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/internal/testpki"
)

// TestE2EBuiltIn runs `admit serve` with no configuration and runs the
// command it prints.
func TestE2EBuiltIn(t *testing.T) {
	p, b := startAdmit(t, []string{"ADMIT_HTTP_ADDR=127.0.0.1:0", "ADMIT_GRPC_ADDR=127.0.0.1:0"}, "serve")
	if !strings.Contains(b.text, `policy built-in (domain "api"`) || b.http == "" || b.grpc == "" {
		t.Fatalf("banner:\n%s", b.text)
	}
	var allowed []bool
	for range 6 {
		status, h, body := curl(t, b.try)
		var c checkResponse
		if status != 200 || json.Unmarshal([]byte(body), &c) != nil || h.Get("Ratelimit-Policy") == "" {
			t.Fatalf("%d %v %s", status, h, body)
		}
		allowed = append(allowed, c.Allowed)
	}
	if fmt.Sprint(allowed) != "[true true true true true false]" {
		t.Fatalf("the printed command's decisions: %v, want 5 admitted then a refusal", allowed)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if status, _, _ := curl(t, "curl -s http://"+b.http+path); status != 200 {
			t.Errorf("%s: %d", path, status)
		}
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(15 * time.Second); code != 0 {
		t.Fatalf("exit status %d after SIGTERM", code)
	}
}

// TestE2EConfigReload serves our format, and reloads it on SIGHUP and on
// a change of the file, keeping the policy when the new file is garbage.
func TestE2EConfigReload(t *testing.T) {
	path := writeTemp(t, "policy.yaml", ourPolicy)
	p, b := startAdmit(t, nil, "serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
		"--config", path, "--reload-interval", "20ms", "--log-format", "json")
	if !strings.Contains(b.try, `"domain":"shop"`) {
		t.Fatalf("try: %s", b.try)
	}
	if got := check(t, b.http, "shop", "route", "/checkout"); !got.Allowed || got.Decision.Remaining != 2 {
		t.Fatalf("first check: %+v", got)
	}
	metricLine := func(name string) string {
		_, _, body := curl(t, "curl -s http://"+b.http+"/metrics")
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, name+" ") {
				return l
			}
		}
		return ""
	}
	// SIGHUP: an added rule; the unchanged one keeps its state.
	if err := os.WriteFile(path, []byte(ourPolicy+"  - {name: search, match: [{key: route, value: /search}], rate: 1/hour}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGHUP)
	eventually(t, 10*time.Second, "the new rule", func() bool {
		return check(t, b.http, "shop", "route", "/search").Decision.Rule == "search"
	})
	if got := check(t, b.http, "shop", "route", "/checkout"); !got.Allowed || got.Decision.Remaining != 1 {
		t.Fatalf("the unchanged rule after the reload: %+v", got)
	}
	// Garbage written in place: the poller fails once, the policy stays.
	if err := os.WriteFile(path, []byte("domain: shop\nrules:\n  - name: checkout\n    rate: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	failures := func() int {
		var n int
		_, _ = fmt.Sscanf(metricLine(`admit_config_reloads_total{result="failure"}`), `admit_config_reloads_total{result="failure"} %d`, &n)
		return n
	}
	// (The poller may also have seen the file half written, empty: one
	// failure or two, and the one naming line 4 may come second.)
	eventually(t, 10*time.Second, "the failure counted, naming line 4", func() bool {
		return failures() >= 1 && strings.Contains(p.stderr.String(), `"pos":"`+path+`:4`)
	})
	before := failures()
	if got := check(t, b.http, "shop", "route", "/checkout"); !got.Allowed || got.Decision.Remaining != 0 {
		t.Fatalf("the rule after the garbage: %+v", got)
	}
	// Deleted: the policy stays. Then a valid file, renamed into place.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the deletion counted", func() bool { return failures() == before+1 })
	next := path + ".new"
	if err := os.WriteFile(next, []byte(strings.Replace(ourPolicy, "3/hour", "50/hour", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the new limit", func() bool {
		return check(t, b.http, "shop", "route", "/checkout").Decision.Remaining > 40
	})
	if l := metricLine("admit_config_last_reload_successful"); l != "admit_config_last_reload_successful 1" {
		t.Errorf("%q", l)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(15 * time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}

// TestE2EEnvoyConfig serves an envoyproxy/ratelimit configuration and
// drives its JSON endpoint and Envoy's gRPC rate-limit service with
// go-control-plane's client.
func TestE2EEnvoyConfig(t *testing.T) {
	path := writeTemp(t, "envoy.yaml", envoyPolicy)
	_, b := startAdmit(t, []string{"ADMIT_CONFIG=" + path, "ADMIT_RLS_HEADERS=envoy"}, "serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0")
	conn, err := grpc.NewClient(b.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hc, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || hc.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC health: %v %v", hc, err)
	}
	rls := rlsv3.NewRateLimitServiceClient(conn)
	req := &rlsv3.RateLimitRequest{Domain: "legacy", Descriptors: []*rlsv3common.RateLimitDescriptor{
		{Entries: []*rlsv3common.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.1.2.3"}}},
	}}
	var codes []rlsv3.RateLimitResponse_Code
	for i := range 3 {
		resp, err := rls.ShouldRateLimit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.OverallCode)
		// envoyproxy/ratelimit's fields (--rls-headers envoy).
		hs := map[string]string{}
		for _, h := range resp.ResponseHeadersToAdd {
			hs[h.Key] = h.Value
		}
		reset, _ := strconv.Atoi(hs["RateLimit-Reset"])
		if len(hs) != 3 || hs["RateLimit-Limit"] != "2" || hs["RateLimit-Remaining"] != strconv.Itoa(max(1-i, 0)) || reset < 1 || reset > 3600 {
			t.Errorf("call %d: headers %v", i+1, hs)
		}
	}
	if codes[0] != rlsv3.RateLimitResponse_OK || codes[1] != rlsv3.RateLimitResponse_OK || codes[2] != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("ShouldRateLimit: %v, want OK OK OVER_LIMIT (2 per hour)", codes)
	}
	// envoyproxy/ratelimit's /json: the same limit, another address.
	body := `{"domain":"legacy","descriptors":[{"entries":[{"key":"remote_address","value":"10.9.9.9"}]}]}`
	var statuses []int
	for range 3 {
		resp, err := http.Post("http://"+b.http+"/json", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	if fmt.Sprint(statuses) != "[200 200 429]" {
		t.Fatalf("/json: %v", statuses)
	}
}

// TestE2ECheckConfig runs check-config as a user would.
func TestE2ECheckConfig(t *testing.T) {
	ours, envoy := writeTemp(t, "ours.yaml", ourPolicy), writeTemp(t, "envoy.yaml", envoyPolicy)
	bad := writeTemp(t, "bad.yaml", "domain: x\nrules:\n  - name: a\n    match: k\n    rate: 10 per fortnight\n")
	if out, _, code := runAdmit(t, nil, "check-config", ours, envoy); code != 0 || !strings.HasPrefix(out, "ok: 2 files") {
		t.Errorf("valid: %d %q", code, out)
	}
	if _, errOut, code := runAdmit(t, nil, "check-config", bad); code != 1 || !strings.HasPrefix(errOut, bad+":5:11: rules[0].rate: ") {
		t.Errorf("invalid: %d %q", code, errOut)
	}
	if _, _, code := runAdmit(t, nil, "check-config"); code != 2 {
		t.Errorf("no files: %d", code)
	}
	if out, _, code := runAdmit(t, nil, "version"); code != 0 || !strings.HasPrefix(out, "admit ") {
		t.Errorf("version: %d %q", code, out)
	}
}

// TestE2EGatewaySIGTERM sends SIGTERM to a gateway with requests in
// flight: they complete, new connections are refused, and admit exits 0
// within the deadline.
func TestE2EGatewaySIGTERM(t *testing.T) {
	release := make(chan struct{})
	var entered atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		<-release
		_, _ = io.WriteString(w, "ok")
	}))
	defer up.Close()
	p, b := startAdmit(t, nil, "serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
		"--admin-addr", "127.0.0.1:0", "--upstream", up.URL, "--shutdown-timeout", "20s")
	if !b.gateway {
		t.Fatalf("banner:\n%s", b.text)
	}
	const n = 20
	results := make(chan string, n)
	for i := range n {
		go func() {
			resp, err := http.Get(fmt.Sprintf("http://%s/load/%d", b.http, i))
			if err != nil {
				results <- err.Error()
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results <- fmt.Sprintf("%d %s", resp.StatusCode, body)
		}()
	}
	eventually(t, 20*time.Second, "requests in flight", func() bool { return entered.Load() == n })
	p.signal(syscall.SIGTERM)
	eventually(t, 10*time.Second, "new connections refused", func() bool {
		c, err := net.DialTimeout("tcp", b.http, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	select {
	case <-p.done:
		t.Fatal("admit exited with requests in flight")
	default:
	}
	close(release)
	for range n {
		if r := <-results; r != "200 ok" {
			t.Errorf("in-flight request: %s", r)
		}
	}
	if code := p.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}

// TestE2EThreeInstancesOneRedis runs three `admit serve` on one Redis:
// together they admit no more than the limit.
func TestE2EThreeInstancesOneRedis(t *testing.T) {
	rs := redistest.NewStandalone(t)
	path := writeTemp(t, "shared.yaml", `domain: api
defaults:
  store: redis
  failure: {policy: fail_closed, timeout: 5s}
rules:
  - name: shared
    match:
      - key: generic_key
        value: global
    rate: 30/hour
`)
	var addrs []string
	for range 3 {
		_, b := startAdmit(t, []string{"ADMIT_REDIS=redis://" + rs.Addr(), "ADMIT_CONFIG=" + path},
			"serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "")
		if !strings.Contains(b.text, "with Redis at redis://") {
			t.Fatalf("banner:\n%s", b.text)
		}
		addrs = append(addrs, b.http)
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 90 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if check(t, addrs[i%3], "api", "generic_key", "global").Allowed {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	// 30 per hour: nothing refills during the test. Failing closed, a
	// slow answer can only lower the count.
	if a := admitted.Load(); a > 30 || a < 25 {
		t.Fatalf("three instances admitted %d of 90, want 30 (at most the limit)", a)
	}
}

// TestE2ETLSAndOperations runs the binary with mutual TLS, the profiler,
// resets allowed and envoyproxy/ratelimit's response fields: a check over
// HTTPS with a client certificate, ShouldRateLimit over gRPC with one, a
// reset, /debug/policy, and a clean exit on SIGTERM.
func TestE2ETLSAndOperations(t *testing.T) {
	pki := testpki.New(t)
	path := writeTemp(t, "envoy.yaml", envoyPolicy)
	p, b := startAdmit(t, []string{"ADMIT_ALLOW_RESET=true", "ADMIT_RLS_HEADERS=envoy"}, "serve", "--config", path,
		"--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0", "--debug-addr", "127.0.0.1:0",
		"--tls-cert", pki.CertFile, "--tls-key", pki.KeyFile, "--tls-client-ca", pki.CAFile)
	if !strings.Contains(b.text, "HTTP API on https://") || b.debug == "" {
		t.Fatalf("banner:\n%s", b.text)
	}
	tlsConf := &tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pki.Client}}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}}
	defer hc.CloseIdleConnections()
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := hc.Post("https://"+b.http+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	addr := `{"domain":"legacy","descriptors":[{"entries":[{"key":"remote_address","value":"10.7.7.7"}]}]}`
	for range 2 {
		post("/v1/check", addr)
	}
	if _, body := post("/v1/check", addr); !strings.Contains(body, `"allowed":false`) {
		t.Fatalf("third check of 2 per hour: %s", body)
	}

	conn, err := grpc.NewClient(b.grpc, grpc.WithTransportCredentials(credentials.NewTLS(tlsConf)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "legacy", Descriptors: []*rlsv3common.RateLimitDescriptor{
		{Entries: []*rlsv3common.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.7.7.7"}}},
	}})
	if err != nil || resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT || len(resp.ResponseHeadersToAdd) != 3 {
		t.Fatalf("ShouldRateLimit over mutual TLS: %v, %v", resp, err)
	}

	if code, body := post("/v1/reset", addr); code != http.StatusOK || body != "{\"reset\":1}\n" {
		t.Fatalf("reset: %d %s", code, body)
	}
	if _, body := post("/v1/check", addr); !strings.Contains(body, `"allowed":true`) {
		t.Errorf("after the reset: %s", body)
	}
	if status, _, body := curl(t, "curl -s http://"+b.debug+"/debug/policy"); status != http.StatusOK || !strings.Contains(body, "# file "+path) || !strings.Contains(body, "requests_per_unit: 2") {
		t.Errorf("/debug/policy: %d %s", status, body)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(15 * time.Second); code != 0 {
		t.Fatalf("exit status %d after SIGTERM", code)
	}
}
