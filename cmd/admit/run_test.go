package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/internal/testpki"
)

// runCmd runs a command in-process and returns its outputs and exit
// status.
func runCmd(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	code = exitCode(err, &errb)
	return out.String(), errb.String(), code
}

func TestVersion(t *testing.T) {
	out, _, code := runCmd(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "admit ") || !strings.Contains(out, runtime.Version()) ||
		!strings.Contains(out, "github.com/admit-go/admit") {
		t.Fatalf("version: %d %q", code, out)
	}
	if _, errOut, code := runCmd(t, nil, "version", "extra"); code != exitUsage || !strings.Contains(errOut, "no arguments") {
		t.Errorf("version extra: %d %q", code, errOut)
	}
}

func TestHelp(t *testing.T) {
	out, _, code := runCmd(t, nil, "help")
	if code != 0 {
		t.Fatal(code)
	}
	for _, c := range []string{"serve", "check-config", "version", "help"} {
		if !strings.Contains(out, "  "+c) {
			t.Errorf("help lacks %s:\n%s", c, out)
		}
	}
	out, _, code = runCmd(t, nil, "help", "serve")
	if code != 0 {
		t.Fatal(code)
	}
	// Every flag is listed with its environment variable.
	var c serveConfig
	newServeCommand(&c).fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(out, "--"+f.Name) || !strings.Contains(out, envName(f.Name)) {
			t.Errorf("help serve lacks --%s or %s", f.Name, envName(f.Name))
		}
	})
	for _, want := range []string{"(default :8080)", "(default 10s)", "ADMIT_REDIS", "redis+cluster://"} {
		if !strings.Contains(out, want) {
			t.Errorf("help serve lacks %q", want)
		}
	}
	if out, _, code := runCmd(t, nil, "serve", "-h"); code != 0 || !strings.Contains(out, "--http-addr") {
		t.Errorf("serve -h: %d %q", code, out)
	}
	if out, _, code := runCmd(t, nil, "help", "check-config"); code != 0 || !strings.Contains(out, "--format") {
		t.Errorf("help check-config: %d %q", code, out)
	}
	if out, _, code := runCmd(t, nil, "help", "version"); code != 0 || !strings.Contains(out, "admit version") {
		t.Errorf("help version: %d %q", code, out)
	}
	if _, _, code := runCmd(t, nil, "help", "bogus"); code != exitUsage {
		t.Errorf("help bogus: %d", code)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "Usage: admit"},
		{[]string{"bogus"}, nil, `unknown command "bogus"`},
		{[]string{"serve", "--bogus"}, nil, "flag provided but not defined"},
		{[]string{"serve", "extra"}, nil, "takes no arguments"},
		{[]string{"serve"}, map[string]string{"ADMIT_SHUTDOWN_TIMEOUT": "soon"}, "ADMIT_SHUTDOWN_TIMEOUT"},
		{[]string{"serve"}, map[string]string{"ADMIT_LOG_FORMAT": "xml"}, "ADMIT_LOG_FORMAT"},
		{[]string{"serve"}, map[string]string{"ADMIT_LOG_LEVEL": "loud"}, "ADMIT_LOG_LEVEL"},
		{[]string{"serve"}, map[string]string{"ADMIT_TRUSTED_PROXIES": "10.0.0.0/8,nope"}, "ADMIT_TRUSTED_PROXIES"},
		{[]string{"serve"}, map[string]string{"ADMIT_DESCRIPTOR": "tenant"}, "ADMIT_DESCRIPTOR"},
		{[]string{"serve"}, map[string]string{"ADMIT_MAX_BODY_BYTES": "lots"}, "ADMIT_MAX_BODY_BYTES"},
		{[]string{"serve"}, map[string]string{"ADMIT_SHADOW": "maybe"}, "ADMIT_SHADOW"},
		{[]string{"serve", "--shutdown-timeout", "0"}, nil, "--shutdown-timeout (ADMIT_SHUTDOWN_TIMEOUT)"},
		{[]string{"serve", "--reload-interval", "-1s"}, nil, "--reload-interval (ADMIT_RELOAD_INTERVAL)"},
		{[]string{"serve", "--max-body-bytes", "0"}, nil, "--max-body-bytes (ADMIT_MAX_BODY_BYTES)"},
		{[]string{"serve", "--max-header-bytes", "2GiB"}, nil, "--max-header-bytes"},
		{[]string{"serve", "--upstream-timeout", "0"}, nil, "--upstream-timeout"},
		{[]string{"serve", "--redis", "ftp://h"}, nil, "--redis (ADMIT_REDIS)"},
		{[]string{"serve", "--redis", "redis://u:hunter2@h/x"}, nil, "--redis"},
		{[]string{"serve", "--upstream", "localhost:8080"}, nil, "--upstream (ADMIT_UPSTREAM)"},
		{[]string{"serve", "--upstream", "http://"}, nil, "no host"},
		{[]string{"serve", "--domain", "api"}, nil, "only with --upstream"},
		{[]string{"serve", "--descriptor", "k=path", "--trusted-proxies", "10.0.0.0/8"}, nil, "--descriptor, --trusted-proxies: only with --upstream"},
		{[]string{"serve", "--key-prefix", strings.Repeat("p", 1000)}, nil, "--key-prefix"},
		{[]string{"serve", "--tls-cert", "c.pem"}, nil, "--tls-cert (ADMIT_TLS_CERT) and --tls-key (ADMIT_TLS_KEY) go together"},
		{[]string{"serve"}, map[string]string{"ADMIT_TLS_KEY": "k.pem"}, "--tls-cert (ADMIT_TLS_CERT) and --tls-key"},
		{[]string{"serve", "--tls-client-ca", "ca.pem"}, nil, "--tls-client-ca (ADMIT_TLS_CLIENT_CA): needs --tls-cert"},
		{[]string{"serve", "--grpc-max-connection-age", "-1s"}, nil, "--grpc-max-connection-age"},
		{[]string{"serve"}, map[string]string{"ADMIT_RLS_HEADERS": "draft-03"}, "ADMIT_RLS_HEADERS"},
		{[]string{"serve", "--redis-tls-ca", "ca.pem"}, nil, "need --redis (ADMIT_REDIS)"},
		{[]string{"serve", "--redis", "redis://h:6379", "--redis-tls-ca", "ca.pem"}, nil, "--redis (ADMIT_REDIS): server: invalid Redis URL: TLS files for a URL of redis://, which is not TLS"},
		{[]string{"serve"}, map[string]string{"ADMIT_GRPC_MAX_CONNECTION_AGE_GRACE": "later"}, "ADMIT_GRPC_MAX_CONNECTION_AGE_GRACE"},
		{[]string{"check-config"}, nil, "no files"},
		{[]string{"check-config", "--format", "xml", "f"}, nil, `invalid value "xml" for flag -format`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, errOut, code := runCmd(t, tc.env, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut, exitUsage, tc.want)
			}
			if strings.Contains(errOut, "hunter2") {
				t.Fatalf("stderr quotes a password: %q", errOut)
			}
		})
	}
}

