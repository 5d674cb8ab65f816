package compose_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/concurrency"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/quota"
	"github.com/admit-go/admit/redisstore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Every limiter of the module that can give events back is a Refunder.
var (
	_ admit.Refunder     = (*keyed.Limiter)(nil)
	_ admit.Refunder     = (*quota.Quota)(nil)
	_ admit.Refunder     = (*redisstore.Limiter)(nil)
	_ admit.Refunder     = (*redisstore.Quota)(nil)
	_ admit.Refunder     = (*compose.Guard)(nil)
	_ admit.Refunder     = (*keyed.Shared)(nil)
	_ admit.KeyedLimiter = (*compose.Chain)(nil)
)

// oneWay is a limiter that cannot give events back.
type oneWay struct{ calls atomic.Int64 }

func (o *oneWay) Allow(context.Context, admit.Request) (admit.Decision, error) {
	o.calls.Add(1)
	return admit.Decision{Allowed: true, Remaining: 1}, nil
}

func mustKeyed(t testing.TB, cfg keyed.Config) *keyed.Limiter {
	t.Helper()
	lim, err := keyed.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// peek returns the decision a request of 0 gets.
func peek(t testing.TB, lim admit.KeyedLimiter, key string) admit.Decision {
	t.Helper()
	d, err := lim.Allow(ctx, admit.Request{Key: key, N: 0})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestAllOrder: layers are asked in order; a refused request never reaches
// the layers after the one that refused it, and those before it are
// refunded, latest first.
func TestAllOrder(t *testing.T) {
	a, b, c := newProbe("a", admits(5)), newProbe("b", refuses(time.Second)), newProbe("c", admits(5))
	chain := mustAll(t, compose.Layer{Name: "a", Limiter: a}, compose.Layer{Name: "b", Limiter: b}, compose.Layer{Name: "c", Limiter: c})
	d, err := chain.Allow(ctx, admit.Request{Key: "k", N: 2})
	if err != nil || d.Allowed || d.Rule != "b" || d.RetryAfter != time.Second {
		t.Fatalf("decision %+v, %v; want b's refusal", d, err)
	}
	if n, _ := c.counts(); n != 0 {
		t.Errorf("the layer after the refusal was asked %d times", n)
	}
	if _, r := a.counts(); r != 1 || a.held("k") != 0 {
		t.Errorf("a: %d refunds, %d events held", r, a.held("k"))
	}
	if _, r := b.counts(); r != 0 {
		t.Errorf("the refusing layer was refunded %d times", r)
	}
	// The first layer refusing asks nothing else and undoes nothing.
	a.decide = refuses(time.Minute)
	if d, _ := chain.Allow(ctx, admit.Request{Key: "k", N: 1}); d.Rule != "a" || d.Allowed {
		t.Errorf("decision %+v", d)
	}
	if n, _ := b.counts(); n != 1 {
		t.Errorf("b asked %d times", n)
	}
}

// TestAllMostRestrictive: an admitted request gets the decision with the
// fewest Remaining, of equals the longest ResetAfter, with the Rule of its
// layer (its Name, or the limiter's own Rule when the layer has none).
func TestAllMostRestrictive(t *testing.T) {
	dec := func(rem int64, reset time.Duration) func(context.Context, string, int64) (admit.Decision, error) {
		return func(context.Context, string, int64) (admit.Decision, error) {
			return admit.Decision{Allowed: true, Remaining: rem, ResetAfter: reset, Rule: "own"}, nil
		}
	}
	for _, c := range []struct {
		a, b, c  *probe
		names    [3]string
		wantRule string
	}{
		{newProbe("", dec(5, 1)), newProbe("", dec(2, 1)), newProbe("", dec(9, 1)), [3]string{"ip", "tenant", "global"}, "tenant"},
		{newProbe("", dec(2, 1)), newProbe("", dec(2, 3)), newProbe("", dec(2, 2)), [3]string{"ip", "tenant", "global"}, "tenant"},
		{newProbe("", dec(1, 1)), newProbe("", dec(2, 3)), newProbe("", dec(2, 2)), [3]string{"ip", "tenant", "global"}, "ip"},
		{newProbe("", dec(4, 1)), newProbe("", dec(4, 1)), newProbe("", dec(0, 1)), [3]string{"ip", "tenant", ""}, "own"},
	} {
		chain := mustAll(t, compose.Layer{Name: c.names[0], Limiter: c.a}, compose.Layer{Name: c.names[1], Limiter: c.b}, compose.Layer{Name: c.names[2], Limiter: c.c})
		d, err := chain.Allow(ctx, admit.Request{Key: "k", N: 1})
		if err != nil || !d.Allowed || d.Rule != c.wantRule {
			t.Errorf("%v: %+v, %v; want the rule %q", c.names, d, err, c.wantRule)
		}
	}
}

// TestAllUndoesRealLimiters: a chain of a keyed per-IP limit, a Redis
// per-tenant limit, a concurrency cap and a keyed per-route limit. Each
// refusal or failure of a later layer leaves every earlier one with the
// capacity it had.
func TestAllUndoesRealLimiters(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	ip := mustKeyed(t, keyed.Config{Options: admit.Options{Clock: clk}, Limit: admit.PerSecond(10)})
	window := mustKeyed(t, keyed.Config{Options: admit.Options{Clock: clk}, Algorithm: admit.AlgFixedWindow, Limit: admit.PerMinute(100)})
	conc, err := concurrency.New(concurrency.Config{Max: 3})
	if err != nil {
		t.Fatal(err)
	}
	s, err := redisstore.New(redistest.Standalone(t).Client(t), redisstore.Config{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tenant, err := s.Limiter(redisstore.LimiterConfig{Limit: admit.PerHour(50)})
	if err != nil {
		t.Fatal(err)
	}
	rconc, err := s.Concurrency(redisstore.ConcurrencyConfig{Max: 4})
	if err != nil {
		t.Fatal(err)
	}
	last := newProbe("route", refuses(time.Second))
	chain := mustAll(t,
		compose.Layer{Name: "ip", Limiter: ip},
		compose.Layer{Name: "window", Limiter: window},
		compose.Layer{Name: "tenant", Limiter: tenant},
		compose.Layer{Name: "conc", Slots: conc.Slots()},
		compose.Layer{Name: "redis-conc", Slots: rconc.Slots()},
		compose.Layer{Name: "route", Limiter: last},
	)
	keys := []string{"10.0.0.1", "10.0.0.1", "acme", "acme", "acme", "/v1/x"}
	check := func(what string) {
		t.Helper()
		if d := peek(t, ip, "10.0.0.1"); d.Remaining != 10 {
			t.Errorf("%s: ip %+v", what, d)
		}
		if d := peek(t, window, "10.0.0.1"); d.Remaining != 100 {
			t.Errorf("%s: window %+v", what, d)
		}
		if d := peek(t, tenant, "acme"); d.Remaining != 50 {
			t.Errorf("%s: tenant %+v", what, d)
		}
		if n, _ := conc.InFlight(ctx, "acme"); n != 0 {
			t.Errorf("%s: %d slots in flight", what, n)
		}
		if n, err := rconc.InFlight(ctx, "acme"); n != 0 || err != nil {
			t.Errorf("%s: %d Redis slots in flight, %v", what, n, err)
		}
	}
	for _, n := range []int64{1, 3} {
		var h compose.Held
		d, err := chain.AllowKeys(ctx, keys, n, &h)
		if err != nil || d.Allowed || d.Rule != "route" || h.Len() != 0 {
			t.Fatalf("n=%d: %+v, %v, %d held", n, d, err, h.Len())
		}
		check(fmt.Sprintf("refused, n=%d", n))
	}
	errDownstream := errors.New("downstream failed")
	last.decide = fails(errDownstream)
	var h compose.Held
	if d, err := chain.AllowKeys(ctx, keys, 2, &h); !errors.Is(err, errDownstream) || d.Allowed || d.Rule != "route" {
		t.Fatalf("failing layer: %+v, %v", d, err)
	}
	check("failed")
	// Admitted: every layer consumed, the slots held until Release.
	last.decide = admits(7)
	d, err := chain.AllowKeys(ctx, keys, 2, &h)
	if err != nil || !d.Allowed || h.Len() != 2 {
		t.Fatalf("admitted: %+v, %v, %d held", d, err, h.Len())
	}
	if d.Rule != "conc" || d.Remaining != 1 {
		t.Errorf("the most restrictive decision is the local cap's (1 slot left): %+v", d)
	}
	if d := peek(t, tenant, "acme"); d.Remaining != 48 {
		t.Errorf("tenant after an admission: %+v", d)
	}
	h.Release()
	h.Release()
	if n, _ := conc.InFlight(ctx, "acme"); n != 0 {
		t.Errorf("%d slots in flight after Release", n)
	}
	if n, _ := rconc.InFlight(ctx, "acme"); n != 0 {
		t.Errorf("%d Redis slots in flight after Release", n)
	}
}

// TestAllNoOverConsumption: over random requests against three layers of
// every algorithm (keys, costs and instants drawn at random), each layer's
// limiter ends up exactly as a twin that saw only the admitted requests,
// and has consumed exactly the admitted requests' events.
func TestAllNoOverConsumption(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ADMIT_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (set ADMIT_SEED to run it again)", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	limits := [3]admit.Limit{admit.PerSecond(20), {Rate: 5, Period: time.Second, Burst: 8}, admit.PerMinute(30)}
	for _, alg := range admit.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			clk := admittest.NewManualClock(admittest.Epoch)
			var lims, twins [3]*keyed.Limiter
			var counted [3]*probe
			var layers []compose.Layer
			for i := range lims {
				lims[i] = mustKeyed(t, keyed.Config{Options: admit.Options{Clock: clk}, Algorithm: alg, Limit: limits[i]})
				twins[i] = mustKeyed(t, keyed.Config{Algorithm: alg, Limit: limits[i]})
				lim := lims[i]
				counted[i] = newProbe(fmt.Sprint("layer", i), func(ctx context.Context, key string, n int64) (admit.Decision, error) {
					return lim.Allow(ctx, admit.Request{Key: key, N: n})
				})
				layers = append(layers, compose.Layer{Name: counted[i].name, Limiter: &countingRefunder{counted[i], lims[i]}})
			}
			chain := mustAll(t, layers...)
			admitted := map[[3]string]int64{}
			var total int64
			for range 2000 {
				clk.Advance(time.Duration(rng.Int64N(int64(30 * time.Millisecond))))
				keys := []string{fmt.Sprint("ip", rng.IntN(4)), fmt.Sprint("user", rng.IntN(3)), "tenant"}
				n := int64(rng.IntN(4))
				d, err := chain.AllowKeys(ctx, keys, n, nil)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					total += n
					admitted[[3]string(keys)] += n
					for i, tw := range twins {
						if td, _ := tw.Allow(ctx, admit.Request{Key: keys[i], N: n, At: clk.Now()}); !td.Allowed {
							t.Fatalf("layer %d admitted %s n=%d in the chain, but its twin refuses: %+v", i, keys[i], n, td)
						}
					}
				}
				for i := range lims {
					for _, k := range []string{keys[i], "ip0", "user0"} {
						got, _ := lims[i].Allow(ctx, admit.Request{Key: k, N: 0, At: clk.Now()})
						want, _ := twins[i].Allow(ctx, admit.Request{Key: k, N: 0, At: clk.Now()})
						if got != want {
							t.Fatalf("layer %d key %s: %+v; its twin that saw only the admitted requests: %+v", i, k, got, want)
						}
					}
				}
			}
			for i, p := range counted {
				var held int64
				for _, k := range []string{"ip0", "ip1", "ip2", "ip3", "user0", "user1", "user2", "tenant"} {
					held += p.held(k)
				}
				if held != total {
					t.Errorf("layer %d consumed %d events for %d admitted", i, held, total)
				}
			}
			if total == 0 {
				t.Error("nothing admitted: the test proves nothing")
			}
		})
	}
}

