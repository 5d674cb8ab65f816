package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/policy"
)

// gwPolicy is the policy of the gateway tests: limits of per-hour scale,
// on a manual clock, so nothing refills during a test.
const gwPolicy = `
domain: api
rules:
  - name: global
    match:
      - key: generic_key
        value: global
    rate: 3/hour
  - name: per-tenant
    match: tenant
    rate: 2/hour
  - name: login
    match:
      - key: route
        value: /login
    rate: 1/hour
`

// testEngine returns an engine of the YAML policy src on a manual clock.
func testEngine(t testing.TB, src string) *policy.Engine {
	t.Helper()
	p, err := policy.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.NewEngine(p, storesOf(nil, admittest.NewManualClock(admittest.Epoch)))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// quietLogger returns a logger that writes to the test's log.
func quietLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// echoUpstream answers every request with a JSON description of it.
type echoUpstream struct {
	calls   atomic.Int64
	maxBody atomic.Int64 // the longest body read
}

type echoed struct {
	Method string              `json:"method"`
	Path   string              `json:"path"`
	Query  string              `json:"query"`
	Host   string              `json:"host"`
	Header map[string][]string `json:"header"`
	Body   string              `json:"body"`
}

func (u *echoUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	for n := int64(len(body)); ; {
		m := u.maxBody.Load()
		if n <= m || u.maxBody.CompareAndSwap(m, n) {
			break
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Upstream", "yes")
	_ = json.NewEncoder(w).Encode(echoed{r.Method, r.URL.Path, r.URL.RawQuery, r.Host, r.Header, string(body)})
}

// newTestGateway starts an upstream and a gateway in front of it, both
// on httptest servers; it returns the gateway's URL.
func newTestGateway(t *testing.T, upstream http.Handler, e *policy.Engine, opts ...option) (*Gateway, string, *httptest.Server) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL + "/base")
	opts = append([]option{withLogger(quietLogger(t))}, opts...)
	g, err := newGatewayWith(u, e, "api", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	front := httptest.NewServer(g)
	t.Cleanup(front.Close)
	return g, front.URL, up
}

func get(t *testing.T, target string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestGatewayForwards(t *testing.T) {
	up := &echoUpstream{}
	_, front, upSrv := newTestGateway(t, up, testEngine(t, gwPolicy), withDescriptorSpecs("tenant=header:X-Tenant"))
	resp, body := get(t, front+"/items/7?a=1&b=2", "X-Tenant", "acme", "X-Custom", "v1", "X-Custom", "v2",
		"Connection", "X-Hop", "X-Hop", "secret")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Upstream") != "yes" {
		t.Fatalf("status %d, header %v: %s", resp.StatusCode, resp.Header, body)
	}
	var e echoed
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	upHost := strings.TrimPrefix(upSrv.URL, "http://")
	frontHost := strings.TrimPrefix(front, "http://")
	if e.Method != "GET" || e.Path != "/base/items/7" || e.Query != "a=1&b=2" || e.Host != upHost {
		t.Errorf("forwarded %+v", e)
	}
	if got := e.Header["X-Custom"]; len(got) != 2 || got[0] != "v1" || got[1] != "v2" {
		t.Errorf("X-Custom = %q, want both values in order", got)
	}
	if _, ok := e.Header["X-Hop"]; ok {
		t.Errorf("a hop-by-hop field named by Connection was forwarded: %v", e.Header)
	}
	if got := e.Header["X-Forwarded-For"]; len(got) != 1 || got[0] != "127.0.0.1" {
		t.Errorf("X-Forwarded-For = %q", got)
	}
	if got := e.Header["X-Forwarded-Proto"]; len(got) != 1 || got[0] != "http" {
		t.Errorf("X-Forwarded-Proto = %q", got)
	}
	if got := e.Header["X-Forwarded-Host"]; len(got) != 1 || got[0] != frontHost {
		t.Errorf("X-Forwarded-Host = %q, want %q", got, frontHost)
	}
	// Admitted responses carry the decision's fields.
	if resp.Header.Get("Ratelimit-Policy") == "" || resp.Header.Get("X-Ratelimit-Remaining") != "1" {
		t.Errorf("rate-limit fields: %v", resp.Header)
	}
}

func TestGatewayForwardingHeadersTrust(t *testing.T) {
	spoof := []string{
		"X-Forwarded-For", "203.0.113.9", "X-Forwarded-Proto", "https",
		"X-Forwarded-Host", "evil.example", "X-Real-Ip", "203.0.113.9", "Forwarded", "for=203.0.113.9",
	}
	t.Run("untrusted", func(t *testing.T) {
		_, front, _ := newTestGateway(t, &echoUpstream{}, testEngine(t, gwPolicy))
		_, body := get(t, front+"/", spoof...)
		var e echoed
		_ = json.Unmarshal(body, &e)
		h := http.Header(e.Header)
		if h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("X-Forwarded-Proto") != "http" ||
			h.Get("X-Forwarded-Host") == "evil.example" || h.Get("X-Real-Ip") != "" || h.Get("Forwarded") != "" {
			t.Errorf("a client's forwarding headers were trusted: %v", h)
		}
	})
	t.Run("trusted", func(t *testing.T) {
		_, front, _ := newTestGateway(t, &echoUpstream{}, testEngine(t, gwPolicy),
			withTrustedProxies(netip.MustParsePrefix("127.0.0.0/8")))
		_, body := get(t, front+"/", spoof...)
		var e echoed
		_ = json.Unmarshal(body, &e)
		h := http.Header(e.Header)
		if h.Get("X-Forwarded-For") != "203.0.113.9, 127.0.0.1" || h.Get("X-Forwarded-Proto") != "https" ||
			h.Get("X-Forwarded-Host") != "evil.example" || h.Get("X-Real-Ip") != "203.0.113.9" {
			t.Errorf("a trusted proxy's forwarding headers: %v", h)
		}
	})
}

func TestGatewayLimits(t *testing.T) {
	up := &echoUpstream{}
	_, front, _ := newTestGateway(t, up, testEngine(t, gwPolicy))
	var statuses []int
	for range 5 {
		resp, body := get(t, front+"/anything")
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"RATE_LIMIT"`) {
				t.Errorf("refusal: %v %s", resp.Header, body)
			}
			if resp.Header.Get("X-Upstream") != "" {
				t.Error("a refused request reached the upstream")
			}
		}
	}
	want := []int{200, 200, 200, 429, 429}
	for i := range want {
		if statuses[i] != want[i] {
			t.Fatalf("statuses %v, want %v (global: 3/hour)", statuses, want)
		}
	}
	if n := up.calls.Load(); n != 3 {
		t.Errorf("upstream called %d times, want 3", n)
	}
}

func TestGatewayDefaultDescriptors(t *testing.T) {
	// The default descriptors: route=path reaches the login rule, the
	// X-Tenant header the per-tenant rule; each request also counts
	// against global (3/hour).
	up := &echoUpstream{}
	_, front, _ := newTestGateway(t, up, testEngine(t, gwPolicy))
	if r, _ := get(t, front+"/login"); r.StatusCode != 200 {
		t.Fatalf("first login: %d", r.StatusCode)
	}
	r, body := get(t, front+"/login")
	if r.StatusCode != 429 || !strings.Contains(string(body), "login") {
		t.Fatalf("second login: %d %s", r.StatusCode, body)
	}
	if r, _ := get(t, front+"/x", "X-Tenant", "acme"); r.StatusCode != 200 {
		t.Fatalf("tenant: %d", r.StatusCode)
	}
}

func TestGatewayRequiredDescriptor(t *testing.T) {
	up := &echoUpstream{}
	_, front, _ := newTestGateway(t, up, testEngine(t, gwPolicy), withDescriptorSpecs("tenant=!header:X-Tenant"))
	r, body := get(t, front+"/")
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "KEY_MISSING") {
		t.Fatalf("without the required header: %d %s", r.StatusCode, body)
	}
	if r, _ := get(t, front+"/", "X-Tenant", "a"); r.StatusCode != 200 {
		t.Fatalf("with it: %d", r.StatusCode)
	}
	if up.calls.Load() != 1 {
		t.Errorf("upstream calls %d, want 1", up.calls.Load())
	}
}

func TestGatewayConcurrencyHeldUntilResponse(t *testing.T) {
	const src = `
domain: api
rules:
  - name: inflight
    match:
      - key: generic_key
        value: global
    concurrency: 1
`
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "done")
	})
	_, front, _ := newTestGateway(t, up, testEngine(t, src))
	first := make(chan int, 1)
	go func() {
		resp, err := http.Get(front + "/slow")
		if err != nil {
			first <- -1
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-entered
	if r, _ := get(t, front+"/second"); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("second request while the first holds the slot: %d, want 429", r.StatusCode)
	}
	close(release)
	if s := <-first; s != 200 {
		t.Fatalf("first: %d", s)
	}
	if r, _ := get(t, front+"/third"); r.StatusCode != 200 {
		t.Errorf("after the first's response: %d, want 200", r.StatusCode)
	}
}

func TestGatewayStreams(t *testing.T) {
	// The response is forwarded as it comes: the client reads the first
	// part before the upstream writes the second.
	next := make(chan struct{})
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request body is streamed too: read it as it comes.
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Error(err)
		}
		br := bufio.NewReader(r.Body)
		line, _ := br.ReadString('\n')
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "got "+line)
		w.(http.Flusher).Flush()
		<-next
		rest, _ := io.ReadAll(br)
		_, _ = io.WriteString(w, "then "+string(rest))
	})
	_, front, _ := newTestGateway(t, up, testEngine(t, gwPolicy))
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, front+"/stream", pr)
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		done <- resp
	}()
	if _, err := io.WriteString(pw, "part one\n"); err != nil {
		t.Fatal(err)
	}
	resp := <-done
	if resp == nil {
		t.FailNow()
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "got part one\n" {
		t.Fatalf("first part: %q, %v", line, err)
	}
	_, _ = io.WriteString(pw, "part two")
	pw.Close()
	close(next)
	rest, _ := io.ReadAll(br)
	if string(rest) != "then part two" {
		t.Fatalf("second part: %q", rest)
	}
}

func TestGatewayUpstreamFailures(t *testing.T) {
	e := testEngine(t, `
domain: api
rules:
  - name: none
    match: nothing
    unlimited: true
`)
	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nothing listens there now
		u, _ := url.Parse("http://" + addr)
		g, err := newGatewayWith(u, e, "api", withLogger(quietLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusBadGateway || w.Header().Get("Content-Type") != "application/json" ||
			!strings.Contains(w.Body.String(), `"code":"BAD_GATEWAY"`) {
			t.Fatalf("%d %v %s", w.Code, w.Header(), w.Body)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		stop := make(chan struct{})
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		}))
		defer up.Close()
		defer close(stop)
		u, _ := url.Parse(up.URL)
		g, err := newGatewayWith(u, e, "api", withLogger(quietLogger(t)), withUpstreamTimeout(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusGatewayTimeout || !strings.Contains(w.Body.String(), `"UPSTREAM_TIMEOUT"`) {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
}

func TestGatewayBodyCap(t *testing.T) {
	up := &echoUpstream{}
	_, front, _ := newTestGateway(t, up, testEngine(t, gwPolicy), withUpstreamMaxBodyBytes(10))
	// Declared too large: refused before it is decided or sent.
	resp, err := http.Post(front+"/", "text/plain", strings.NewReader(strings.Repeat("x", 11)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "BODY_TOO_LARGE") {
		t.Fatalf("declared: %d %s", resp.StatusCode, body)
	}
	// Streamed (no Content-Length) and too large: cut off at the cap.
	resp, err = http.Post(front+"/", "text/plain", io.MultiReader(strings.NewReader(strings.Repeat("y", 64))))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("streamed: %d %s", resp.StatusCode, body)
	}
	// Within the cap: forwarded.
	resp, body = postBody(t, front+"/", "0123456789")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"body":"0123456789"`) {
		t.Fatalf("within the cap: %d %s", resp.StatusCode, body)
	}
	// The streamed body reached the upstream as far as the cap, and was
	// cut off there.
	if n := up.calls.Load(); n > 2 {
		t.Errorf("upstream calls %d, want at most 2", n)
	}
	if m := up.maxBody.Load(); m > 10 {
		t.Errorf("the upstream read a body of %d bytes, over the cap of 10", m)
	}
}

func postBody(t *testing.T, target, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(target, "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestGatewaySetEngine(t *testing.T) {
	up := &echoUpstream{}
	g, front, _ := newTestGateway(t, up, testEngine(t, gwPolicy))
	for range 3 {
		get(t, front+"/")
	}
	if r, _ := get(t, front+"/"); r.StatusCode != 429 {
		t.Fatalf("before the swap: %d", r.StatusCode)
	}
	if err := g.SetEngine(testEngine(t, "domain: other\nrules: [{name: x, match: k, rate: 1/s}]")); !errors.Is(err, admit.ErrInvalidConfig) {
		t.Fatalf("SetEngine of an engine without the domain: %v", err)
	}
	e2 := testEngine(t, strings.Replace(gwPolicy, "rate: 3/hour", "rate: 100/hour", 1))
	if err := g.SetEngine(e2); err != nil {
		t.Fatal(err)
	}
	if g.decider.Engine() != e2 {
		t.Fatal("Engine is not the new engine")
	}
	if r, _ := get(t, front+"/"); r.StatusCode != 200 {
		t.Fatalf("after the swap: %d", r.StatusCode)
	}
}

func TestNewGatewayErrors(t *testing.T) {
	e := testEngine(t, gwPolicy)
	good, _ := url.Parse("http://127.0.0.1:1")
	for _, tc := range []struct {
		name     string
		upstream string
		domain   string
		e        *policy.Engine
		opts     []option
		want     error
	}{
		{"nil engine", "http://127.0.0.1:1", "api", nil, nil, admit.ErrInvalidConfig},
		{"unknown domain", "http://127.0.0.1:1", "nope", e, nil, admit.ErrInvalidConfig},
		{"ftp upstream", "ftp://h/", "api", e, nil, errInvalidConfig},
		{"no host", "http:///x", "api", e, nil, errInvalidConfig},
		{"credentials", "http://u:p@h/", "api", e, nil, errInvalidConfig},
		{"bad spec", "http://h/", "api", e, []option{withDescriptorSpecs("tenant")}, errInvalidDescriptor},
		{"bad prefix", "http://h/", "api", e, []option{withTrustedProxies(netip.Prefix{})}, errInvalidConfig},
		{"dial timeout", "http://h/", "api", e, []option{withUpstreamDialTimeout(-1)}, errInvalidConfig},
		{"upstream timeout", "http://h/", "api", e, []option{withUpstreamTimeout(-1)}, errInvalidConfig},
		{"body cap", "http://h/", "api", e, []option{withUpstreamMaxBodyBytes(-1)}, errInvalidConfig},
		{"cost", "http://h/", "api", e, []option{withMiddleware(httplimit.Config{Cost: func(*http.Request) (int64, error) { return 1, nil }})}, errInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.upstream)
			if err != nil {
				t.Fatal(err)
			}
			g, err := newGatewayWith(u, tc.e, tc.domain, tc.opts...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if g != nil {
				t.Fatal("a gateway with an error")
			}
		})
	}
	if _, err := newGatewayWith(nil, e, "api"); !errors.Is(err, errInvalidConfig) {
		t.Errorf("nil upstream: %v", err)
	}
	g, err := newGatewayWith(good, e, "api", withDescriptors(policy.HTTPDescriptor{{Key: "generic_key", Value: httplimit.Const("global")}}))
	if err != nil {
		t.Fatal(err)
	}
	if g.domain != "api" {
		t.Errorf("Domain = %q", g.domain)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestGatewayTransportOption(t *testing.T) {
	var seen atomic.Int64
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen.Add(1)
		return &http.Response{StatusCode: 204, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(nil)), Request: r}, nil
	})
	u, _ := url.Parse("http://upstream.invalid")
	g, err := newGatewayWith(u, testEngine(t, gwPolicy), "api", withTransport(rt), withLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != 204 || seen.Load() != 1 {
		t.Fatalf("%d, %d round trips", w.Code, seen.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestGatewayConcurrentSwaps(t *testing.T) {
	// Requests decided while the engine is replaced: no race, no failure.
	up := &echoUpstream{}
	open := strings.Replace(gwPolicy, "rate: 3/hour", "rate: 1000000/hour", 1)
	g, front, _ := newTestGateway(t, up, testEngine(t, open))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_ = g.SetEngine(testEngine(t, open))
		}
	}()
	for range 50 {
		if r, _ := get(t, front+"/x"); r.StatusCode != 200 {
			t.Errorf("status %d", r.StatusCode)
		}
	}
	cancel()
	wg.Wait()
}