func TestServeFlagsAndEnvironment(t *testing.T) {
	parse := func(env map[string]string, args ...string) *serveConfig {
		t.Helper()
		var c serveConfig
		cmd := newServeCommand(&c)
		if _, err := cmd.parse(args, func(k string) string { return env[k] }); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	c := parse(nil)
	if c.httpAddr != ":8080" || c.grpcAddr != ":8081" || c.shutdown != 10*time.Second || c.reload != 2*time.Second ||
		c.maxBody.n != 1<<20 || c.logFormat.value != "text" || c.logLevel.value != "info" || len(c.config.items) != 0 {
		t.Errorf("defaults: %+v", c)
	}
	env := map[string]string{
		"ADMIT_HTTP_ADDR":        ":9000",
		"ADMIT_CONFIG":           "a.yaml, b.yaml",
		"ADMIT_DESCRIPTOR":       "tenant=header:X-Tenant,route=path; generic_key=const:global",
		"ADMIT_TRUSTED_PROXIES":  "10.0.0.0/8, 192.168.1.1",
		"ADMIT_SHUTDOWN_TIMEOUT": "3s",
		"ADMIT_MAX_BODY_BYTES":   "64KiB",
		"ADMIT_SHADOW":           "true",
		"ADMIT_LOG_FORMAT":       "JSON",
	}
	c = parse(env)
	if c.httpAddr != ":9000" || strings.Join(c.config.items, "|") != "a.yaml|b.yaml" || len(c.descriptors.items) != 2 ||
		len(c.trusted.prefixes()) != 2 || c.trusted.prefixes()[1].String() != "192.168.1.1/32" || c.shutdown != 3*time.Second ||
		c.maxBody.n != 64<<10 || !c.shadow || c.logFormat.value != "json" {
		t.Errorf("from the environment: %+v", c)
	}
	// Flags win over the environment; a list flag replaces the
	// variable's items rather than adding to them.
	c = parse(env, "--http-addr", ":9001", "--config", "c.yaml", "--config", "d.yaml", "--trusted-proxies", "::1",
		"--shutdown-timeout", "1s")
	if c.httpAddr != ":9001" || strings.Join(c.config.items, "|") != "c.yaml|d.yaml" || len(c.trusted.prefixes()) != 1 ||
		c.shutdown != time.Second {
		t.Errorf("flags over the environment: %+v", c)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "1MiB": 1 << 20, "64k": 64 << 10, "2 MB": 2_000_000,
		"512KiB": 512 << 10, "1gib": 1 << 30, "10b": 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5MiB", "1 TiB", "99999999999999999999", "9999999999GiB", "0x10"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
	for n, want := range map[int64]string{1 << 20: "1MiB", 1 << 30: "1GiB", 3 << 10: "3KiB", 1000: "1000", 0: "0"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzParseSize: any input parses to a size >= 0 or fails; never panics.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1MiB", "64k", "2 MB", "", "-1", "9223372036854775807", "9223372036854775808", "8EiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("parseSize(%q) = %d", s, n)
		}
	})
}

