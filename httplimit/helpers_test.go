package httplimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/keyed"
)

// okHandler answers 200 "ok" and counts its calls.
type okHandler struct{ calls atomic.Int64 }

func (h *okHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.calls.Add(1)
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok"))
}

// gcra returns a GCRA keyed limiter named name on a manual clock.
func gcra(t testing.TB, l admit.Limit, name string) (*keyed.Limiter, *admittest.ManualClock) {
	t.Helper()
	clk := admittest.NewManualClock(admittest.Epoch)
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk, Name: name}, Limit: l})
	if err != nil {
		t.Fatal(err)
	}
	return lim, clk
}

func mustNew(t testing.TB, lim admit.KeyedLimiter, key KeyFunc, cfg Config) *Middleware {
	t.Helper()
	m, err := New(lim, key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// do sends a GET of target from remote through h.
func do(h http.Handler, target, remote string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	if remote != "" {
		r.RemoteAddr = remote
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// checkResponse checks status, every header field (exactly: no field more
// or less) and body.
func checkResponse(t *testing.T, w *httptest.ResponseRecorder, status int, header map[string]string, body string) {
	t.Helper()
	if w.Code != status {
		t.Errorf("status = %d, want %d", w.Code, status)
	}
	got := w.Result().Header
	for k, v := range header {
		ck := http.CanonicalHeaderKey(k)
		if gv := got[ck]; len(gv) != 1 || gv[0] != v {
			t.Errorf("%s = %q, want %q", k, gv, v)
		}
	}
	for k, v := range got {
		found := false
		for wk := range header {
			if http.CanonicalHeaderKey(wk) == k {
				found = true
			}
		}
		if !found {
			t.Errorf("unexpected field %s: %q", k, v)
		}
	}
	if w.Body.String() != body {
		t.Errorf("body = %q, want %q", w.Body.String(), body)
	}
}

// stub is a limiter that returns a fixed decision and error.
type stub struct {
	d     admit.Decision
	err   error
	calls atomic.Int64
	keys  []string
	costs []int64
}

func (s *stub) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	key, n := req.Key, req.N
	s.calls.Add(1)
	s.keys = append(s.keys, key)
	s.costs = append(s.costs, n)
	return s.d, s.err
}

// slots adapts a concurrency.Limiter to admit.Slots.
type slots struct{ l *concurrency.Limiter }

type permit struct{ p concurrency.Permit }

func (p permit) Release() { p.p.Release() }

func (s slots) TryAcquire(ctx context.Context, req admit.Request) (admit.Releaser, admit.Decision, error) {
	key, n := req.Key, req.N
	p, d, err := s.l.TryAcquire(ctx, admit.Request{Key: key, N: n})
	if err != nil || !d.Allowed {
		return nil, d, err
	}
	return permit{p}, d, nil
}

// events records observer events.
type events struct{ list []Event }

func (e *events) observe(ev Event) {
	ev.Request = nil
	e.list = append(e.list, ev)
}

func (e *events) outcomes() string {
	var s []string
	for _, ev := range e.list {
		o := ev.Outcome.String()
		if ev.Shadow {
			o += "(shadow)"
		}
		s = append(s, o)
	}
	return strings.Join(s, " ")
}

const okBody = "ok"

var okType = map[string]string{"Content-Type": "text/plain"}

func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
