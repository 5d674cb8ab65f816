package main

// serve in-process: the policy, reloads, the gateway, the listeners, TLS, start errors.

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/internal/testpki"
)

func TestServeBuiltIn(t *testing.T) {
	s := runServe(t, map[string]string{"ADMIT_HTTP_ADDR": "127.0.0.1:0", "ADMIT_GRPC_ADDR": "127.0.0.1:0"}, nil)
	if s.http == "" || s.grpc == "" || s.admin != "" || s.gateway {
		t.Fatalf("banner: %+v", s.banner)
	}
	// The command the banner prints works: the demo rule admits 5 a
	// minute.
	allowed := 0
	for range 7 {
		status, _, body := curl(t, s.try)
		var c checkResponse
		if err := json.Unmarshal([]byte(body), &c); status != 200 || err != nil || c.Decision.Rule != "demo" {
			t.Fatalf("%s: %d %s", s.try, status, body)
		}
		if c.Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("the demo rule admitted %d of 7, want 5", allowed)
	}
	s.cancel()
	if err := s.wait(t, 15*time.Second); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(s.stderr.String(), "shut down") {
		t.Errorf("no shutdown log:\n%s", s.stderr)
	}
}

func TestServeConfigAndReload(t *testing.T) {
	path := writeTemp(t, "policy.yaml", ourPolicy)
	reload := make(chan os.Signal, 1)
	s := runServe(t, nil, reload, "--http-addr", "127.0.0.1:0", "--grpc-addr", "", "--config", path,
		"--reload-interval", "0", "--log-format", "json")
	if !strings.Contains(s.try, `"domain":"shop"`) || !strings.Contains(s.try, `"value":"/checkout"`) {
		t.Fatalf("try command for the config: %s", s.try)
	}
	for i, want := range []bool{true, true} {
		if got := check(t, s.http, "shop", "route", "/checkout"); got.Allowed != want {
			t.Fatalf("check %d: %+v", i, got)
		}
	}
	// An added rule, reloaded on SIGHUP; the unchanged rule keeps its
	// state (one left).
	if err := os.WriteFile(path, []byte(ourPolicy+"  - {name: search, match: [{key: route, value: /search}], rate: 1/hour}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload <- syscall.SIGHUP
	eventually(t, 10*time.Second, "the reloaded rule", func() bool {
		return check(t, s.http, "shop", "route", "/search").Decision.Rule == "search"
	})
	if got := check(t, s.http, "shop", "route", "/checkout"); !got.Allowed || got.Decision.Remaining != 0 {
		t.Fatalf("the unchanged rule after the reload: %+v", got)
	}
	// Garbage: the policy stays.
	if err := os.WriteFile(path, []byte("rules: [[["), 0o600); err != nil {
		t.Fatal(err)
	}
	reload <- syscall.SIGHUP
	eventually(t, 10*time.Second, "the failure logged", func() bool {
		return strings.Contains(s.stderr.String(), `"pos":"`+path+`:1`)
	})
	if got := check(t, s.http, "shop", "route", "/checkout"); got.Allowed || got.Decision.Rule != "checkout" {
		t.Fatalf("after a garbage reload: %+v", got)
	}
}

func TestServeGateway(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "upstream:"+r.URL.Path)
	}))
	defer up.Close()
	path := writeTemp(t, "gw.yaml", ourPolicy)
	s := runServe(t, nil, nil, "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--config", path, "--upstream", up.URL, "--descriptor", "route=path", "--trusted-proxies", "10.0.0.0/8",
		"--upstream-max-body-bytes", "1KiB")
	if !s.gateway || s.admin == "" || s.try != "curl -i http://"+s.http+"/" {
		t.Fatalf("banner: %+v", s.banner)
	}
	if status, _, body := curl(t, s.try); status != 200 || body != "upstream:/" {
		t.Fatalf("try: %d %q", status, body)
	}
	var codes []int
	for range 4 {
		status, _, _ := curl(t, "curl -s http://"+s.http+"/checkout")
		codes = append(codes, status)
	}
	if codes[2] != 200 || codes[3] != 429 {
		t.Fatalf("/checkout through the gateway: %v, want 3 admitted then 429", codes)
	}
	// The API moved to the admin listener.
	if got := check(t, s.admin, "shop", "route", "/checkout"); got.Allowed {
		t.Fatalf("API on the admin listener: %+v", got)
	}
	resp, err := http.Post("http://"+s.http+"/big", "text/plain", strings.NewReader(strings.Repeat("x", 2000)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over --upstream-max-body-bytes: %d", resp.StatusCode)
	}
}

