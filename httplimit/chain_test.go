package httplimit

// The Middleware over compose chains and Deciders: layers, and what is held.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/keyed"
)

// TestChain: layers per client and per route; a refusal by the second
// layer consumes nothing from the first.
func TestChain(t *testing.T) {
	perClient, clk := gcra(t, admit.PerMinute(3), "client")
	perRoute, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk, Name: "route"}, Limit: admit.PerMinute(1)})
	if err != nil {
		t.Fatal(err)
	}
	chain, err := compose.All(compose.Layer{Limiter: perClient}, compose.Layer{Limiter: perRoute})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewChain(chain, []KeyFunc{RemoteIP, Route()}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /a/{id}", m.Handler(&okHandler{}))
	mux.Handle("GET /b", m.Handler(&okHandler{}))
	checkResponse(t, do(mux, "/a/1", ""), 200, with(okType,
		"RateLimit-Policy", `"route";q=1;w=60`,
		"RateLimit", `"route";r=0;t=60`,
		"X-RateLimit-Limit", "1",
		"X-RateLimit-Remaining", "0",
		"X-RateLimit-Reset", "60"), okBody)
	w := do(mux, "/a/2", "")
	if w.Code != 429 || w.Header().Get("RateLimit") != `"route";r=0;t=60` {
		t.Errorf("second /a: %d %q", w.Code, w.Header().Get("RateLimit"))
	}
	// The refused request was refunded from the client layer: 2 left.
	checkResponse(t, do(mux, "/b", ""), 200, with(okType,
		"RateLimit-Policy", `"route";q=1;w=60`,
		"RateLimit", `"route";r=0;t=60`,
		"X-RateLimit-Limit", "1",
		"X-RateLimit-Remaining", "0",
		"X-RateLimit-Reset", "60"), okBody)
	if d, _ := perClient.Allow(context.Background(), admit.Request{Key: "192.0.2.1", N: 0, At: clk.Now()}); d.Remaining != 1 {
		t.Errorf("client layer remaining %d, want 1", d.Remaining)
	}
	// A key too long in any layer.
	m2, err := NewChain(chain, []KeyFunc{RemoteIP, Header("X-Long")}, Config{MaxKeyLength: 9})
	if err != nil {
		t.Fatal(err)
	}
	checkResponse(t, do(m2.Handler(&okHandler{}), "/", "", "X-Long", "1234567890"), 431, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_TOO_LONG"}`+"\n")
	checkResponse(t, do(m2.Handler(&okHandler{}), "/", ""), 400, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_MISSING"}`+"\n")
}

// TestChainManyLayers: more layers than keys kept on the stack.
func TestChainManyLayers(t *testing.T) {
	var layers []compose.Layer
	var keys []KeyFunc
	for i := range maxStackKeys + 2 {
		lim, _ := gcra(t, admit.PerMinute(int64(10+i)), "")
		layers = append(layers, compose.Layer{Limiter: lim})
		keys = append(keys, Const("k"))
	}
	chain, err := compose.All(layers...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewChain(chain, keys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	checkResponse(t, do(m.Handler(&okHandler{}), "/", ""), 200, with(okType,
		"RateLimit-Policy", `"default";q=10;w=60`,
		"RateLimit", `"default";r=9;t=6`,
		"X-RateLimit-Limit", "10",
		"X-RateLimit-Remaining", "9",
		"X-RateLimit-Reset", "6"), okBody)
}

// decider is a Decider over fixed layers, as a policy engine would be.
type decider struct {
	layers []compose.Layer
	err    error
}

func (d *decider) Decide(r *http.Request, h *compose.Held) (admit.Decision, error) {
	if d.err != nil {
		return admit.Decision{}, d.err
	}
	keys := make([]string, len(d.layers))
	for i := range keys {
		keys[i] = r.Header.Get("X-Tenant")
	}
	return compose.Admit(r.Context(), d.layers, keys, 1, h)
}

// TestHeldReleasedOnPanic: a Decider's and a Chain's slots are released
// when the handler panics, and the panic goes on.
func TestHeldReleasedOnPanic(t *testing.T) {
	cl, err := concurrency.New(concurrency.Config{Options: admit.Options{Name: "conc"}, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	layers := []compose.Layer{{Slots: slots{cl}}}
	chain, err := compose.All(layers...)
	if err != nil {
		t.Fatal(err)
	}
	md, err := NewDecider(&decider{layers: layers}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := NewChain(chain, []KeyFunc{Header("X-Tenant")}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var inFlight int64 = -1
	panicky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight, _ = cl.InFlight(context.Background(), "acme")
		panic(boom)
	})
	for name, m := range map[string]*Middleware{"decider": md, "chain": mc} {
		for range 3 { // the slot must come back each time
			inFlight = -1
			func() {
				defer func() {
					if v := recover(); v != boom {
						t.Errorf("%s: recovered %v, want the handler's panic", name, v)
					}
				}()
				do(m.Handler(panicky), "/", "", "X-Tenant", "acme")
			}()
			if inFlight != 1 {
				t.Errorf("%s: in flight during the handler: %d, want 1", name, inFlight)
			}
			if n, _ := cl.InFlight(context.Background(), "acme"); n != 0 {
				t.Errorf("%s: in flight after the panic: %d, want 0", name, n)
			}
		}
	}
	// http.ErrAbortHandler, as a handler aborting a response does.
	abort := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) })
	func() {
		defer func() { _ = recover() }()
		do(md.Handler(abort), "/", "", "X-Tenant", "acme")
	}()
	if n, _ := cl.InFlight(context.Background(), "acme"); n != 0 {
		t.Errorf("in flight after ErrAbortHandler: %d", n)
	}
}

func TestDecider(t *testing.T) {
	cl, err := concurrency.New(concurrency.Config{Options: admit.Options{Name: "conc"}, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := &decider{layers: []compose.Layer{{Slots: slots{cl}}}}
	var ev events
	m, err := NewDecider(d, Config{Observe: ev.observe})
	if err != nil {
		t.Fatal(err)
	}
	var nested *httptest.ResponseRecorder
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The slot is held while the handler runs: a nested request is refused.
		nested = do(m.Handler(&okHandler{}), "/", "", "X-Tenant", "acme")
		w.WriteHeader(204)
	})
	w := do(m.Handler(inner), "/", "", "X-Tenant", "acme")
	if w.Code != 204 || nested.Code != 429 {
		t.Errorf("outer %d, nested %d", w.Code, nested.Code)
	}
	if n, _ := cl.InFlight(context.Background(), "acme"); n != 0 {
		t.Errorf("slot not released")
	}
	if got := ev.outcomes(); got != "admitted refused" {
		t.Errorf("outcomes %q", got)
	}

	// A Decider's ErrNoKey is a request that cannot be keyed.
	d.err = ErrNoClientIP
	checkResponse(t, do(m.Handler(&okHandler{}), "/", ""), 400, map[string]string{"Content-Type": "application/json"}, `{"code":"KEY_MISSING"}`+"\n")
	d.err = errors.New("engine down")
	checkResponse(t, do(m.Handler(&okHandler{}), "/", ""), 200, okType, okBody)
}
