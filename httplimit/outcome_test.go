package httplimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// outcomeSlots is a admit.Slots whose grants are Finishers (when fin)
// or plain Releasers, recording what each grant was told.
type outcomeSlots struct {
	fin bool
	mu  sync.Mutex
	log []string
}

func (s *outcomeSlots) add(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, e)
}

func (s *outcomeSlots) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.log
	s.log = nil
	return l
}

type plainRel struct{ s *outcomeSlots }

func (r plainRel) Release() { r.s.add("release") }

type finRel struct{ plainRel }

func (r finRel) Finish(failed bool) { r.s.add(fmt.Sprint("finish ", failed)) }

func (s *outcomeSlots) TryAcquire(_ context.Context, req admit.Request) (admit.Releaser, admit.Decision, error) {
	d := admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 10, Burst: 10}, Remaining: 9, Kind: admit.KindConcurrency}
	if s.fin {
		return finRel{plainRel{s}}, d, nil
	}
	return plainRel{s}, d, nil
}

func outcomeChain(t testing.TB, s *outcomeSlots, cfg Config) *Middleware {
	t.Helper()
	chain, err := compose.All(compose.Layer{Name: "slots", Slots: s})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewChain(chain, []KeyFunc{Const("k")}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOutcome: with a grant that learns from outcomes, the middleware
// finishes the Held with failed = panic, 429 or 5xx (the first final
// status written; 200 when nothing is written); with none, it releases
// it and the handler gets the original ResponseWriter.
func TestOutcome(t *testing.T) {
	s := &outcomeSlots{fin: true}
	m := outcomeChain(t, s, Config{})
	for _, tc := range []struct {
		name   string
		h      http.HandlerFunc
		failed bool
	}{
		{"nothing written", func(w http.ResponseWriter, r *http.Request) {}, false},
		{"body", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }, false},
		{"404", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }, false},
		{"429", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }, true},
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }, true},
		{"503", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }, true},
		{"early hints then 503", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(103); w.WriteHeader(503) }, true},
		{"200 then 500", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200); w.WriteHeader(500) }, false},
		{"body then 500", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x"); w.WriteHeader(500) }, false},
		{"flush", func(w http.ResponseWriter, r *http.Request) { w.(http.Flusher).Flush(); w.WriteHeader(500) }, false},
		{"read from", func(w http.ResponseWriter, r *http.Request) {
			w.(io.ReaderFrom).ReadFrom(strings.NewReader("body"))
		}, false},
	} {
		rec := do(m.Handler(tc.h), "/", "")
		want := fmt.Sprint("finish ", tc.failed)
		if got := s.take(); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %q, want %q", tc.name, got, want)
		}
		if tc.name == "read from" && rec.Body.String() != "body" {
			t.Errorf("read from: body %q", rec.Body.String())
		}
	}
	// A panic is a failure, and goes on.
	boom := errors.New("boom")
	func() {
		defer func() {
			if v := recover(); v != boom {
				t.Errorf("recovered %v", v)
			}
		}()
		do(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(boom) })), "/", "")
	}()
	if got := s.take(); len(got) != 1 || got[0] != "finish true" {
		t.Errorf("panic: %q", got)
	}
	// Config.Failure decides.
	m = outcomeChain(t, s, Config{Failure: func(status int) bool { return status == 404 }})
	do(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) })), "/", "")
	do(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })), "/", "")
	if got := s.take(); fmt.Sprint(got) != "[finish true finish false]" {
		t.Errorf("Config.Failure: %q", got)
	}
	// No Finisher: released, and the handler has the original writer.
	plain := &outcomeSlots{}
	m = outcomeChain(t, plain, Config{Failure: nil})
	var wrapped bool
	do(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, wrapped = w.(*statusWriter)
		w.WriteHeader(503)
	})), "/", "")
	if got := plain.take(); fmt.Sprint(got) != "[release]" || wrapped {
		t.Errorf("without a Finisher: %q, wrapped %v", got, wrapped)
	}
	if defaultFailure(200) || defaultFailure(404) || !defaultFailure(429) || !defaultFailure(502) {
		t.Error("defaultFailure")
	}
}

