package httplimit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

func constKey(*http.Request) (string, error) { return "k", nil }

// TestMiddlewareDelay: with MaxDelay, a request beyond the burst whose
// slot comes in time waits for it (a real wait of 10ms) and is served;
// one that would wait longer is refused.
func TestMiddlewareDelay(t *testing.T) {
	lim, _ := gcra(t, admit.PerSecond(100).WithBurst(1), "ip") // T = 10ms; the clock stands still
	var ev events
	h := &okHandler{}
	m := mustNew(t, lim, constKey, Config{MaxDelay: 15 * time.Millisecond, Observe: ev.observe})
	srv := m.Handler(h)
	if w := do(srv, "/", ""); w.Code != http.StatusOK {
		t.Fatalf("first: %d", w.Code)
	}
	start := time.Now()
	if w := do(srv, "/", ""); w.Code != http.StatusOK || h.calls.Load() != 2 {
		t.Fatalf("second: %d, %d calls", w.Code, h.calls.Load())
	}
	if waited := time.Since(start); waited < 10*time.Millisecond {
		t.Errorf("the second was served after %v, before its slot (10ms)", waited)
	}
	if d := ev.list[1].Decision; d.Delay != 10*time.Millisecond {
		t.Errorf("second's decision %+v, want a delay of 10ms", d)
	}
	if w := do(srv, "/", ""); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("third (would wait 20ms): %d %v", w.Code, w.Header())
	}
}

// TestMiddlewareDelayGone: a request whose client goes away while it
// waits is not served, and its slot is given back.
func TestMiddlewareDelayGone(t *testing.T) {
	lim, _ := gcra(t, admit.PerMinute(1), "ip") // T = 1m
	h := &okHandler{}
	srv := mustNew(t, lim, constKey, Config{MaxDelay: 2 * time.Minute}).Handler(h)
	do(srv, "/", "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	}()
	resetAfter := func() time.Duration {
		d, _ := lim.Allow(context.Background(), admit.Request{Key: "k"})
		return d.ResetAfter
	}
	for deadline := time.Now().Add(5 * time.Second); resetAfter() != 2*time.Minute; {
		if time.Now().After(deadline) {
			t.Fatal("the second request never took its slot")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if h.calls.Load() != 1 {
		t.Errorf("%d calls: the request that left was served", h.calls.Load())
	}
	if got := resetAfter(); got != time.Minute {
		t.Errorf("ResetAfter %v after it left, want 1m: its slot given back", got)
	}
}

func TestMiddlewareDelayConfig(t *testing.T) {
	lim, _ := gcra(t, admit.PerSecond(1), "ip")
	if _, err := New(lim, constKey, Config{MaxDelay: -time.Second}); !errors.Is(err, admit.ErrInvalidConfig) {
		t.Errorf("negative: %v", err)
	}
	c, err := compose.All(compose.Layer{Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewChain(c, []KeyFunc{constKey}, Config{MaxDelay: time.Second}); !errors.Is(err, admit.ErrInvalidConfig) {
		t.Errorf("chain: %v", err)
	}
}
