package main

import (
	"bytes"
	"errors"
	"flag"
	"runtime"
	"strings"
	"testing"
	"time"
)

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
	cmd, _ := newServeCommand()
	cmd.fs.VisitAll(func(f *flag.Flag) {
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
		// Of two negative durations, always the first in the order of
		// the flags (the check once ranged over a map).
		{[]string{"serve", "--upstream-timeout", "-1s", "--idle-timeout", "-1s", "--read-timeout", "-2s"}, nil, "--read-timeout (ADMIT_READ_TIMEOUT)"},
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
		{[]string{"serve", "--redis", "redis://h:6379", "--redis-tls-ca", "ca.pem"}, nil, "--redis (ADMIT_REDIS): invalid Redis URL: TLS files for a URL of redis://, which is not TLS"},
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
		l, err := loadServe(args, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		return &l.cfg
	}
	c := parse(nil)
	if c.HTTPAddr != ":8080" || c.GRPCAddr != ":8081" || c.ShutdownTimeout != 10*time.Second || c.ReloadInterval != 2*time.Second ||
		c.MaxRequestBytes != 1<<20 || c.LogFormat != "text" || c.LogLevel != "info" || len(c.PolicyFiles) != 0 {
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
	if c.HTTPAddr != ":9000" || strings.Join(c.PolicyFiles, "|") != "a.yaml|b.yaml" || len(c.Descriptors) != 2 ||
		len(c.TrustedProxies) != 2 || c.TrustedProxies[1].String() != "192.168.1.1/32" || c.ShutdownTimeout != 3*time.Second ||
		c.MaxRequestBytes != 64<<10 || !c.Shadow || c.LogFormat != "json" {
		t.Errorf("from the environment: %+v", c)
	}
	// Flags win over the environment; a list flag replaces the
	// variable's items rather than adding to them.
	c = parse(env, "--http-addr", ":9001", "--config", "c.yaml", "--config", "d.yaml", "--trusted-proxies", "::1",
		"--shutdown-timeout", "1s", "--upstream", "http://up")
	if c.HTTPAddr != ":9001" || strings.Join(c.PolicyFiles, "|") != "c.yaml|d.yaml" || len(c.TrustedProxies) != 1 ||
		c.ShutdownTimeout != time.Second {
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
