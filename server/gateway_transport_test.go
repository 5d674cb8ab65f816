package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gwOpenPolicy admits every request of the transport tests.
const gwOpenPolicy = `
domain: api
rules:
  - name: none
    match: nothing
    unlimited: true
`

// countingUpstream starts an httptest upstream serving h and counting
// the connections it accepts.
func countingUpstream(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(h)
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	return up, &conns
}

// gatewayTo starts a gateway to upstream on an httptest server and
// returns its URL.
func gatewayTo(t *testing.T, upstream string, opts ...option) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	g, err := newGatewayWith(u, testEngine(t, gwOpenPolicy), "api", append([]option{withLogger(quietLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	front := httptest.NewServer(g)
	t.Cleanup(front.Close)
	return front.URL
}

// TestGatewayReusesUpstreamConnections sends 200 requests from 10
// clients at once, each on a connection of its own, and counts the
// connections the upstream accepted: a gateway that keeps its upstream
// connections open needs no more than the requests it has in flight.
func TestGatewayReusesUpstreamConnections(t *testing.T) {
	const clients, perClient = 10, 20
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			up, conns := countingUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = io.WriteString(w, "ok")
			}))
			front := gatewayTo(t, up.URL)
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
					defer c.CloseIdleConnections()
					for range perClient {
						var body io.Reader
						if method == http.MethodPost {
							body = strings.NewReader(`{"n":1}`)
						}
						req, _ := http.NewRequest(method, front+"/", body)
						resp, err := c.Do(req)
						if err != nil {
							t.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							t.Errorf("status %d", resp.StatusCode)
						}
					}
				})
			}
			wg.Wait()
			// A GET's connection goes back to the pool before its answer
			// is sent on, so the next request always finds it. A POST
			// goes through http.Transport, which puts a connection back
			// from a goroutine of its own, and may dial a few more.
			limit := int64(clients)
			if method != http.MethodGet {
				limit = 2 * clients
			}
			if n := conns.Load(); n > limit {
				t.Errorf("the upstream accepted %d connections for %d requests from %d clients, want at most %d",
					n, clients*perClient, clients, limit)
			}
		})
	}
}

// rawUpstream serves each accepted connection with serve, and counts
// the connections.
func rawUpstream(t *testing.T, serve func(n int64, c net.Conn)) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n := conns.Add(1)
			wg.Go(func() {
				defer c.Close()
				serve(n, c)
			})
		}
	})
	return "http://" + l.Addr().String(), &conns
}

// readRequests reads requests from c, calling answer for each until it
// returns false or c ends.
func readRequests(c net.Conn, answer func(i int, r *http.Request) bool) {
	br := bufio.NewReader(c)
	for i := 0; ; i++ {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if !answer(i, r) {
			return
		}
	}
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

func getOK(t *testing.T, c *http.Client, target string) {
	t.Helper()
	resp, err := c.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

func TestGatewayUpstreamMisbehaves(t *testing.T) {
	// Upstreams that leave a kept connection in a state the next request
	// must not inherit: three GETs in a row each get their answer, each
	// on a new connection.
	for _, tc := range []struct {
		name   string
		answer func(c net.Conn, i int) bool // answers the i-th request on c; false: close c
	}{
		// One answer per connection, kept open as far as HTTP says, then
		// closed: the next request must not go into the closed one.
		{"closes idle connection", func(c net.Conn, _ int) bool {
			_, _ = io.WriteString(c, okAnswer)
			return false
		}},
		// The second request on a connection is dropped without a word,
		// as by a server closing an idle connection just as the request
		// arrives: a GET that a reused connection fails before any answer
		// is sent again on a new one.
		{"drops request on reused connection", func(c net.Conn, i int) bool {
			if i > 0 {
				return false
			}
			_, _ = io.WriteString(c, okAnswer)
			return true
		}},
		// An answer followed by bytes nobody asked for: the next request
		// would get them as its answer.
		{"writes unasked", func(c net.Conn, _ int) bool {
			_, _ = io.WriteString(c, okAnswer+"HTTP/1.1 418 I'm a teapot\r\nContent-Length: 0\r\n\r\n")
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, conns := rawUpstream(t, func(_ int64, c net.Conn) {
				readRequests(c, func(i int, _ *http.Request) bool { return tc.answer(c, i) })
			})
			front := gatewayTo(t, up)
			for range 3 {
				getOK(t, http.DefaultClient, front+"/")
			}
			if n := conns.Load(); n != 3 {
				t.Errorf("%d connections, want 3", n)
			}
		})
	}
}

func TestGatewayUpstreamBodyKinds(t *testing.T) {
	// Answers without a body (HEAD, 204, 304), chunked with a trailer,
	// and an HTTP/1.0-style close: each forwarded whole, and the
	// connection reused after all but the last.
	up, conns := countingUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
		case "/notmodified":
			w.WriteHeader(http.StatusNotModified)
		case "/chunked":
			w.Header().Set("Trailer", "X-Sum")
			_, _ = io.WriteString(w, "part one, ")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "part two")
			w.Header().Set("X-Sum", "42")
		case "/close":
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	front := gatewayTo(t, up.URL)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer c.CloseIdleConnections()
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
		trailer      string
	}{
		{http.MethodHead, "/", 200, "", ""},
		{http.MethodGet, "/nocontent", 204, "", ""},
		{http.MethodGet, "/notmodified", 304, "", ""},
		{http.MethodGet, "/chunked", 200, "part one, part two", "42"},
		{http.MethodOptions, "/", 200, "ok", ""},
		{http.MethodGet, "/close", 200, "bye", ""},
	} {
		req, _ := http.NewRequest(tc.method, front+tc.path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tc.status || string(body) != tc.body || resp.Trailer.Get("X-Sum") != tc.trailer {
			t.Errorf("%s %s: %d %q %v, trailer %v", tc.method, tc.path, resp.StatusCode, body, err, resp.Trailer)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d upstream connections, want 1", n)
	}
	getOK(t, c, front+"/")
	if n := conns.Load(); n != 2 {
		t.Errorf("%d upstream connections after the upstream closed one, want 2", n)
	}
}

func TestGatewayStreamsGET(t *testing.T) {
	// A GET's answer is forwarded as it comes too (server-sent events).
	next := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-next
		_, _ = io.WriteString(w, "data: two\n\n")
	}))
	defer up.Close()
	defer close(next) // before up.Close, if the test fails early
	resp, err := http.Get(gatewayTo(t, up.URL) + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first event: %q, %v", line, err)
	}
	next <- struct{}{}
	rest, _ := io.ReadAll(br)
	if string(rest) != "\ndata: two\n\n" {
		t.Fatalf("second event: %q", rest)
	}
}

