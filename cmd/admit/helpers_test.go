package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the admit binary the end-to-end tests run, built once by
// TestMain into a directory it removes.
var (
	binDir   string
	binPath  string
	binOnce  sync.Once
	binError error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// admitBinary builds cmd/admit (once per test binary) and returns its
// path.
func admitBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			binError = fmt.Errorf("the end-to-end tests build admit with the go command, which is not on PATH: %v", err)
			return
		}
		binDir, binError = os.MkdirTemp("", "admit-e2e-")
		if binError != nil {
			return
		}
		binPath = filepath.Join(binDir, "admit")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command(goTool, append(args, ".")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			binError = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

// syncBuffer is a buffer written by one goroutine and read by others.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// banner is what `admit serve` prints when it listens.
type banner struct {
	http, admin, grpc string // host:port
	debug             string // host:port of the profiler
	gateway           bool
	try               string
	text              string
}

var (
	reHTTP  = regexp.MustCompile(`(?m)^admit serve: (HTTP API|gateway to \S+) on https?://(\S+)$`)
	reAdmin = regexp.MustCompile(`(?m)^admit serve: admin .* on https?://(\S+)$`)
	reGRPC  = regexp.MustCompile(`(?m)^admit serve: gRPC .* on (\S+)$`)
	reTry   = regexp.MustCompile(`(?m)^admit serve: try: (.*)$`)
	reDebug = regexp.MustCompile(`(?m)^admit serve: profiler on http://(\S+)/debug/pprof/$`)
)

// parseBanner reads the addresses and the command to try from out.
func parseBanner(out string) (banner, bool) {
	b := banner{text: out}
	m := reTry.FindStringSubmatch(out)
	if m == nil {
		return b, false
	}
	b.try = m[1]
	if m := reHTTP.FindStringSubmatch(out); m != nil {
		b.http, b.gateway = m[2], strings.HasPrefix(m[1], "gateway")
	}
	if m := reAdmin.FindStringSubmatch(out); m != nil {
		b.admin = m[1]
	}
	if m := reGRPC.FindStringSubmatch(out); m != nil {
		b.grpc = m[1]
	}
	if m := reDebug.FindStringSubmatch(out); m != nil {
		b.debug = m[1]
	}
	return b, true
}

// proc is a running `admit` process.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// startAdmit runs the admit binary with args and env (added to a clean
// environment), and waits for its banner.
func startAdmit(t testing.TB, env []string, args ...string) (*proc, banner) {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(admitBinary(t), args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("admit %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.stdout, p.stderr)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, ok := parseBanner(p.stdout.String()); ok {
			return p, b
		}
		select {
		case <-p.done:
			t.Fatalf("admit exited before listening: %v\nstdout:\n%s\nstderr:\n%s", p.err, p.stdout, p.stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner within 30s:\n%s\n%s", p.stdout, p.stderr)
		}
	}
}

// signal sends sig to the process.
func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the process to exit, at most d, and returns its exit
// status.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		p.t.Fatalf("admit did not exit within %v", d)
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	}
	p.t.Fatal(p.err)
	return -1
}

// runAdmit runs the admit binary to completion.
func runAdmit(t testing.TB, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(admitBinary(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// shellWords splits a command line as sh would, for the commands the
// banner prints: words separated by spaces, single-quoted strings.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// curl runs a curl command line of the banner's kind (-s, -i, -H, -d and
// a URL) with net/http, and returns the status and body.
func curl(t testing.TB, line string) (int, http.Header, string) {
	t.Helper()
	w := shellWords(line)
	if len(w) == 0 || w[0] != "curl" {
		t.Fatalf("not a curl command: %q", line)
	}
	method, target := http.MethodGet, ""
	var body io.Reader
	header := http.Header{}
	for i := 1; i < len(w); i++ {
		switch w[i] {
		case "-s", "-i":
		case "-H":
			i++
			k, v, _ := strings.Cut(w[i], ":")
			header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case "-d":
			i++
			method, body = http.MethodPost, strings.NewReader(w[i])
			if header.Get("Content-Type") == "" {
				header.Set("Content-Type", "application/x-www-form-urlencoded") // as curl does
			}
		default:
			if strings.HasPrefix(w[i], "-") {
				t.Fatalf("curl option %q not understood", w[i])
			}
			target = w[i]
		}
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// checkResponse is the part of a /v1/check answer the tests read.
type checkResponse struct {
	Allowed  bool `json:"allowed"`
	Decision struct {
		Rule      string `json:"rule"`
		Remaining int64  `json:"remaining"`
	} `json:"decision"`
}

// check posts a /v1/check of one descriptor of one entry.
func check(t testing.TB, addr, domain, key, value string) checkResponse {
	t.Helper()
	body := fmt.Sprintf(`{"domain":%q,"descriptors":[{"entries":[{"key":%q,"value":%q}]}]}`, domain, key, value)
	resp, err := http.Post("http://"+addr+"/v1/check", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/check: %d %s", resp.StatusCode, b)
	}
	var c checkResponse
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("/v1/check: %v: %s", err, b)
	}
	return c
}

// eventually waits until cond holds, polling, for at most d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// served is `admit serve` running in-process (see runServe).
type served struct {
	banner
	cancel   context.CancelFunc // ends serve, as SIGTERM does
	finished chan struct{}      // closed when run returned
	err      error              // run's error, once finished
	stderr   *syncBuffer
}

// wait waits for run to return, at most d, and returns its error.
func (s *served) wait(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case <-s.finished:
		return s.err
	case <-time.After(d):
		t.Fatalf("serve did not return within %v", d)
		return nil
	}
}

// runServe runs `admit serve` in-process through run, with the
// environment env and the reload channel reload, and waits for its
// banner. The test's end stops it.
func runServe(t *testing.T, env map[string]string, reload <-chan os.Signal, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &syncBuffer{}
	s := &served{cancel: cancel, finished: make(chan struct{}), stderr: &syncBuffer{}}
	getenv := func(k string) string { return env[k] }
	go func() {
		s.err = run(ctx, append([]string{"serve"}, args...), getenv, stdout, s.stderr, reload)
		close(s.finished)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.finished:
		case <-time.After(30 * time.Second):
			t.Error("serve did not return")
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout, s.stderr)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, ok := parseBanner(stdout.String()); ok {
			s.banner = b
			return s
		}
		select {
		case <-s.finished:
			t.Fatalf("serve returned before listening: %v\n%s\n%s", s.err, stdout, s.stderr)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner:\n%s\n%s", stdout, s.stderr)
		}
	}
}

// runCmd runs a command in-process and returns its outputs and exit
// status.
func runCmd(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	code = exitCode(err, &errb)
	return out.String(), errb.String(), code
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
