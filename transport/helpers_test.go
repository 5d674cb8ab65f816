package transport

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit/admittest"
)

// step is one scripted answer of an upstream.
type step struct {
	code   int
	header map[string]string
	body   string
}

// upstream is an httptest server answering from a script of steps, then
// 200; it records the bodies it was sent.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	steps  []step
	bodies []string
	hits   atomic.Int64
}

func newUpstream(t *testing.T, steps ...step) *upstream {
	t.Helper()
	u := &upstream{steps: steps}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, string(b))
		s := step{code: http.StatusOK}
		if len(u.steps) > 0 {
			s, u.steps = u.steps[0], u.steps[1:]
		}
		u.mu.Unlock()
		for k, v := range s.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(s.code)
		_, _ = io.WriteString(w, s.body)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) sent() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.bodies...)
}

// host returns the host key of u's URL.
func (u *upstream) host(t *testing.T) string {
	pu, err := url.Parse(u.URL)
	if err != nil {
		t.Fatal(err)
	}
	return hostKey(pu)
}

// newTransport returns a Transport on clk over a base that records the
// bodies of responses it returns, with jitter off (backoffs at half).
func newTransport(t *testing.T, clk *admittest.ManualClock, cfg Config) (*Transport, *trackingRT) {
	t.Helper()
	base := &trackingRT{base: http.DefaultTransport}
	cfg.Clock = clk
	tr, err := New(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr.random = func() float64 { return 0 }
	t.Cleanup(func() { http.DefaultTransport.(*http.Transport).CloseIdleConnections() })
	return tr, base
}

// trackingRT wraps a RoundTripper and tracks the response bodies it hands
// out: how many were closed, and how much was read of them.
type trackingRT struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []*trackedBody
}

type trackedBody struct {
	io.ReadCloser
	read   atomic.Int64
	closed atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

func (b *trackedBody) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}

func (rt *trackingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	tb := &trackedBody{ReadCloser: resp.Body}
	resp.Body = tb
	rt.mu.Lock()
	rt.bodies = append(rt.bodies, tb)
	rt.mu.Unlock()
	return resp, nil
}

func (rt *trackingRT) responses() []*trackedBody {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]*trackedBody(nil), rt.bodies...)
}

// get sends a GET to u through tr and returns the status code (or -1) and
// the error.
func get(ctx context.Context, tr http.RoundTripper, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return -1, err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return -1, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// async runs f in a goroutine and returns a channel with its result.
func async[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

// blockUntilTimers waits until n timers wait on clk.
func blockUntilTimers(t *testing.T, clk *admittest.ManualClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilTimers(ctx, n); err != nil {
		t.Fatalf("%d timers expected: %v", n, err)
	}
}

// notYet fails if ch has a value.
func notYet[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s returned too early: %v", what, v)
	default:
	}
}

// closeRecorder is a request body that records whether it was closed.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error {
	c.closed.Store(true)
	return nil
}

func newBody(s string) *closeRecorder { return &closeRecorder{Reader: strings.NewReader(s)} }
