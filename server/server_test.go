package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/policy"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// eventually waits until cond holds, polling, for at most d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockedBuffer is a log destination tests read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer starts a Server listening on free ports of 127.0.0.1 and
// closes it at the end of the test.
func startServer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	opts = append([]Option{WithHTTPAddr("127.0.0.1:0"), WithGRPCAddr("127.0.0.1:0"), WithLogger(quietLogger(t))}, opts...)
	s, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// metric returns the value of the counter or gauge name with the given
// label values (name=value pairs) in reg, and whether it exists.
func metric(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			}
		}
	}
	return 0, false
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("domain: api\nrules:\n  - name: x\n    match: k\n    rate: fast\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	redisRule := filepath.Join(dir, "redis.yaml")
	if err := os.WriteFile(redisRule, []byte("domain: api\nrules:\n  - {name: x, match: k, rate: 1/s, store: redis}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(dir, "two.yaml")
	if err := os.WriteFile(two, []byte("domains:\n  - {domain: a, rules: [{name: x, match: k, rate: 1/s}]}\n  - {domain: b, rules: [{name: y, match: k, rate: 1/s}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	up, _ := url.Parse("http://127.0.0.1:1")
	for _, tc := range []struct {
		name string
		opts []Option
		want error
	}{
		{"policy and files", []Option{WithPolicy(&policy.Policy{}), WithPolicyFiles(bad)}, ErrInvalidOption},
		{"nil policy", []Option{WithPolicy(nil)}, ErrInvalidOption},
		{"empty path", []Option{WithPolicyFiles("")}, ErrInvalidOption},
		{"nothing to serve", []Option{WithHTTPAddr(""), WithGRPCAddr("")}, ErrInvalidOption},
		{"gateway without HTTP", []Option{WithHTTPAddr(""), WithUpstream(up)}, ErrInvalidOption},
		{"gateway and admin on one address", []Option{WithUpstream(up), WithHTTPAddr(":9"), WithAdminAddr(":9")}, ErrInvalidOption},
		{"bad upstream", []Option{WithUpstream(&url.URL{Scheme: "ftp", Host: "h"})}, ErrInvalidOption},
		{"gateway domain ambiguous", []Option{WithUpstream(up), WithPolicyFiles(two)}, ErrInvalidOption},
		{"gateway domain missing", []Option{WithUpstream(up), WithGatewayDomain("nope")}, policy.ErrInvalidOption},
		{"empty gateway domain", []Option{WithGatewayDomain("")}, ErrInvalidOption},
		{"shutdown timeout", []Option{WithShutdownTimeout(0)}, ErrInvalidOption},
		{"reload interval", []Option{WithReloadInterval(-time.Second)}, ErrInvalidOption},
		{"request bytes", []Option{WithMaxRequestBytes(0)}, ErrInvalidOption},
		{"header bytes", []Option{WithMaxHeaderBytes(-1)}, ErrInvalidOption},
		{"read header timeout", []Option{WithReadHeaderTimeout(-1)}, ErrInvalidOption},
		{"read timeout", []Option{WithReadTimeout(-1)}, ErrInvalidOption},
		{"write timeout", []Option{WithWriteTimeout(-1)}, ErrInvalidOption},
		{"idle timeout", []Option{WithIdleTimeout(-1)}, ErrInvalidOption},
		{"invalid policy file", []Option{WithPolicyFiles(bad)}, policy.ErrInvalidPolicy},
		{"missing policy file", []Option{WithPolicyFiles(filepath.Join(dir, "missing.yaml"))}, os.ErrNotExist},
		{"directory without policies", []Option{WithPolicyFiles(empty)}, ErrNoPolicyFiles},
		{"redis rule without redis", []Option{WithPolicyFiles(redisRule)}, policy.ErrNoStore},
		{"bad engine option", []Option{WithEngineOptions(policy.WithMaxKeys(0))}, policy.ErrInvalidOption},
		{"bad gateway option", []Option{WithUpstream(up), WithDescriptorSpecs("x")}, ErrInvalidDescriptor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(append([]Option{WithLogger(quietLogger(t))}, tc.opts...)...)
			if !errors.Is(err, tc.want) || s != nil {
				t.Fatalf("New = %v, %v; want %v", s, err, tc.want)
			}
		})
	}
	// The problems of a policy file name its file, line and column.
	_, err := New(WithPolicyFiles(bad), WithLogger(quietLogger(t)))
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:5:11") {
		t.Errorf("error %v does not name bad.yaml:5:11", err)
	}
}

func TestServerBuiltIn(t *testing.T) {
	s := startServer(t)
	if s.HTTPAddr() == nil || s.GRPCAddr() == nil || s.AdminAddr() != nil {
		t.Fatalf("addresses: http %v grpc %v admin %v", s.HTTPAddr(), s.GRPCAddr(), s.AdminAddr())
	}
	if s.Gateway() != nil || s.Engine() == nil || s.Source().Engine() != s.Engine() {
		t.Fatal("accessors")
	}
	if p := s.Policy(); len(p.Domains) != 1 || p.Domains[0].Name != "api" {
		t.Fatalf("built-in policy: %+v", p)
	}
	base := "http://" + s.HTTPAddr().String()
	for _, path := range []string{"/healthz", "/readyz"} {
		if r, body := get(t, base+path); r.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, r.StatusCode, body)
		}
	}
	_, body := get(t, base+"/metrics")
	for _, want := range []string{"go_goroutines", "process_cpu_seconds_total", "admit_config_last_reload_successful 1",
		"admit_config_last_reload_success_timestamp_seconds", `admit_config_reloads_total{result="failure"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := s.Start(); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start: %v", err)
	}
	if err := s.Reload(); err != nil {
		t.Errorf("Reload of the built-in policy: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := s.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
	if err := s.Reload(); !errors.Is(err, ErrClosed) {
		t.Errorf("Reload after Close: %v", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the HTTP listener still answers after Close")
	}
}

func TestServerOwnRegistryAndPolicy(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := policy.Parse("p.yaml", []byte(gwPolicy))
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, WithRegistry(reg), WithPolicy(p), WithGRPCAddr(""))
	if s.Registry() != reg || s.GRPCAddr() != nil {
		t.Fatal("registry or gRPC address")
	}
	if v, ok := metric(t, reg, "admit_config_last_reload_successful"); !ok || v != 1 {
		t.Errorf("admit_config_last_reload_successful = %v, %v", v, ok)
	}
	if _, ok := metric(t, reg, "go_goroutines"); ok {
		t.Error("the Go collector was added to a registry the caller gave")
	}
	// A second server on the same registry: its metrics collide.
	if _, err := New(WithRegistry(reg), WithLogger(quietLogger(t))); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("a second server on one registry: %v", err)
	}
}

// writeFile writes a policy file the way editors and Kubernetes do not
// (in place), so that the poller may see it half written.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// bumpTime moves a file's modification time, so that a rewrite within the
// file system's time granularity is seen as a change.
func bumpTime(t testing.TB, path string, d time.Duration) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime().Add(d), fi.ModTime().Add(d)); err != nil {
		t.Fatal(err)
	}
}

const reloadPolicy = `domain: api
rules:
  - name: global
    match:
      - key: generic_key
        value: global
    rate: 5/hour
`

func TestServerReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writeFile(t, path, reloadPolicy)
	up := &echoUpstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := startServer(t, WithPolicyFiles(path), WithReloadInterval(0), WithUpstream(u), WithAdminAddr("127.0.0.1:0"),
		WithLogger(log))
	front := "http://" + s.HTTPAddr().String()
	remaining := func() string {
		t.Helper()
		r, _ := get(t, front+"/")
		return fmt.Sprintf("%d/%s", r.StatusCode, r.Header.Get("X-Ratelimit-Remaining"))
	}
	counts := func() (ok, failed float64) {
		ok, _ = metric(t, s.Registry(), "admit_config_reloads_total", "result", "success")
		failed, _ = metric(t, s.Registry(), "admit_config_reloads_total", "result", "failure")
		return ok, failed
	}
	for _, want := range []string{"200/4", "200/3", "200/2"} {
		if got := remaining(); got != want {
			t.Fatalf("before reloads: %s, want %s", got, want)
		}
	}

	// Unchanged files: nothing happens.
	s.pollOnce()
	if ok, failed := counts(); ok != 0 || failed != 0 {
		t.Fatalf("a poll of unchanged files reloaded: %v %v", ok, failed)
	}

	// A new rule: the unchanged one keeps its state.
	writeFile(t, path, reloadPolicy+"  - {name: extra, match: user, rate: 1/hour}\n")
	bumpTime(t, path, time.Second)
	s.pollOnce()
	if ok, failed := counts(); ok != 1 || failed != 0 {
		t.Fatalf("after an edit: %v successes, %v failures", ok, failed)
	}
	if got := remaining(); got != "200/1" {
		t.Fatalf("the unchanged rule lost its state: %s, want 200/1", got)
	}
	if len(s.Policy().Domains[0].Rules) != 2 {
		t.Fatal("Policy is not the new policy")
	}

	// Garbage, a half-written file, a deleted file: the policy in force
	// stays, each change is one failure, logged with its position.
	old := s.Engine()
	for i, content := range []string{"{{{ not yaml", "domain: api\nrules:\n  - name: global\n    mat", ""} {
		if content == "" {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		} else {
			writeFile(t, path, content)
			bumpTime(t, path, time.Duration(i+2)*time.Second)
		}
		s.pollOnce()
		s.pollOnce() // the same bad file is reported once
		if ok, failed := counts(); ok != 1 || failed != float64(i+1) {
			t.Fatalf("bad file %d: %v successes, %v failures", i, ok, failed)
		}
		if s.Engine() != old {
			t.Fatalf("bad file %d replaced the engine", i)
		}
		if v, _ := metric(t, s.Registry(), "admit_config_last_reload_successful"); v != 0 {
			t.Fatalf("last_reload_successful = %v after a failure", v)
		}
	}
	if got := remaining(); got != "200/0" {
		t.Fatalf("the policy in force after the failures: %s, want 200/0", got)
	}
	if got := remaining(); got != "429/0" {
		t.Fatalf("the policy in force after the failures: %s, want 429/0", got)
	}
	if l := logs.String(); !strings.Contains(l, "pos="+path+":4 ") || !strings.Contains(l, "reload failed") {
		t.Errorf("the failure's log does not name the position:\n%s", l)
	}

	// A changed limit starts afresh.
	writeFile(t, path, strings.Replace(reloadPolicy, "5/hour", "10/hour", 1))
	s.pollOnce()
	if ok, _ := counts(); ok != 2 {
		t.Fatalf("after fixing the file: %v successes", ok)
	}
	if got := remaining(); got != "200/9" {
		t.Fatalf("a changed limit: %s, want 200/9", got)
	}

	// A policy without the gateway's domain is refused.
	writeFile(t, path, strings.Replace(reloadPolicy, "domain: api", "domain: other", 1))
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), `"api"`) {
		t.Fatalf("Reload without the gateway's domain: %v", err)
	}
	if got := remaining(); got != "200/8" {
		t.Fatalf("after a refused reload: %s, want 200/8", got)
	}

	// Reload reloads unchanged files too.
	writeFile(t, path, strings.Replace(reloadPolicy, "5/hour", "10/hour", 1))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if ok, failed := counts(); ok != 4 || failed != 4 {
		t.Fatalf("reloads: %v successes, %v failures; want 4, 4", ok, failed)
	}
	if got := remaining(); got != "200/7" {
		t.Fatalf("after reloads of an unchanged file: %s, want 200/7", got)
	}
}

func TestServerReloadDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), reloadPolicy)
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a policy")
	writeFile(t, filepath.Join(dir, ".hidden.yaml"), "garbage {{{")
	s := startServer(t, WithPolicyFiles(dir), WithReloadInterval(5*time.Millisecond))
	if n := len(s.Policy().Domains); n != 1 {
		t.Fatalf("%d domains", n)
	}
	// A file added to the directory is loaded by the poller.
	writeFile(t, filepath.Join(dir, "b.yml"), "domain: envoy\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 3}\n")
	eventually(t, 10*time.Second, "the poller loads the new file", func() bool { return len(s.Policy().Domains) == 2 })
	if !s.Engine().HasDomain("envoy") {
		t.Fatal("the engine lacks the new domain")
	}
}

func TestServerShutdownDrains(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 16)
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	s, err := New(WithHTTPAddr("127.0.0.1:0"), WithGRPCAddr("127.0.0.1:0"), WithAdminAddr("127.0.0.1:0"),
		WithUpstream(u), WithShutdownTimeout(30*time.Second), WithLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	front := "http://" + s.HTTPAddr().String()
	admin := "http://" + s.AdminAddr().String()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()

	const n = 4
	results := make(chan string, n)
	for i := range n {
		go func() {
			resp, err := http.Get(fmt.Sprintf("%s/r%d", front, i))
			if err != nil {
				results <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results <- fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
	}
	for range n {
		<-entered
	}
	cancel() // SIGTERM
	eventually(t, 10*time.Second, "the listener stops accepting", func() bool {
		c, err := net.DialTimeout("tcp", s.HTTPAddr().String(), time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	if _, err := http.Get(admin + "/readyz"); err == nil {
		t.Error("the admin listener still accepts during the drain")
	}
	select {
	case err := <-ran:
		t.Fatalf("Run returned with requests in flight: %v", err)
	default:
	}
	close(release)
	for range n {
		if r := <-results; r != "200 done" {
			t.Errorf("in-flight request: %s", r)
		}
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestServerShutdownTimeout(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	entered := make(chan struct{}, 1)
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	s, err := New(WithHTTPAddr("127.0.0.1:0"), WithGRPCAddr("127.0.0.1:0"), WithAdminAddr("127.0.0.1:0"),
		WithUpstream(u), WithShutdownTimeout(100*time.Millisecond), WithLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + s.HTTPAddr().String() + "/")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		got <- err
	}()
	<-entered
	start := time.Now()
	cancel()
	err = <-ran
	if !errors.Is(err, ErrShutdownTimeout) {
		t.Fatalf("Run = %v, want ErrShutdownTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v with a 100ms deadline", d)
	}
	if err := <-got; err == nil {
		t.Error("the request cut off at the deadline succeeded")
	}
}

func TestServerSlowLoris(t *testing.T) {
	s := startServer(t, WithReadHeaderTimeout(200*time.Millisecond), WithGRPCAddr(""))
	c, err := net.Dial("tcp", s.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A header sent a byte every 50ms: 60 bytes would take 3s.
	header := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 30) + "\r\n\r\n"
	start := time.Now()
	cut := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, c) // returns when the server closes the connection
		cut <- time.Since(start)
	}()
	for i := 0; i < len(header); i++ {
		if _, err := c.Write([]byte{header[i]}); err != nil {
			break
		}
		select {
		case d := <-cut:
			if d > 2*time.Second {
				t.Fatalf("cut off after %v", d)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case d := <-cut:
		if d > 2*time.Second {
			t.Fatalf("cut off after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a client sending its header byte by byte was never cut off")
	}
}

func TestServerHeaderAndBodyCaps(t *testing.T) {
	s := startServer(t, WithMaxHeaderBytes(4096), WithGRPCAddr(""))
	base := "http://" + s.HTTPAddr().String()
	r, _ := get(t, base+"/healthz", "X-Big", strings.Repeat("v", 64<<10))
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 64 KiB header: %d, want 431", r.StatusCode)
	}
	if r, _ := get(t, base+"/healthz"); r.StatusCode != 200 {
		t.Errorf("after: %d", r.StatusCode)
	}
}

func TestServerGatewayAdminSeparate(t *testing.T) {
	up := &echoUpstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	s := startServer(t, WithUpstream(u), WithAdminAddr("127.0.0.1:0"), WithDescriptorSpecs("generic_key=const:global"))
	front, admin := "http://"+s.HTTPAddr().String(), "http://"+s.AdminAddr().String()
	// The gateway proxies every path, /metrics included.
	r, body := get(t, front+"/metrics")
	if r.StatusCode != 200 || r.Header.Get("X-Upstream") != "yes" || !strings.Contains(string(body), `"path":"/metrics"`) {
		t.Fatalf("gateway /metrics: %d %s", r.StatusCode, body)
	}
	if r, body := get(t, admin+"/metrics"); r.StatusCode != 200 || !strings.Contains(string(body), "admit_decisions_total") {
		t.Fatalf("admin /metrics: %d %.200s", r.StatusCode, body)
	}
	if r, _ := get(t, admin+"/readyz"); r.StatusCode != 200 {
		t.Fatalf("admin /readyz: %d", r.StatusCode)
	}
}

func TestServerAdminSeparateInAPIMode(t *testing.T) {
	s := startServer(t, WithAdminAddr("127.0.0.1:0"))
	if r, _ := get(t, "http://"+s.HTTPAddr().String()+"/metrics"); r.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the HTTP listener with an admin listener: %d, want 404", r.StatusCode)
	}
	if r, _ := get(t, "http://"+s.AdminAddr().String()+"/metrics"); r.StatusCode != 200 {
		t.Errorf("/metrics on the admin listener: %d", r.StatusCode)
	}
}

func TestServerListenError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := New(WithHTTPAddr("127.0.0.1:0"), WithGRPCAddr(l.Addr().String()), WithLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "gRPC listener") {
		t.Fatalf("Start on a taken port: %v", err)
	}
	if s.HTTPAddr() == nil {
		t.Fatal("no HTTP address")
	}
	if _, err := net.DialTimeout("tcp", s.HTTPAddr().String(), time.Second); err == nil {
		t.Error("the HTTP listener was left open after a failed Start")
	}
}

// TestServerDebug: the profiler's listener; a port that is taken fails
// Start; Shutdown does not wait for a CPU profile in progress.
func TestServerDebug(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := New(WithHTTPAddr("127.0.0.1:0"), WithGRPCAddr(""), WithDebugAddr(l.Addr().String()), WithLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "debug listener") {
		t.Fatalf("Start on a taken port: %v", err)
	}

	s = startServer(t, WithGRPCAddr(""), WithDebugAddr("127.0.0.1:0"))
	if s.DebugAddr() == nil {
		t.Fatal("no debug address")
	}
	// A CPU profile of 30 s is running when the Server shuts down. The
	// Server is in this process: the profiler is taken once
	// runtime/pprof cannot start another.
	profile := func() chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := http.Get("http://" + s.DebugAddr().String() + "/debug/pprof/profile?seconds=30")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		return done
	}
	done := profile()
	deadline := time.Now().Add(10 * time.Second)
	for pprof.StartCPUProfile(io.Discard) == nil {
		pprof.StopCPUProfile()
		select {
		case <-done: // refused while this test held the profiler: again
			done = profile()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the profile did not start")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown during a profile: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Shutdown took %v: it waited for the profile", d)
	}
}

func TestServerNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeFile(t, path, reloadPolicy)
	for range 3 {
		s, err := New(WithHTTPAddr("127.0.0.1:0"), WithGRPCAddr("127.0.0.1:0"), WithPolicyFiles(path),
			WithReloadInterval(time.Millisecond), WithLogger(quietLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		r, _ := get(t, "http://"+s.HTTPAddr().String()+"/healthz")
		_ = r
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	eventually(t, 10*time.Second, "goroutines back to their number", func() bool {
		return runtime.NumGoroutine() <= before
	})
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
	client, _, err := NewRedisClient("redis://" + rs.Addr())
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
	s := startServer(t, WithPolicy(p), WithRedis(client), WithUpstream(u), WithAdminAddr("127.0.0.1:0"),
		WithDescriptorSpecs("rule=!header:X-Rule,id=!header:X-Id"))
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
	if v, ok := metric(t, s.Registry(), "admit_store_errors_total"); !ok || v == 0 {
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

// startRedisServer starts a Server with its own client of rs and the
// policy src, as an instance of admit serve --redis.
func startRedisServer(t *testing.T, rs *redistest.Server, src string, opts ...Option) *Server {
	t.Helper()
	client, _, err := NewRedisClient("redis://" + rs.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	p, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]Option{WithPolicy(p), WithRedis(client)}, opts...)...)
}

// TestServerSharedRedis: three Servers on one Redis enforce one limit
// together.
func TestServerSharedRedis(t *testing.T) {
	const src = `domain: api
rules:
  - name: shared
    match: [{key: generic_key, value: global}]
    rate: 30/hour
    store: redis
    failure: {policy: fail_closed, timeout: 5s}
`
	rs := redistest.Standalone(t)
	prefix := strings.TrimSuffix(strings.ReplaceAll(redistest.Prefix(t), ":", "-"), "-")
	up := &echoUpstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	var fronts []string
	for range 3 {
		s := startRedisServer(t, rs, src, WithUpstream(u), WithAdminAddr("127.0.0.1:0"),
			WithDescriptorSpecs("generic_key=const:global"), WithEngineOptions(policy.WithKeyPrefix(prefix)))
		fronts = append(fronts, "http://"+s.HTTPAddr().String())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 90 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(fronts[i%3] + "/")
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body))
			resp.Body.Close()
			if resp.StatusCode == 200 {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 30 {
		t.Fatalf("three servers admitted %d of 90, want the shared limit's 30", ok)
	}
}

// TestServerSharedLeases: two Servers on one Redis; a lease of a cap kept
// in Redis, acquired through one, is extended and released through the
// other.
func TestServerSharedLeases(t *testing.T) {
	const src = `domain: api
rules:
  - name: jobs
    match: job
    concurrency: 1
    store: redis
    failure: {policy: fail_closed, timeout: 5s}
`
	rs := redistest.Standalone(t)
	prefix := strings.TrimSuffix(strings.ReplaceAll(redistest.Prefix(t), ":", "-"), "-")
	var bases []string
	for range 2 {
		s := startRedisServer(t, rs, src, WithEngineOptions(policy.WithKeyPrefix(prefix)))
		bases = append(bases, "http://"+s.HTTPAddr().String())
	}
	post := func(base, path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, m
	}
	const job = `{"domain":"api","descriptors":[{"entries":[{"key":"job","value":"etl"}]}]}`
	code, m := post(bases[0], "/v1/acquire", job)
	id, _ := m["lease_id"].(string)
	if code != 200 || m["allowed"] != true || id == "" {
		t.Fatalf("acquire: %d %v", code, m)
	}
	if _, m := post(bases[1], "/v1/acquire", job); m["allowed"] != false {
		t.Fatalf("second acquire over a cap of 1: %v", m)
	}
	if code, m := post(bases[1], "/v1/extend", `{"lease_id":"`+id+`","ttl_ms":60000}`); code != 200 || m["extended"] != true {
		t.Fatalf("extend through the other server: %d %v", code, m)
	}
	if code, m := post(bases[1], "/v1/release", `{"lease_id":"`+id+`"}`); code != 200 || m["released"] != true {
		t.Fatalf("release through the other server: %d %v", code, m)
	}
	if _, m := post(bases[0], "/v1/acquire", job); m["allowed"] != true {
		t.Fatalf("acquire after the release: %v", m)
	}
}

// TestServerDebugPolicy: /debug/policy shows the files in force as they
// were loaded: a new valid file after a reload, still that one after a
// change that does not load; the built-in policy; a policy given in Go.
func TestServerDebugPolicy(t *testing.T) {
	get := func(s *Server) string {
		t.Helper()
		resp, err := http.Get("http://" + s.DebugAddr().String() + "/debug/policy")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("/debug/policy: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return string(b)
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, reloadPolicy)
	s := startServer(t, WithGRPCAddr(""), WithDebugAddr("127.0.0.1:0"), WithPolicyFiles(path), WithReloadInterval(0))
	if body := get(s); !strings.Contains(body, "# file "+path+" (sha256 ") || !strings.Contains(body, "rate: 5/hour") {
		t.Errorf("at start:\n%s", body)
	}
	writeFile(t, path, strings.Replace(reloadPolicy, "5/hour", "7/hour", 1))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if body := get(s); !strings.Contains(body, "rate: 7/hour") {
		t.Errorf("after a reload:\n%s", body)
	}
	writeFile(t, path, "garbage: [")
	if err := s.Reload(); err == nil {
		t.Fatal("a garbage file reloaded")
	}
	if body := get(s); !strings.Contains(body, "rate: 7/hour") || strings.Contains(body, "garbage") {
		t.Errorf("after a change that did not load:\n%s", body)
	}

	builtin := startServer(t, WithGRPCAddr(""), WithDebugAddr("127.0.0.1:0"))
	if body := get(builtin); !strings.Contains(body, "# file "+DefaultPolicyFile) || !strings.Contains(body, string(DefaultPolicyYAML())) {
		t.Errorf("built-in:\n%s", body)
	}
	p, err := policy.Parse("p.yaml", []byte(reloadPolicy))
	if err != nil {
		t.Fatal(err)
	}
	inGo := startServer(t, WithGRPCAddr(""), WithDebugAddr("127.0.0.1:0"), WithPolicy(p))
	if body := get(inGo); !strings.Contains(body, "# given in Go (WithPolicy): domains api, 1 rules") {
		t.Errorf("in Go:\n%s", body)
	}
}