func TestServeGRPCOnly(t *testing.T) {
	path := writeTemp(t, "p.yaml", envoyPolicy)
	s := runServe(t, nil, nil, "--http-addr", "", "--grpc-addr", "127.0.0.1:0", "--config", path)
	want := `grpcurl -plaintext -d '{"domain":"legacy","descriptors":[{"entries":[{"key":"remote_address","value":"example"}]}]}' ` +
		s.grpc + " envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
	if s.http != "" || s.try != want {
		t.Fatalf("try: %q\nwant %q", s.try, want)
	}
}

// TestServeDebug: --debug-addr (here from its variable) serves the
// profiler on a listener of its own, and only there.
func TestServeDebug(t *testing.T) {
	s := runServe(t, map[string]string{"ADMIT_DEBUG_ADDR": "127.0.0.1:0"}, nil, "--http-addr", "127.0.0.1:0", "--grpc-addr", "")
	if s.debug == "" {
		t.Fatalf("no profiler in the banner:\n%s", s.text)
	}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("http://" + s.debug + "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("the profiler's index: %d %.200s", code, body)
	}
	if code, body := get("http://" + s.debug + "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Errorf("a profile: %d %.200s", code, body)
	}
	if code, _ := get("http://" + s.http + "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("the profiler on the HTTP listener: %d, want 404", code)
	}
	// Without it, none.
	s = runServe(t, nil, nil, "--http-addr", "127.0.0.1:0", "--grpc-addr", "")
	if s.debug != "" {
		t.Errorf("a profiler without --debug-addr: %s", s.debug)
	}
}

