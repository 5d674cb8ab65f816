package sim

import (
	"strings"
	"testing"
	"time"
)

func warningsOf(res *Result, kind string) []string {
	var ms []string
	for _, w := range res.Warnings {
		if w.Kind == kind {
			ms = append(ms, w.Message)
		}
	}
	return ms
}

// Poisson arrivals at half the rate need more than a burst of 1; evenly
// spaced ones at the same mean need nothing more.
func TestBurstWarning(t *testing.T) {
	p := mustPolicy(t, sprintf(perTenant, "10/s burst 1", "gcra"))
	run := func(process string) *Result {
		c := tenant("t", Arrival{Process: process, Rate: 5})
		c.Count = 20
		return mustRun(t, Config{Policy: p, Traffic: &Traffic{Duration: 10 * time.Minute, Clients: []Client{c}}, Seed: 3})
	}
	poisson := warningsOf(run("poisson"), "burst")
	if len(poisson) != 1 || !strings.Contains(poisson[0], "20 keys send within 90% of its rate (10/s burst 1)") || !strings.Contains(poisson[0], "a burst of ") {
		t.Errorf("Poisson at half the rate with a burst of 1: %q", poisson)
	}
	if w := warningsOf(run("constant"), "burst"); len(w) != 0 {
		t.Errorf("evenly spaced arrivals within the rate need no burst: %q", w)
	}
}

// The capacity warning compares each tenant's tightest rate, summed and
// capped by a shared one, with the headroom.
func TestCapacityWarning(t *testing.T) {
	const pol = `
domain: api
rules:
  - name: per-tenant
    match: tenant
    rate: 10/s
  - name: all
    match: all
    rate: %s
`
	run := func(global string) []string {
		c := tenant("t", Arrival{Process: "poisson", Rate: 2})
		c.Count = 50
		withGlobal(&c)
		tr := &Traffic{Duration: 10 * time.Second, Clients: []Client{c}, Backend: &Backend{Concurrency: 10, Service: 20 * time.Millisecond}}
		return warningsOf(mustRun(t, Config{Policy: mustPolicy(t, sprintf(pol, global)), Traffic: tr}), "capacity")
	}
	// 50 × 10/s = 500/s against 70% of 500/s: warned, with its figures.
	if w := run("1000/s"); len(w) != 1 || !strings.Contains(w[0], "up to 500 requests/s") || !strings.Contains(w[0], "350 of 500 requests/s") {
		t.Errorf("500/s of limits for 500/s of capacity: %q", w)
	}
	// A shared 300/s caps them below 350/s.
	if w := run("300/s"); len(w) != 0 {
		t.Errorf("a shared 300/s keeps them within 70%%: %q", w)
	}
}