func TestGatewayForwardsEarlyHints(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		_, _ = io.WriteString(w, "ok")
	}))
	defer up.Close()
	var hints []int
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		if h.Get("Link") == "" {
			t.Errorf("%d without its Link field", code)
		}
		hints = append(hints, code)
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, gatewayTo(t, up.URL)+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" || len(hints) != 1 || hints[0] != http.StatusEarlyHints {
		t.Fatalf("%d %q, 1xx: %v", resp.StatusCode, body, hints)
	}
}

func TestGatewayClientGoesAway(t *testing.T) {
	// A client that gives up while the upstream has not answered: the
	// gateway drops the upstream's connection, whose request then ends.
	arrived, ended := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
		close(ended)
	}))
	defer up.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gatewayTo(t, up.URL)+"/", nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client: %v", err)
	}
	<-ended
}

func TestH1PoolClosesExpiredConnections(t *testing.T) {
	up, conns := countingUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	u, _ := url.Parse(up.URL)
	tr := newUpstreamTransport(u, time.Second, time.Second)
	defer tr.CloseIdleConnections()
	p := tr.lean
	if p == nil {
		t.Skip("no peeking on this platform: every request goes through http.Transport")
	}
	// Two requests at once: two connections, both idle afterwards.
	var resps []*http.Response
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, up.URL+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resps = append(resps, resp)
	}
	for _, resp := range resps {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	p.mu.Lock()
	if len(p.idle) != 2 || !p.armed {
		t.Fatalf("%d idle, sweep armed %v", len(p.idle), p.armed)
	}
	// Make the older one expired, and sweep.
	old := p.idle[0]
	old.idleSince = old.idleSince.Add(-upstreamIdleTimeout)
	p.mu.Unlock()
	p.closeExpired()
	p.mu.Lock()
	n := len(p.idle)
	armed := p.armed
	p.mu.Unlock()
	if n != 1 || !armed {
		t.Fatalf("after the sweep: %d idle, sweep armed %v", n, armed)
	}
	if _, err := old.nc.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the expired connection: %v", err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections", n)
	}
}

func TestGatewayForwardsAcceptEncodingAsIs(t *testing.T) {
	// The upstream sees the client's Accept-Encoding, not one the gateway
	// adds for itself (and then has to undo by decompressing the answer):
	// none for a client that accepts no compression, and a gzip answer
	// goes to a client that asked for it as it came.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Saw", strings.Join(r.Header.Values("Accept-Encoding"), ","))
		if r.Header.Get("Accept-Encoding") == "gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = io.WriteString(w, "pretend this is gzip")
			return
		}
		_, _ = io.WriteString(w, "plain")
	}))
	defer up.Close()
	front := gatewayTo(t, up.URL)
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer c.CloseIdleConnections()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		for _, ae := range []string{"", "gzip"} {
			req, _ := http.NewRequest(method, front+"/", strings.NewReader("x"))
			if method == http.MethodGet {
				req.Body, req.ContentLength = nil, 0
			}
			if ae != "" {
				req.Header.Set("Accept-Encoding", ae)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "plain"
			if ae == "gzip" {
				want = "pretend this is gzip"
			}
			if saw := resp.Header.Get("X-Saw"); saw != ae || string(body) != want || resp.Header.Get("Content-Encoding") != ae {
				t.Errorf("%s, Accept-Encoding %q: the upstream saw %q; answer %q, Content-Encoding %q",
					method, ae, saw, body, resp.Header.Get("Content-Encoding"))
			}
		}
	}
}