// TestHeld: more than four grants, some given back when a later request
// of the same Held is refused (only its own), Release idempotent.
func TestHeld(t *testing.T) {
	var slots [6]*slotsProbe
	var layers []compose.Layer
	for i := range slots {
		slots[i] = &slotsProbe{max: 10}
		layers = append(layers, compose.Layer{Name: fmt.Sprint("s", i), Slots: slots[i]})
	}
	chain := mustAll(t, layers...)
	keys := make([]string, len(layers))
	var h compose.Held
	for range 2 {
		if d, err := chain.AllowKeys(ctx, keys, 3, &h); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	if h.Len() != 12 {
		t.Fatalf("Len = %d, want 12", h.Len())
	}
	// A third request fits nowhere (3+3+3 > 10): refused by the first
	// layer, and the grants of the first two stay.
	if d, _ := chain.AllowKeys(ctx, keys, 5, &h); d.Allowed || d.Rule != "s0" || h.Len() != 12 {
		t.Fatalf("%+v, %d held", d, h.Len())
	}
	// One that the last layer refuses gives back its five other grants.
	slots[5].inflight.Add(4) // 6+4 = 10: full
	if d, _ := chain.AllowKeys(ctx, keys, 1, &h); d.Allowed || d.Rule != "s5" || h.Len() != 12 {
		t.Fatalf("%+v, %d held", d, h.Len())
	}
	for i, s := range slots[:5] {
		if n := s.inflight.Load(); n != 6 {
			t.Errorf("s%d: %d in flight, want the two admitted requests' 6", i, n)
		}
	}
	slots[5].inflight.Add(-4)
	h.Release()
	h.Release()
	if h.Len() != 0 {
		t.Errorf("Len = %d after Release", h.Len())
	}
	for i, s := range slots {
		if n := s.inflight.Load(); n != 0 {
			t.Errorf("s%d: %d in flight after Release", i, n)
		}
	}
	// A released Held is reused.
	if d, err := chain.AllowKeys(ctx, keys, 10, &h); err != nil || !d.Allowed || h.Len() != 6 {
		t.Fatalf("reuse: %+v, %v, %d", d, err, h.Len())
	}
	h.Release()
	var empty compose.Held
	empty.Release()
}

// TestAllPeek: n = 0 asks every layer, consumes nothing and holds nothing.
func TestAllPeek(t *testing.T) {
	lim := mustKeyed(t, keyed.Config{Limit: admit.PerSecond(5)})
	lim.Allow(ctx, admit.Request{Key: "k", N: 2, At: time.Now()})
	conc, _ := concurrency.New(concurrency.Config{Max: 2})
	p := newProbe("p", admits(1))
	chain := mustAll(t, compose.Layer{Name: "rate", Limiter: lim}, compose.Layer{Name: "conc", Slots: conc.Slots()}, compose.Layer{Name: "p", Limiter: p})
	var h compose.Held
	d, err := chain.AllowKeys(ctx, []string{"k", "k", "k"}, 0, &h)
	if err != nil || !d.Allowed || d.Rule != "p" || d.Remaining != 1 || h.Len() != 0 {
		t.Fatalf("%+v, %v, %d held", d, err, h.Len())
	}
	if n, _ := p.counts(); n != 1 {
		t.Errorf("the last layer asked %d times", n)
	}
	// A peek refused by the last layer (as a closed limit refuses nothing,
	// this needs a probe) refunds nothing.
	p.decide = refuses(time.Second)
	if d, _ := chain.AllowKeys(ctx, []string{"k", "k", "k"}, 0, &h); d.Allowed {
		t.Fatalf("%+v", d)
	}
	if d := peek(t, lim, "k"); d.Remaining != 3 && d.Remaining != 4 {
		t.Errorf("a peek changed the rate layer: %+v", d)
	}
}

// TestAllErrors: bad chains and bad calls fail before any layer is asked.
func TestAllErrors(t *testing.T) {
	p := newProbe("p", admits(1))
	lim := mustKeyed(t, keyed.Config{Limit: admit.PerSecond(5)})
	var nilKeyed *keyed.Limiter
	var nilConc *concurrency.Limiter
	noRefundGuard := mustGuard(t, &oneWay{}, compose.GuardConfig{Policy: compose.FailOpen})
	refundGuard := mustGuard(t, lim, compose.GuardConfig{Policy: compose.Breaker(compose.FailClosed)})
	fallbackOneWay := mustGuard(t, lim, compose.GuardConfig{Policy: compose.Fallback(&oneWay{})})
	const (
		noLayers = "compose: no layers"
		oneOf    = "compose: invalid layer: layer 0 (\"\") needs exactly one of Limiter and Slots"
		last     = "compose: invalid layer: layer 0 (\"\") cannot be undone"
	)
	for name, c := range map[string]struct {
		layers []compose.Layer
		text   string // of an error wrapping admit.ErrInvalidConfig; "" for none
	}{
		"no layers":              {nil, noLayers},
		"empty layer":            {[]compose.Layer{{Name: "x"}}, "compose: invalid layer: layer 0 (\"x\") needs exactly one of Limiter and Slots"},
		"both":                   {[]compose.Layer{{Limiter: p, Slots: &slotsProbe{max: 1}}}, oneOf},
		"nil pointer":            {[]compose.Layer{{Limiter: nilKeyed}}, oneOf},
		"nil local slots":        {[]compose.Layer{{Slots: nilConc.Slots()}}, oneOf},
		"one-way first":          {[]compose.Layer{{Limiter: &oneWay{}}, {Limiter: p}}, last},
		"one-way guard first":    {[]compose.Layer{{Limiter: noRefundGuard}, {Limiter: p}}, last},
		"one-way fallback first": {[]compose.Layer{{Limiter: fallbackOneWay}, {Limiter: p}}, last},
		"one-way last":           {[]compose.Layer{{Limiter: p}, {Limiter: &oneWay{}}}, ""},
		"guard first":            {[]compose.Layer{{Limiter: refundGuard}, {Limiter: &oneWay{}}}, ""},
		"nil pointer and slots":  {[]compose.Layer{{Limiter: nilKeyed, Slots: &slotsProbe{max: 1}}}, ""},
	} {
		c0, err := compose.All(c.layers...)
		if c.text == "" && (err != nil || c0 == nil) {
			t.Errorf("%s: All = %v, %v; want a chain", name, c0, err)
		}
		if c.text != "" && (!errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), c.text) || c0 != nil) {
			t.Errorf("%s: All = %v, %v; want admit.ErrInvalidConfig saying %q", name, c0, err, c.text)
		}
	}

	chain := mustAll(t, compose.Layer{Name: "a", Limiter: p}, compose.Layer{Name: "b", Slots: &slotsProbe{max: 5}})
	var h compose.Held
	if _, err := chain.AllowKeys(ctx, []string{"k"}, 1, &h); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "compose: invalid layer: 1 keys for 2 layers") {
		t.Errorf("one key for two layers: %v", err)
	}
	if _, err := chain.AllowKeys(ctx, []string{"k", "k"}, 1, nil); !errors.Is(err, compose.ErrNeedHeld) {
		t.Errorf("slots without a Held: %v", err)
	}
	if _, err := chain.Allow(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, compose.ErrNeedHeld) {
		t.Errorf("Allow on a chain with slots: %v", err)
	}
	if d, err := chain.AllowKeys(ctx, []string{"k", "k"}, -1, &h); !errors.Is(err, admit.ErrInvalidCost) || d.Allowed {
		t.Errorf("n < 0: %+v, %v", d, err)
	}
	if n, _ := p.counts(); n != 0 {
		t.Errorf("a bad call asked a layer %d times", n)
	}

	// Admit checks every layer first.
	good := compose.Layer{Name: "p", Limiter: p}
	const layer1 = "compose: invalid layer: layer 1 (\"\") needs exactly one of Limiter and Slots"
	for name, c := range map[string]struct {
		layers []compose.Layer
		keys   []string
		n      int64
		h      *compose.Held
		want   error
		text   string
	}{
		"no layers":     {nil, nil, 1, nil, admit.ErrInvalidConfig, "compose: no layers"},
		"keys":          {[]compose.Layer{good}, []string{"a", "b"}, 1, nil, admit.ErrInvalidConfig, "compose: invalid layer: 2 requests for 1 layers"},
		"empty layer":   {[]compose.Layer{good, {}}, []string{"a", "b"}, 1, nil, admit.ErrInvalidConfig, layer1},
		"nil pointer":   {[]compose.Layer{good, {Limiter: nilKeyed}}, []string{"a", "b"}, 1, nil, admit.ErrInvalidConfig, layer1},
		"nil slots ptr": {[]compose.Layer{good, {Slots: (*slotsProbe)(nil)}}, []string{"a", "b"}, 1, &h, admit.ErrInvalidConfig, layer1},
		"both":          {[]compose.Layer{good, {Limiter: p, Slots: &slotsProbe{}}}, []string{"a", "b"}, 1, &h, admit.ErrInvalidConfig, layer1},
		"no held":       {[]compose.Layer{good, {Slots: &slotsProbe{max: 1}}}, []string{"a", "b"}, 1, nil, compose.ErrNeedHeld, ""},
		"negative n":    {[]compose.Layer{good}, []string{"a"}, -1, nil, admit.ErrInvalidCost, ""},
	} {
		d, err := compose.Admit(ctx, c.layers, requestsOf(c.keys, c.n), c.h, nil)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.text) || d.Allowed {
			t.Errorf("Admit, %s: %+v, %v; want %v saying %q", name, d, err, c.want, c.text)
		}
	}
	if n, _ := p.counts(); n != 0 {
		t.Errorf("a bad Admit asked a layer %d times", n)
	}
	if d, err := compose.Admit(ctx, []compose.Layer{good}, []admit.Request{{Key: "a", N: 1}}, nil, nil); err != nil || !d.Allowed {
		t.Errorf("Admit: %+v, %v", d, err)
	}
	// The chain's layers are its own copy.
	ls := chain.Layers()
	ls[0].Name = "changed"
	if chain.Layers()[0].Name != "a" {
		t.Error("Layers shares the chain's slice")
	}
}

