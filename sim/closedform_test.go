package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/admit-go/admit/policy"
)

func mustPolicy(t testing.TB, text string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRun(t testing.TB, c Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func tenant(name string, a Arrival) Client {
	return Client{Name: name, Domain: "api", Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "tenant", Value: name + "{i}"}}}}, Arrival: a}
}

// withGlobal adds a second descriptor, {all: x}, which every client
// sends alike (a global rule's).
func withGlobal(c *Client) {
	c.Descriptors = append(c.Descriptors, policy.Descriptor{Entries: []policy.Entry{{Key: "all", Value: "x"}}})
}

const perTenant = `
domain: api
rules:
  - name: per-tenant
    match: tenant
    rate: %s
    algorithm: %s
`

// Constant arrivals above the limit admit exactly B + floor(t/T): the
// closed form of every bucket algorithm.
func TestConstantAboveLimitAdmitsBPlusTOverT(t *testing.T) {
	for _, alg := range []string{"gcra", "token_bucket"} {
		for _, d := range []time.Duration{time.Second, 10 * time.Second, 61*time.Second + 500*time.Millisecond} {
			p := mustPolicy(t, sprintf(perTenant, "10/s burst 5", alg))
			tr := &Traffic{Duration: d, Clients: []Client{tenant("a", Arrival{Process: "constant", Rate: 50})}}
			res := mustRun(t, Config{Policy: p, Traffic: tr})
			// B + floor(t/T), t the instant of the last arrival (< d).
			last := d - 20*time.Millisecond
			want := int64(5) + int64(last/(100*time.Millisecond))
			if got := res.Total.Admitted; got != want {
				t.Errorf("%s over %v: admitted %d, want B + floor(t/T) = %d", alg, d, got, want)
			}
			if res.Total.Requests != int64(d/(20*time.Millisecond)) {
				t.Errorf("%s over %v: %d requests, want %d", alg, d, res.Total.Requests, d/(20*time.Millisecond))
			}
			if r := res.Rules[0]; r.Ideal != r.Admitted || r.Over != 0 || r.Under != 0 || r.OverBound != 0 {
				t.Errorf("%s: one exact instance should equal its ideal: %+v", alg, r)
			}
		}
	}
}

// A Poisson stream through one worker with exponential service times is
// an M/M/1 queue: the mean time in the system is 1/(μ-λ).
func TestPoissonThroughOneWorkerIsMM1(t *testing.T) {
	const lambda, mu = 400.0, 1000.0
	tr := &Traffic{
		Duration: 2000 * time.Second,
		Clients:  []Client{tenant("a", Arrival{Process: "poisson", Rate: lambda})},
		Backend:  &Backend{Concurrency: 1, Service: time.Second / mu, Queue: 1 << 20},
	}
	res := mustRun(t, Config{Policy: mustPolicy(t, "domain: api\nrules: []\n"), Traffic: tr, Seed: 3})
	want := 1 / (mu - lambda)
	if e := math.Abs(res.W-want) / want; e > 0.05 {
		t.Errorf("mean time in system %.6fs, M/M/1 says %.6fs: off by %.1f%% (want within 5%%)", res.W, want, 100*e)
	}
	wq := res.W - 1/mu
	wantQ := lambda / (mu * (mu - lambda))
	if e := math.Abs(wq-wantQ) / wantQ; e > 0.05 {
		t.Errorf("mean wait %.6fs, M/M/1 says %.6fs: off by %.1f%%", wq, wantQ, 100*e)
	}
	if res.LittleError > 0.02 {
		t.Errorf("Little's law: L = %.4f, λW = %.4f: off by %.2f%% (want within 2%%)", res.L, res.Lambda*res.W, 100*res.LittleError)
	}
}

// L = λW holds on the simulated backend, several workers, a bounded queue
// with timeouts, and bursts.
func TestLittlesLawHolds(t *testing.T) {
	tr := &Traffic{
		Duration: 600 * time.Second,
		Clients: []Client{
			tenant("a", Arrival{Process: "on_off", Rate: 900, On: 5 * time.Second, Off: 5 * time.Second}),
			tenant("b", Arrival{Process: "poisson", Rate: 200}),
		},
		Backend: &Backend{Concurrency: 8, Service: 20 * time.Millisecond, Distribution: "lognormal", Spread: 80 * time.Millisecond, Queue: 500, Timeout: time.Second},
	}
	res := mustRun(t, Config{Policy: mustPolicy(t, "domain: api\nrules: []\n"), Traffic: tr, Seed: 9})
	if res.LittleError > 0.02 {
		t.Errorf("Little's law: L = %.4f, λW = %.4f × %.4f = %.4f: off by %.2f%%", res.L, res.Lambda, res.W, res.Lambda*res.W, 100*res.LittleError)
	}
	if res.Total.Failed == 0 {
		t.Errorf("bursts of 900/s into 400/s of capacity should overflow or time out: %+v", res.Total)
	}
}

// The fixed window admits 2B around a window's edge, as
// admit.NewFixedWindow's doc says ("two full windows can meet at an edge
// (2B in an instant)"): B at the end of one window and B at the start of
// the next.
func TestFixedWindowBoundaryDoubleBurst(t *testing.T) {
	p := mustPolicy(t, sprintf(perTenant, "100/min", "fixed_window"))
	// Silent for 50s, then 20/s: the window [0, 60s) and [60s, 120s).
	tr := &Traffic{Duration: 90 * time.Second, Step: time.Second, Clients: []Client{
		tenant("a", Arrival{Process: "constant", Rate: 20}),
	}}
	tr.Clients[0].Start = 50 * time.Second
	res := mustRun(t, Config{Policy: p, Traffic: tr})
	adm := res.Series[0].Points // admitted per second
	var around float64
	for s := 50; s < 70; s++ {
		around += adm[s]
	}
	if around != 200 {
		t.Errorf("admitted %v in the 20s around the boundary at 60s, want 2B = 200", around)
	}
	for s := 50; s < 60; s++ {
		if s < 55 && adm[s] != 20 || s >= 55 && adm[s] != 0 {
			t.Errorf("second %d: %v admitted (want 20 until the window's 100 are spent at 55s, then 0)", s, adm[s])
		}
	}
	if adm[60] != 20 {
		t.Errorf("second 60, the new window: %v admitted, want 20", adm[60])
	}
}

// 2B in an instant: a client at 1000/s from 59.9s gets the last window's
// 100 before 60s and the next window's 100 by 60.1s.
func TestFixedWindowTwoBInAnInstant(t *testing.T) {
	p := mustPolicy(t, sprintf(perTenant, "100/min", "fixed_window"))
	tr := &Traffic{Duration: 61 * time.Second, Step: 100 * time.Millisecond, Clients: []Client{
		tenant("a", Arrival{Process: "constant", Rate: 1000}),
	}}
	tr.Clients[0].Start = 59*time.Second + 900*time.Millisecond
	res := mustRun(t, Config{Policy: p, Traffic: tr})
	adm := res.Series[0].Points // per second, over 100ms buckets
	if got := (adm[599] + adm[600]) / 10; got != 200 {
		t.Errorf("admitted %v in [59.9s, 60.1s), want 2B = 200", got)
	}
	if res.Rules[0].OverBound != 0 {
		t.Errorf("the fixed window's bound B×(windows touched) must hold: %+v", res.Rules[0])
	}
}
