package simreport

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/sim"
)

// tiersPolicy is a tenant-tier policy: a rate per tenant by plan, and a
// rate for the whole API in front of its backend.
const tiersPolicy = `
domain: api
tier_tables:
  plans:
    default: free
    tiers:
      free: {rate: 20/s, burst: 20}
      pro: {rate: 100/s, burst: 100}
    assign:
      acme: pro
rules:
  - {name: per-tenant, match: tenant, tiers: plans}
  - name: global
    match:
      - key: generic_key
        value: global
    rate: 300/s burst 150
`

// tiersTraffic is d of a pro tenant above its rate, five free
// tenants in bursts, and a client with a hostile name, through a backend
// of 20 workers; retry says what refused clients do.
func tiersTraffic(d time.Duration, retry sim.Retry) *sim.Traffic {
	client := func(name, tenant string, count int, a sim.Arrival) sim.Client {
		return sim.Client{Name: name, Count: count, Domain: "api", Arrival: a, Retry: retry,
			Descriptors: []policy.Descriptor{
				{Entries: []policy.Entry{{Key: "tenant", Value: tenant}}},
				{Entries: []policy.Entry{{Key: "generic_key", Value: "global"}}},
			}}
	}
	return &sim.Traffic{
		Duration: d,
		Clients: []sim.Client{
			client("acme", "acme", 1, sim.Arrival{Process: "poisson", Rate: 130}),
			client("free", "free-{i}", 5, sim.Arrival{Process: "on_off", Rate: 40, On: 20 * time.Second, Off: 40 * time.Second}),
			client(evilName, "evil", 1, sim.Arrival{Process: "diurnal", Rate: 5, Peak: 40, Period: 5 * time.Minute}),
		},
		Backend: &sim.Backend{Concurrency: 20, Service: 60 * time.Millisecond, Distribution: "lognormal", Spread: 200 * time.Millisecond},
	}
}

// simulate runs ten minutes of tiersTraffic through tiersPolicy.
func simulate(t testing.TB, algorithm string, retry sim.Retry) *sim.Result {
	return simulateFor(t, 10*time.Minute, algorithm, retry)
}

// simulateFor runs d of tiersTraffic through tiersPolicy.
func simulateFor(t testing.TB, d time.Duration, algorithm string, retry sim.Retry) *sim.Result {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(tiersPolicy))
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Run(context.Background(), sim.Config{Policy: p, Traffic: tiersTraffic(d, retry), Seed: 1, Algorithm: algorithm})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReportOfARealRun shows what the engine measured, not a result
// built by hand: every writer takes it, and names stay escaped.
func TestReportOfARealRun(t *testing.T) {
	r := simulateFor(t, 3*time.Minute, "", sim.Retry{On429: "retry_after", Jitter: 1, Budget: 0.2})
	charts := Charts(Runs(r))
	if len(charts) != 3 { // retries, traffic, backend
		t.Fatalf("%d charts of a run with retries and a backend, want 3", len(charts))
	}
	for _, c := range charts {
		b, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		checkSVG(t, c.Name, b)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, Report{Runs: Runs(r)}); err != nil {
		t.Fatal(err)
	}
	holds(t, "the report", b.String(), "&lt;script&gt;", "per-tenant", "global", "Little&#39;s law")
	b.Reset()
	if err := Summary(&b, r); err != nil {
		t.Fatal(err)
	}
	holds(t, "the summary", b.String(), "  acme ", "  free-4 ", "  per-tenant/pro ", "Backend latency")
}
