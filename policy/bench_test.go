package policy

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/admit-go/admit/compose"
)

const benchPolicy = `
tier_tables:
  plans:
    default: free
    tiers:
      free: {rate: 1000000000/s, concurrency: 1000000}
      pro:  {rate: 1000000000/s}
    assign: {acme: pro}
domain: api
rules:
  - {name: per-ip, match: remote_address, rate: 1000000000/s}
  - {name: per-user, match: user, rate: 1000000000/s}
  - {name: per-tenant, match: tenant, tiers: plans}
  - {name: login, match: [{key: route, value: /login}], rate: 1000000000/s}
  - {name: global, match: [{key: generic_key, value: global}], concurrency: 1000000000}
`

func benchEngine(b *testing.B) *Engine {
	p, err := parseAdmit("bench.yaml", []byte(benchPolicy))
	if err != nil {
		b.Fatal(err)
	}
	e, err := newEngine(p, Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// BenchmarkCheck measures checks of rules kept in memory: three rate
// layers; the reference design's five layers (with a tier table and two
// concurrency caps); a request refused by its first layer.
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	b.Run("rates", func(b *testing.B) {
		e := benchEngine(b)
		req := request("api", desc("remote_address", "203.0.113.7"), desc("user", "bob"), desc("tenant", "acme"))
		var res Result
		b.ReportAllocs()
		for b.Loop() {
			if err := e.Check(ctx, req, nil, &res); err != nil || !res.Decision.Allowed {
				b.Fatal(err, res.Decision)
			}
		}
	})
	b.Run("example", func(b *testing.B) {
		e := benchEngine(b)
		req := request("api", desc("remote_address", "203.0.113.7"), desc("user", "bob"), desc("tenant", "newco"),
			desc("route", "/login"), desc("generic_key", "global"))
		var res Result
		var h compose.Held
		b.ReportAllocs()
		for b.Loop() {
			if err := e.Check(ctx, req, &h, &res); err != nil || !res.Decision.Allowed {
				b.Fatal(err, res.Decision)
			}
			h.Release()
		}
	})
	b.Run("refused", func(b *testing.B) {
		p, err := parseAdmit("bench.yaml", []byte("domain: api\nrules:\n  - {name: blocked, match: remote_address, rate: 0/s}\n  - {name: per-user, match: user, rate: 10/s}\n"))
		if err != nil {
			b.Fatal(err)
		}
		e, err := newEngine(p, Config{})
		if err != nil {
			b.Fatal(err)
		}
		req := request("api", desc("remote_address", "203.0.113.7"), desc("user", "bob"))
		var res Result
		b.ReportAllocs()
		for b.Loop() {
			if err := e.Check(ctx, req, nil, &res); err != nil || res.Decision.Allowed {
				b.Fatal(err, res.Decision)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		e := benchEngine(b)
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ip := "203.0.113." + strconv.Itoa(int(n.Add(1)))
			req := request("api", desc("remote_address", ip), desc("user", ip), desc("tenant", "acme"))
			var res Result
			for pb.Next() {
				if err := e.Check(ctx, req, nil, &res); err != nil || !res.Decision.Allowed {
					b.Fatal(err, res.Decision)
				}
			}
		})
	})
}

// TestCheckAllocations: a check of rules kept in memory allocates nothing
// (the reference design allocates only the key of its per-tenant
// concurrency cap, which the concurrency limiter keeps while in flight).
func TestCheckAllocations(t *testing.T) {
	p, err := parseAdmit("bench.yaml", []byte(benchPolicy))
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(p, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var res Result
	var h compose.Held
	for _, tc := range []struct {
		req  *Request
		want float64
	}{
		{request("api", desc("remote_address", "203.0.113.7"), desc("user", "bob"), desc("tenant", "acme"), desc("route", "/login"), desc("generic_key", "global")), 0},
		{request("api", desc("remote_address", "203.0.113.7"), desc("user", "bob"), desc("tenant", "newco"), desc("route", "/login"), desc("generic_key", "global")), 1},
		{request("api", desc("unknown", "x")), 0},
	} {
		allocs := testing.AllocsPerRun(200, func() {
			if err := e.Check(ctx, tc.req, &h, &res); err != nil || !res.Decision.Allowed {
				t.Fatal(err, res.Decision)
			}
			h.Release()
		})
		if allocs > tc.want {
			t.Errorf("%v: %v allocations per check, want %v", tc.req.Descriptors, allocs, tc.want)
		}
	}
}

// TestEngineConcurrent: goroutines checking at one instant admit exactly
// what the limits allow, and the slots in flight never exceed the cap.
func TestEngineConcurrent(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: rate, match: k, rate: 100/min}
  - {name: slots, match: s, concurrency: 3}
`)
	var admitted, inFlight, maxInFlight atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				var h compose.Held
				var res Result
				req := request("api", desc("k", "shared"), desc("s", "shared"))
				if err := e.Check(context.Background(), req, &h, &res); err != nil {
					t.Error(err)
					return
				}
				if res.Decision.Allowed {
					admitted.Add(1)
					n := inFlight.Add(1)
					for {
						m := maxInFlight.Load()
						if n <= m || maxInFlight.CompareAndSwap(m, n) {
							break
						}
					}
					inFlight.Add(-1)
				}
				h.Release()
			}
		})
	}
	wg.Wait()
	if maxInFlight.Load() > 3 {
		t.Errorf("%d in flight, cap 3", maxInFlight.Load())
	}
	// Refused requests gave their events back, so the rate admitted
	// exactly its 100, whatever the cap refused.
	var res Result
	if err := e.Check(context.Background(), &Request{Domain: "api", Descriptors: []Descriptor{desc("k", "shared")}}, nil, &res); err != nil {
		t.Fatal(err)
	}
	if admitted.Load()+res.Decision.Remaining != 100 {
		t.Errorf("admitted %d, %d remaining: want 100 in all", admitted.Load(), res.Decision.Remaining)
	}
}

const adaptiveBenchPolicy = `
domain: api
rules:
  - {name: backend, match: backend, adaptive_rate: {min: 1/s, max: 1000000000/s, initial: 1000000000/s}}
  - {name: db, match: [{key: db, value: main}], adaptive_concurrency: {min: 1000, max: 1000000}}
  - {name: lanes, match: [tenant, priority], lanes: {budget: 1000000000/s, shares: {critical: 50%, default: 30%, batch: 20%}}}
  - {name: workers, match: [{key: pool, value: w}, class], lanes: {concurrency: 1000000, shares: {hi: 1, lo: 1}}}
`

func adaptiveEngine(tb testing.TB) *Engine {
	p, err := parseAdmit("bench.yaml", []byte(adaptiveBenchPolicy))
	if err != nil {
		tb.Fatal(err)
	}
	e, err := newEngine(p, Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

var adaptiveBenchRequest = request("api", desc("backend", "search"), desc("db", "main"),
	desc("tenant", "acme", "priority", "critical"), desc("pool", "w", "class", "hi"))

// BenchmarkCheckAdaptive measures a check of the four new kinds (an
// adaptive rate per backend, an adaptive concurrency cap, rate lanes per
// tenant, slot lanes), its grants finished as a success.
func BenchmarkCheckAdaptive(b *testing.B) {
	e := adaptiveEngine(b)
	ctx := context.Background()
	var res Result
	var h compose.Held
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Check(ctx, adaptiveBenchRequest, &h, &res); err != nil || !res.Decision.Allowed {
			b.Fatal(err, res.Decision)
		}
		h.Finish(false)
	}
}

// TestCheckAdaptiveAllocations: a check of the new kinds, for keys they
// know, allocates nothing (their grants come from free lists).
func TestCheckAdaptiveAllocations(t *testing.T) {
	e := adaptiveEngine(t)
	ctx := context.Background()
	var res Result
	var h compose.Held
	allocs := testing.AllocsPerRun(200, func() {
		if err := e.Check(ctx, adaptiveBenchRequest, &h, &res); err != nil || !res.Decision.Allowed {
			t.Fatal(err, res.Decision)
		}
		if !h.WantsOutcome() || h.Len() != 3 {
			t.Fatalf("Len %d, WantsOutcome %v", h.Len(), h.WantsOutcome())
		}
		h.Finish(false)
	})
	if allocs > 0 {
		t.Errorf("%v allocations per check, want 0", allocs)
	}
}