// TestOutcomeWriter: the handler's wrapped ResponseWriter keeps what the
// original offers: Flush, Hijack, and through Unwrap the rest of
// http.ResponseController (deadlines), on a real server.
func TestOutcomeWriter(t *testing.T) {
	s := &outcomeSlots{fin: true}
	m := outcomeChain(t, s, Config{})
	mux := http.NewServeMux()
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			http.Error(w, "deadline: "+err.Error(), 500)
			return
		}
		io.WriteString(w, "one,")
		if err := rc.Flush(); err != nil {
			http.Error(w, "flush: "+err.Error(), 500)
			return
		}
		io.WriteString(w, "two")
	})
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			http.Error(w, "hijack: "+err.Error(), 500)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		buf.Flush()
	})
	// done tells when the middleware has returned (a hijacked connection
	// is not one the server waits for).
	done := make(chan struct{}, 2)
	limited := m.Handler(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limited.ServeHTTP(w, r)
		done <- struct{}{}
	}))
	defer srv.Close()
	for path, want := range map[string]string{"/stream": "one,two", "/hijack": "hijacked"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != want {
			t.Errorf("%s: %d %q", path, resp.StatusCode, body)
		}
	}
	// The outcomes come in when the handlers have returned.
	<-done
	<-done
	if got := s.take(); fmt.Sprint(got) != "[finish false finish false]" {
		t.Errorf("outcomes %q", got)
	}

	// A writer without Flush or Hijack: Flush does nothing, Hijack fails.
	sw := &statusWriter{ResponseWriter: bareWriter{httptest.NewRecorder()}}
	sw.Flush()
	if _, _, err := sw.Hijack(); !errors.Is(err, http.ErrNotSupported) {
		t.Errorf("Hijack of a writer without it: %v", err)
	}
	if sw.Status() != 200 || sw.Unwrap() == nil {
		t.Errorf("status %d", sw.Status())
	}
	var _ interface {
		http.Flusher
		http.Hijacker
		io.ReaderFrom
	} = sw
}

// bareWriter is a ResponseWriter with nothing but its three methods.
type bareWriter struct{ w http.ResponseWriter }

func (b bareWriter) Header() http.Header         { return b.w.Header() }
func (b bareWriter) Write(p []byte) (int, error) { return b.w.Write(p) }
func (b bareWriter) WriteHeader(code int)        { b.w.WriteHeader(code) }

// BenchmarkAdmittedOutcome is BenchmarkAdmittedChain with a concurrency
// cap whose grants learn from the outcome: the status is captured (a
// statusWriter from a pool) and the Held finished.
func BenchmarkAdmittedOutcome(b *testing.B) {
	cl := &benchFinSlots{benchSlots: newBenchSlots(1 << 20)}
	cl.fin = benchFinish{cl.benchSlots}
	chain, err := compose.All(compose.Layer{Limiter: benchLimiter(b, generous)}, compose.Layer{Slots: cl})
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewChain(chain, []KeyFunc{RemoteIP, Const("")}, Config{})
	if err != nil {
		b.Fatal(err)
	}
	runBench(b, m.Handler(bareHandler), benchRequest(), 200)
}

// benchFinSlots is benchSlots whose grants are Finishers.
type benchFinSlots struct {
	*benchSlots
	fin benchFinish
}

type benchFinish struct{ s *benchSlots }

func (f benchFinish) Release()           { f.s.used-- }
func (f benchFinish) Finish(failed bool) { f.s.used-- }

func (s *benchFinSlots) TryAcquire(ctx context.Context, req admit.Request) (admit.Releaser, admit.Decision, error) {
	key, n := req.Key, req.N
	rel, d, err := s.benchSlots.TryAcquire(ctx, admit.Request{Key: key, N: n})
	if rel == nil {
		return nil, d, err
	}
	return s.fin, d, err
}