// TestServeReset: --allow-reset (ADMIT_ALLOW_RESET) serves /v1/reset;
// without it, 403.
func TestServeReset(t *testing.T) {
	post := func(base, path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post("http://"+base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	demo := `{"domain":"api","descriptors":[{"entries":[{"key":"generic_key","value":"demo"}]}]}`
	off := runServe(t, nil, nil, "--http-addr", "127.0.0.1:0", "--grpc-addr", "")
	if code, body := post(off.http, "/v1/reset", demo); code != http.StatusForbidden || !strings.Contains(body, "--allow-reset") {
		t.Errorf("without --allow-reset: %d %s", code, body)
	}
	s := runServe(t, map[string]string{"ADMIT_ALLOW_RESET": "true"}, nil, "--http-addr", "127.0.0.1:0", "--grpc-addr", "")
	for range 6 {
		post(s.http, "/v1/check", demo) // the built-in demo rule: 5 a minute
	}
	if _, body := post(s.http, "/v1/check", demo); !strings.Contains(body, `"allowed":false`) {
		t.Fatalf("the demo rule after 6 checks: %s", body)
	}
	if code, body := post(s.http, "/v1/reset", demo); code != http.StatusOK || body != "{\"reset\":1}\n" {
		t.Fatalf("reset: %d %s", code, body)
	}
	if _, body := post(s.http, "/v1/check", demo); !strings.Contains(body, `"allowed":true`) {
		t.Errorf("after the reset: %s", body)
	}
	// An operator's action leaves a record.
	if log := s.stderr.String(); !strings.Contains(log, `msg="limits reset" api=http peer=127.0.0.1:`) || !strings.Contains(log, `descriptors="generic_key=demo" reset=1`) {
		t.Errorf("no record of the reset in the log:\n%s", log)
	}
}

// TestServeTLS: --tls-cert, --tls-key and --tls-client-ca serve the API
// over mutual TLS; the banner says so and its command names what a client
// needs; files that do not load stop admit serve.
func TestServeTLS(t *testing.T) {
	p := testpki.New(t)
	s := runServe(t, nil, nil, "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
		"--tls-cert", p.CertFile, "--tls-key", p.KeyFile, "--tls-client-ca", p.CAFile)
	if !strings.Contains(s.text, "HTTP API on https://") || !strings.Contains(s.text, "reflection, mutual TLS) on") {
		t.Errorf("banner:\n%s", s.text)
	}
	if !strings.HasPrefix(s.try, "curl -sk --cert client.pem --key client-key.pem -H 'Content-Type: application/json' -d '{\"domain\":\"api\"") ||
		!strings.HasSuffix(s.try, " https://"+s.http+"/v1/check") {
		t.Errorf("try: %s", s.try)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.Pool, Certificates: []tls.Certificate{p.Client}}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post("https://"+s.http+"/v1/check", "application/json",
		strings.NewReader(`{"domain":"api","descriptors":[{"entries":[{"key":"generic_key","value":"demo"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"allowed":true`) {
		t.Errorf("check over mutual TLS: %d %s", resp.StatusCode, body)
	}
	if cn, err := p.PeerCN(t, s.grpc); err == nil {
		t.Errorf("gRPC without a client certificate: served by %q", cn)
	}

	_, errOut, code := runCmd(t, nil, "serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "", "--tls-cert", p.CertFile, "--tls-key", p.CAFile)
	if code != exitFailure || !strings.Contains(errOut, p.CAFile) {
		t.Errorf("a key that is not the certificate's: %d %q", code, errOut)
	}
}

// TestServeRedisTLS: --redis rediss:// with --redis-tls-ca, -cert and
// -key reaches a Redis that requires client certificates: /readyz is
// ready, not degraded.
func TestServeRedisTLS(t *testing.T) {
	p := testpki.New(t)
	rs := redistest.NewTLS(t, p.CertFile, p.KeyFile, p.CAFile)
	s := runServe(t, map[string]string{"ADMIT_REDIS_TLS_KEY": p.ClientKeyFile}, nil, "--http-addr", "127.0.0.1:0", "--grpc-addr", "",
		"--redis", "rediss://"+rs.TLSAddr(), "--redis-tls-ca", p.CAFile, "--redis-tls-cert", p.ClientCertFile)
	resp, err := http.Get("http://" + s.http + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"ready"`) {
		t.Errorf("/readyz: %d %s", resp.StatusCode, body)
	}
}

// TestServeUnixSockets: listeners on Unix sockets, named so in the banner,
// and a command to try that reaches them.
func TestServeUnixSockets(t *testing.T) {
	dir := t.TempDir()
	h, g := filepath.Join(dir, "h.sock"), filepath.Join(dir, "g.sock")
	s := runServe(t, nil, nil, "--http-addr", "unix:"+h, "--grpc-addr", "unix://"+g)
	if !strings.Contains(s.text, "HTTP API on unix:"+h+"\n") || !strings.Contains(s.text, "reflection) on unix:"+g+"\n") {
		t.Errorf("banner:\n%s", s.text)
	}
	if !strings.HasSuffix(s.try, "' --unix-socket "+h+" http://localhost/v1/check") {
		t.Errorf("try: %s", s.try)
	}
	s = runServe(t, nil, nil, "--http-addr", "", "--grpc-addr", "unix:"+filepath.Join(dir, "g2.sock"))
	if !strings.Contains(s.try, "grpcurl -plaintext -d '") || !strings.Contains(s.try, "' -unix "+filepath.Join(dir, "g2.sock")+" envoy.service") {
		t.Errorf("try: %s", s.try)
	}
}

func TestServeStartErrors(t *testing.T) {
	bad := writeTemp(t, "bad.yaml", "domain: x\nrules:\n  - {name: a, match: k, rate: nope}\n")
	_, errOut, code := runCmd(t, nil, "serve", "--config", bad, "--http-addr", "127.0.0.1:0", "--grpc-addr", "")
	if code != exitFailure || !strings.Contains(errOut, bad+":3:") {
		t.Errorf("an invalid policy: %d %q", code, errOut)
	}
	// A debug address that is not one; TLS files that are not there.
	_, errOut, code = runCmd(t, nil, "serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "", "--debug-addr", "nowhere")
	if code != exitFailure || !strings.Contains(errOut, "debug listener") {
		t.Errorf("a bad --debug-addr: %d %q", code, errOut)
	}
	_, errOut, code = runCmd(t, nil, "serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "", "--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem")
	if code != exitFailure || !strings.Contains(errOut, "/nonexistent/c.pem") {
		t.Errorf("missing TLS files: %d %q", code, errOut)
	}
	// A port that is taken.
	l := httptest.NewServer(http.NotFoundHandler())
	defer l.Close()
	_, errOut, code = runCmd(t, nil, "serve", "--http-addr", strings.TrimPrefix(l.URL, "http://"), "--grpc-addr", "")
	if code != exitFailure || !strings.Contains(errOut, "HTTP listener") {
		t.Errorf("a taken port: %d %q", code, errOut)
	}
}

// TestServeServerConfig: admit serve runs from a settings file, a flag
// overriding one of its keys.
func TestServeServerConfig(t *testing.T) {
	policyPath := writeTemp(t, "policy.yaml", ourPolicy)
	file := writeTemp(t, "serve.yaml", "http-addr: \"127.0.0.1:0\"\ngrpc-addr: \"127.0.0.1:0\"\nconfig:\n  - "+policyPath+"\nallow-reset: true\n")
	s := runServe(t, nil, nil, "--server-config", file, "--grpc-addr", "")
	if s.http == "" || s.grpc != "" || !strings.Contains(s.try, `"domain":"shop"`) {
		t.Fatalf("banner: %+v", s.banner)
	}
	if got := check(t, s.http, "shop", "route", "/checkout"); !got.Allowed || got.Decision.Rule != "checkout" {
		t.Fatalf("the file's policy: %+v", got)
	}
}