// TestAllLayerFails: a failing layer's error is returned with a refusal
// naming it, and the layers before it are undone.
func TestAllLayerFails(t *testing.T) {
	errBoom := errors.New("boom")
	a := newProbe("a", admits(3))
	s := &slotsProbe{max: 2}
	b := newProbe("b", fails(errBoom))
	chain := mustAll(t, compose.Layer{Name: "a", Limiter: a}, compose.Layer{Name: "s", Slots: s}, compose.Layer{Name: "b", Limiter: b})
	var h compose.Held
	d, err := chain.AllowKeys(ctx, []string{"k", "k", "k"}, 2, &h)
	if !errors.Is(err, errBoom) || d.Allowed || d.Rule != "b" {
		t.Fatalf("%+v, %v", d, err)
	}
	if a.held("k") != 0 || s.inflight.Load() != 0 || h.Len() != 0 {
		t.Errorf("not undone: a holds %d, %d slots in flight, %d held", a.held("k"), s.inflight.Load(), h.Len())
	}
}

// TestAllCanceledMidChain: a context that ends in the middle of a chain
// still lets the refunds through, to the local and to the Redis layers.
func TestAllCanceledMidChain(t *testing.T) {
	s, err := redisstore.New(redistest.Standalone(t).Client(t), redisstore.Config{Prefix: redistest.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tenant, err := s.Limiter(redisstore.LimiterConfig{Algorithm: admit.AlgSlidingLog, Limit: admit.PerHour(5)})
	if err != nil {
		t.Fatal(err)
	}
	a := newProbe("a", admits(3))
	cancelling := newProbe("cancel", nil)
	chain := mustAll(t, compose.Layer{Name: "a", Limiter: a}, compose.Layer{Name: "tenant", Limiter: tenant}, compose.Layer{Name: "cancel", Limiter: cancelling})
	cctx, cancel := context.WithCancel(context.Background())
	cancelling.decide = func(ctx context.Context, _ string, _ int64) (admit.Decision, error) {
		cancel()
		return admit.Decision{}, ctx.Err()
	}
	d, err := chain.Allow(cctx, admit.Request{Key: "acme", N: 2})
	if !errors.Is(err, context.Canceled) || d.Allowed || d.Rule != "cancel" {
		t.Fatalf("%+v, %v", d, err)
	}
	if a.held("acme") != 0 || !a.refundOK {
		t.Errorf("a: %d held, refunded under a live context: %v", a.held("acme"), a.refundOK)
	}
	if d := peek(t, tenant, "acme"); d.Remaining != 5 {
		t.Errorf("the Redis layer was not refunded: %+v", d)
	}
}

// TestAllConcurrent: goroutines through a chain of two keyed limits and a
// concurrency cap (run it with -race): what the chain admitted is what
// each layer consumed, and every slot comes back.
func TestAllConcurrent(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch) // one instant: refunds are exact
	wide := mustKeyed(t, keyed.Config{Options: admit.Options{Clock: clk}, Limit: admit.Limit{Rate: 1000, Period: time.Hour, Burst: 1000}})
	narrow := mustKeyed(t, keyed.Config{Options: admit.Options{Clock: clk}, Algorithm: admit.AlgSlidingWindow, Limit: admit.Limit{Rate: 150, Period: time.Hour, Burst: 150}})
	conc, _ := concurrency.New(concurrency.Config{Max: 6})
	chain := mustAll(t,
		compose.Layer{Name: "wide", Limiter: wide},
		compose.Layer{Name: "conc", Slots: conc.Slots()},
		compose.Layer{Name: "narrow", Limiter: narrow},
	)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 60 {
				n := int64(1 + i%3)
				var h compose.Held
				d, err := chain.AllowKeys(ctx, []string{"k", "k", "k"}, n, &h)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(n)
				}
				h.Release()
			}
		})
	}
	wg.Wait()
	got := admitted.Load()
	if got == 0 || got > 150 {
		t.Fatalf("admitted %d events", got)
	}
	if d := peek(t, wide, "k"); d.Remaining != 1000-got {
		t.Errorf("wide: %+v, want %d remaining", d, 1000-got)
	}
	if d := peek(t, narrow, "k"); d.Remaining != 150-got {
		t.Errorf("narrow: %+v, want %d remaining", d, 150-got)
	}
	if n, _ := conc.InFlight(ctx, "k"); n != 0 {
		t.Errorf("%d slots in flight", n)
	}
}
