package server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/policy"
	"github.com/prometheus/client_golang/prometheus"
)

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
		opts []option
		want error
	}{
		{"policy and files", []option{withPolicy(&policy.Policy{}), withPolicyFiles(bad)}, errInvalidConfig},
		{"empty path", []option{withPolicyFiles("")}, errInvalidConfig},
		{"nothing to serve", []option{withHTTPAddr(""), withGRPCAddr("")}, errInvalidConfig},
		{"gateway without HTTP", []option{withHTTPAddr(""), withUpstream(up)}, errInvalidConfig},
		{"gateway and admin on one address", []option{withUpstream(up), withHTTPAddr(":9"), withAdminAddr(":9")}, errInvalidConfig},
		{"bad upstream", []option{withUpstream(&url.URL{Scheme: "ftp", Host: "h"})}, errInvalidConfig},
		{"gateway domain ambiguous", []option{withUpstream(up), withPolicyFiles(two)}, errInvalidConfig},
		{"gateway domain missing", []option{withUpstream(up), withGatewayDomain("nope")}, admit.ErrInvalidConfig},
		{"shutdown timeout", []option{withShutdownTimeout(-1)}, errInvalidConfig},
		{"request bytes", []option{withMaxRequestBytes(1 << 31)}, errInvalidConfig},
		{"header bytes", []option{withMaxHeaderBytes(-1)}, errInvalidConfig},
		{"invalid policy file", []option{withPolicyFiles(bad)}, policy.ErrInvalidPolicy},
		{"missing policy file", []option{withPolicyFiles(filepath.Join(dir, "missing.yaml"))}, os.ErrNotExist},
		{"directory without policies", []option{withPolicyFiles(empty)}, errNoPolicyFiles},
		{"redis rule without redis", []option{withPolicyFiles(redisRule)}, policy.ErrNoStore},
		{"bad engine config", []option{withEngine(policy.Config{MaxKeys: -1})}, admit.ErrInvalidConfig},
		{"bad gateway option", []option{withUpstream(up), withDescriptorSpecs("x")}, errInvalidDescriptor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newWith(append([]option{withLogger(quietLogger(t))}, tc.opts...)...)
			if !errors.Is(err, tc.want) || s != nil {
				t.Fatalf("New = %v, %v; want %v", s, err, tc.want)
			}
		})
	}
	// The package's refusals are admit.ErrInvalidConfig, each saying what
	// is wrong.
	if _, err := newWith(withPolicyFiles(empty), withLogger(quietLogger(t))); !errors.Is(err, admit.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "server: no policy files: directory "+empty+" has no *.yaml or *.yml file") {
		t.Errorf("a directory without policies: %v", err)
	}
	var ce *ConfigError
	if err := (Config{ShutdownTimeout: -1}).Validate(); !errors.Is(err, admit.ErrInvalidConfig) || !errors.As(err, &ce) ||
		ce.Field != "ShutdownTimeout" || !strings.HasPrefix(err.Error(), "admit: invalid config: server: Config.ShutdownTimeout: ") {
		t.Errorf("Validate: %v", err)
	}
	// The problems of a policy file name its file, line and column.
	_, err := newWith(withPolicyFiles(bad), withLogger(quietLogger(t)))
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:5:11") {
		t.Errorf("error %v does not name bad.yaml:5:11", err)
	}
}

func TestServerBuiltIn(t *testing.T) {
	s := startServer(t)
	if s.HTTPAddr() == nil || s.GRPCAddr() == nil || s.AdminAddr() != nil {
		t.Fatalf("addresses: http %v grpc %v admin %v", s.HTTPAddr(), s.GRPCAddr(), s.AdminAddr())
	}
	if s.Gateway() != nil || s.Engine() == nil || s.source().Engine() != s.Engine() {
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
	if err := s.Start(); !errors.Is(err, admit.ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
	if err := s.Reload(); !errors.Is(err, admit.ErrClosed) {
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
	s := startServer(t, withRegistry(reg), withPolicy(p), withGRPCAddr(""))
	if s.registry() != reg || s.GRPCAddr() != nil {
		t.Fatal("registry or gRPC address")
	}
	if v, ok := metric(t, reg, "admit_config_last_reload_successful"); !ok || v != 1 {
		t.Errorf("admit_config_last_reload_successful = %v, %v", v, ok)
	}
	if _, ok := metric(t, reg, "go_goroutines"); ok {
		t.Error("the Go collector was added to a registry the caller gave")
	}
	// A second server on the same registry: its metrics collide.
	if _, err := newWith(withRegistry(reg), withLogger(quietLogger(t))); !errors.Is(err, errInvalidConfig) {
		t.Errorf("a second server on one registry: %v", err)
	}
}

func TestServerSlowLoris(t *testing.T) {
	s := startServer(t, withReadHeaderTimeout(200*time.Millisecond), withGRPCAddr(""))
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
	s := startServer(t, withMaxHeaderBytes(4096), withGRPCAddr(""))
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
	s := startServer(t, withUpstream(u), withAdminAddr("127.0.0.1:0"), withDescriptorSpecs("generic_key=const:global"))
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
	s := startServer(t, withAdminAddr("127.0.0.1:0"))
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
	s, err := newWith(withHTTPAddr("127.0.0.1:0"), withGRPCAddr(l.Addr().String()), withLogger(quietLogger(t)))
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
