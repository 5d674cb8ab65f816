package simreport

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/admit-go/admit/sim"
)

// evilName is a client name that must come out escaped everywhere.
const evilName = `<script>alert("x")</script>`

// fixture is a realistic result built by hand: three clients over ten
// minutes in 300 buckets, one of them over its limit and retrying, two
// rules, 60 tenants, a backend, and warnings. limit scales the limits
// (so that runs of "algorithms" differ); storm makes the retries come
// in synchronised waves (no jitter) rather than spread.
func fixture(algorithm string, limit float64, storm bool) *sim.Result {
	const n = 300
	step := 2 * time.Second
	rng := rand.New(rand.NewPCG(1, uint64(limit*100)))
	r := &sim.Result{Duration: n * step, Step: step, Seed: 1, Algorithm: algorithm}
	clients := []struct {
		name          string
		rate, limit   float64
		burstPeriod   int
		retryFraction float64
	}{
		{"alice", 150, 100 * limit, 60, 0.5},
		{"bob", 40, 50 * limit, 0, 0},
		{evilName, 20, 10 * limit, 30, 0.2},
	}
	for _, c := range clients {
		adm, den, ret := make([]float64, n), make([]float64, n), make([]float64, n)
		t := sim.Tally{Name: c.name}
		for i := range n {
			offered := c.rate * (1 + 0.15*rng.NormFloat64())
			if c.burstPeriod > 0 && i%c.burstPeriod < c.burstPeriod/3 {
				offered *= 1.8
			}
			retries := 0.0
			if i > 0 {
				retries = den[i-1] * c.retryFraction
				if storm && i%10 != 0 {
					retries *= 0.2
				} else if storm {
					retries *= 4
				}
			}
			attempts := math.Max(0, offered) + retries
			adm[i] = math.Min(attempts, c.limit*(1+0.02*rng.NormFloat64()))
			den[i] = attempts - adm[i]
			ret[i] = retries
			secs := step.Seconds()
			t.Requests += int64(offered * secs)
			t.Attempts += int64(attempts * secs)
			t.Admitted += int64(adm[i] * secs)
			t.Denied += int64(den[i] * secs)
		}
		t.GaveUp = t.Denied / 3
		t.Failed = t.Admitted / 200
		t.Succeeded = t.Admitted - t.Failed
		r.Clients = append(r.Clients, t)
		r.Series = append(r.Series,
			sim.Series{Name: "admitted", Client: c.name, Points: adm},
			sim.Series{Name: "denied", Client: c.name, Points: den},
			sim.Series{Name: "retries", Client: c.name, Points: ret})
		addTally(&r.Total, t)
	}
	r.Total.Name = "total"
	r.Tenants = tenants(rng, 60)
	r.Rules = []sim.Tally{
		{Name: "global", Requests: r.Total.Attempts, Admitted: r.Total.Admitted, Denied: r.Total.Denied / 4,
			Ideal: r.Total.Admitted - 40, Over: int64(60 * limit), Under: 20, Bound: 130000, OverBound: 0},
		{Name: "per_client/gold", Requests: r.Total.Attempts, Admitted: r.Total.Admitted, Denied: r.Total.Denied * 3 / 4,
			Ideal: r.Total.Admitted + 10, Over: 5, Under: int64(15 / limit), Bound: 90000, OverBound: 12},
	}
	backend(r, rng)
	r.Amplification = float64(r.Total.Attempts) / float64(r.Total.Succeeded)
	r.Fairness = 0.87
	r.Warnings = []sim.Warning{
		{Kind: "capacity", Message: "the limits sum to 160 req/s, above 70% of the backend's capacity of 200 req/s (140 req/s)"},
		{Kind: "burst", Message: fmt.Sprintf("rule per_client: a burst of 10 is small for %s's arrivals (p99 of 2 s: 38 requests)", evilName)},
	}
	return r
}

// addTally adds t's counts to sum.
func addTally(sum *sim.Tally, t sim.Tally) {
	sum.Requests += t.Requests
	sum.Attempts += t.Attempts
	sum.Admitted += t.Admitted
	sum.Denied += t.Denied
	sum.GaveUp += t.GaveUp
	sum.Succeeded += t.Succeeded
	sum.Failed += t.Failed
}

// tenants is n tenants named tenant-i with random counts.
func tenants(rng *rand.Rand, n int) []sim.Tally {
	ts := make([]sim.Tally, n)
	for i := range ts {
		req := int64(100 + rng.IntN(1000))
		den := int64(rng.IntN(int(req / 2)))
		ts[i] = sim.Tally{Name: fmt.Sprintf("tenant-%d", i), Requests: req, Attempts: req + den/2,
			Admitted: req - den, Denied: den, Succeeded: req - den}
	}
	return ts
}

// backend adds the backend's series and figures to r: a queue that
// builds up when alice bursts, and latency that follows it.
func backend(r *sim.Result, rng *rand.Rand) {
	n := len(r.Series[0].Points)
	queue, inFlight := make([]float64, n), make([]float64, n)
	p50, p99 := make([]float64, n), make([]float64, n)
	adm := sumSeries(r, "admitted")
	for i := range n {
		load := adm[i] / 200
		inFlight[i] = math.Min(20, 20*load)
		queue[i] = math.Max(0, (load-0.75)*60+rng.Float64()*2)
		p50[i] = 0.010 + queue[i]*0.0008
		p99[i] = 0.045 + queue[i]*0.004 + rng.Float64()*0.01
	}
	r.Series = append(r.Series,
		sim.Series{Name: "queue", Points: queue}, sim.Series{Name: "in_flight", Points: inFlight},
		sim.Series{Name: "latency_p50", Points: p50}, sim.Series{Name: "latency_p99", Points: p99})
	r.LatencyP50, r.LatencyP99 = 12300*time.Microsecond, 87*time.Millisecond
	r.QueueP50, r.QueueP99 = 1, 14.5
	r.Capacity = 200
	r.Lambda = 163.2
	r.W = 0.0151
	r.L = 2.49
	r.LittleError = math.Abs(r.L-r.Lambda*r.W) / r.L
}

// fixtureReport is a report of fixtures: three "algorithms" on one
// traffic, and a retry storm with and without jitter.
func fixtureReport() Report {
	storm := []Run{{Label: "without jitter", Result: fixture("", 1, true)}, {Label: "with jitter", Result: fixture("", 1, false)}}
	c, _ := RetryChart(storm, "retry_storm")
	return Report{
		Title:  "Tenant tiers, three algorithms",
		Policy: "policy.yaml", Traffic: "traffic.yaml",
		Runs:   Runs(fixture("gcra", 1, false), fixture("sliding_window", 1.1, false), fixture("fixed_window", 1.3, false)),
		Charts: []Chart{c},
	}
}