const ourPolicy = `domain: shop
rules:
  - name: checkout
    match:
      - key: route
        value: /checkout
    rate: 3/hour
`

const envoyPolicy = `domain: legacy
descriptors:
  - key: remote_address
    rate_limit:
      unit: hour
      requests_per_unit: 2
`

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckConfig(t *testing.T) {
	ours := writeTemp(t, "ours.yaml", ourPolicy)
	envoy := writeTemp(t, "envoy.yaml", envoyPolicy)
	bad := writeTemp(t, "bad.yaml", "domain: shop\nrules:\n  - name: x\n    match: k\n    rate: often\n  - name: x\n    match: j\n    rate: 1/s\n")
	garbage := writeTemp(t, "garbage.yaml", "{{{")
	redisRule := writeTemp(t, "redis.yaml", "domain: r\nrules:\n  - {name: x, match: k, rate: 1/s, store: redis}\n")

	out, errOut, code := runCmd(t, nil, "check-config", ours, envoy, redisRule)
	if code != 0 || errOut != "" || !strings.Contains(out, "ok: 3 files, 3 domains (shop, legacy, r), 3 rules") {
		t.Fatalf("valid files: %d %q %q", code, out, errOut)
	}
	out, errOut, code = runCmd(t, nil, "check-config", bad, garbage, ours)
	if code != exitFailure || out != "" {
		t.Fatalf("invalid files: %d %q", code, out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	want := []string{bad + ":5:11: rules[0].rate:", bad + ":6:11: rules[1].name:", garbage + ":1:"}
	if len(lines) != len(want) {
		t.Fatalf("problems:\n%s", errOut)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d: %q, want it to start with %q", i, lines[i], w)
		}
	}
	// Files that are valid alone but clash when merged.
	out, errOut, code = runCmd(t, nil, "check-config", ours, writeTemp(t, "again.yaml", ourPolicy))
	if code != exitFailure || !strings.Contains(errOut, "shop") {
		t.Errorf("a domain twice: %d %q %q", code, out, errOut)
	}
	// A missing file, a directory.
	_, errOut, code = runCmd(t, nil, "check-config", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != exitFailure || !strings.Contains(errOut, "missing.yaml: no such file") {
		t.Errorf("missing file: %d %q", code, errOut)
	}
	dir := filepath.Dir(ours)
	if out, _, code := runCmd(t, nil, "check-config", dir); code != 0 || !strings.Contains(out, "ok: 1 file,") {
		t.Errorf("directory: %d %q", code, out)
	}
	// ADMIT_CONFIG names the files when no argument does.
	if out, _, code := runCmd(t, map[string]string{"ADMIT_CONFIG": ours + "," + envoy}, "check-config"); code != 0 || !strings.Contains(out, "2 files") {
		t.Errorf("ADMIT_CONFIG: %d %q", code, out)
	}
	// JSON.
	out, _, code = runCmd(t, nil, "check-config", "--format", "json", bad)
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitFailure {
		t.Fatalf("json: %d %v %q", code, err, out)
	}
	if rep.OK || len(rep.Problems) != 2 || rep.Problems[0].Line != 5 || rep.Problems[0].Column != 11 ||
		rep.Problems[0].Field != "rules[0].rate" || rep.Problems[0].File != bad || len(rep.Files) != 1 || rep.Files[0].Format != "admit" {
		t.Errorf("json report: %+v", rep)
	}
	out, _, code = runCmd(t, nil, "check-config", "--format=json", envoy)
	rep = checkReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || !rep.OK || rep.Files[0].Format != "envoy" ||
		rep.Rules != 1 || rep.Domains[0] != "legacy" || rep.Problems == nil {
		t.Errorf("json of a valid file: %d %v %q", code, err, out)
	}
}

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

// TestMergeDomains: two envoyproxy/ratelimit files of one domain are an
// error, unless --merge-domains (ADMIT_MERGE_DOMAINS) merges them, for
// check-config and serve alike.
func TestMergeDomains(t *testing.T) {
	a := writeTemp(t, "a.yaml", envoyPolicy)
	b := writeTemp(t, "b.yaml", "domain: legacy\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	_, errOut, code := runCmd(t, nil, "check-config", a, b)
	if code != exitFailure || !strings.Contains(errOut, `duplicate domain "legacy"`) {
		t.Errorf("without merging: %d %q", code, errOut)
	}
	out, errOut, code := runCmd(t, nil, "check-config", "--merge-domains", a, b)
	if code != 0 || !strings.Contains(out, "ok: 2 files, 1 domain (legacy), 2 rules") {
		t.Errorf("--merge-domains: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := runCmd(t, nil, "serve", "--config", a, "--config", b, "--http-addr", "127.0.0.1:0", "--grpc-addr", ""); code != exitFailure || !strings.Contains(errOut, "duplicate domain") {
		t.Errorf("serve without merging: %d %q", code, errOut)
	}
	s := runServe(t, map[string]string{"ADMIT_MERGE_DOMAINS": "true"}, nil, "--config", a, "--config", b, "--http-addr", "127.0.0.1:0", "--grpc-addr", "")
	resp, err := http.Post("http://"+s.http+"/v1/check", "application/json",
		strings.NewReader(`{"domain":"legacy","descriptors":[{"entries":[{"key":"user","value":"u"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"limit":{"rate":5`) {
		t.Errorf("a descriptor of the second file: %s", body)
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

func TestExitCode(t *testing.T) {
	var b bytes.Buffer
	if exitCode(nil, &b) != 0 || b.Len() != 0 {
		t.Error("nil")
	}
	if exitCode(errors.New("boom"), &b) != exitFailure || !strings.Contains(b.String(), "admit: boom") {
		t.Errorf("plain error: %q", b.String())
	}
	b.Reset()
	if exitCode(&exitError{code: 1, err: errors.New("x"), quiet: true}, &b) != 1 || b.Len() != 0 {
		t.Errorf("quiet: %q", b.String())
	}
	if exitCode(usageErrorf("bad"), &b) != exitUsage || !strings.Contains(b.String(), "admit help") {
		t.Errorf("usage: %q", b.String())
	}
}
