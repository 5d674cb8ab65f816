package sim

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// faultAt returns the index of the fault on at t, or -1.
func (r *run) faultAt(t int64) int {
	for i, f := range r.t.Faults {
		if t >= int64(f.From) && t < int64(f.To) {
			return i
		}
	}
	return -1
}

// result gathers the run's Result.
func (r *run) result() *Result {
	a := r.acct
	res := &Result{Duration: r.t.Duration, Step: time.Duration(r.step), Seed: r.cfg.Seed, Algorithm: r.cfg.Algorithm, Total: a.total}
	for i := range r.clients {
		res.Clients = append(res.Clients, r.clients[i].Tally)
	}
	for i := range r.reps {
		if len(res.Tenants) == maxTenants {
			break
		}
		res.Tenants = append(res.Tenants, r.reps[i].Tally)
	}
	for _, ra := range a.rules {
		for _, ks := range ra.keys {
			ra.Ideal += ks.ideal
			ra.Over += max(ks.adm-ks.ideal, 0)
			ra.Under += max(ks.ideal-ks.adm, 0)
			if ra.Bound > 0 {
				ra.OverBound += max(ks.adm-ra.Bound, 0)
			}
		}
		res.Rules = append(res.Rules, ra.Tally)
	}
	slices.SortStableFunc(res.Rules, func(x, y Tally) int { return cmp.Compare(x.Name, y.Name) })
	if res.Total.Succeeded > 0 {
		res.Amplification = float64(res.Total.Attempts) / float64(res.Total.Succeeded)
	}
	res.Fairness = r.fairness()
	r.backendFigures(res)
	r.series(res)
	res.Warnings = r.warnings()
	return res
}

// fairness is Jain's index over the tenants' satisfaction.
func (r *run) fairness() float64 {
	var sum, sq float64
	n := 0
	for i := range r.reps {
		t := &r.reps[i].Tally
		if t.Requests == 0 {
			continue
		}
		x := float64(t.Succeeded) / float64(t.Requests)
		sum += x
		sq += x * x
		n++
	}
	if n == 0 || sq == 0 {
		return 0
	}
	return sum * sum / (float64(n) * sq)
}

// backendFigures sets the backend's latency, queue and Little's law.
func (r *run) backendFigures(res *Result) {
	b := r.back
	if b == nil {
		return
	}
	res.LatencyP50, res.LatencyP99 = b.latency.quantile(0.5), b.latency.quantile(0.99)
	res.QueueP50, res.QueueP99 = weightedQuantile(b.queueTime, 0.5), weightedQuantile(b.queueTime, 0.99)
	d := float64(r.end)
	res.L = b.areaN / d
	res.Lambda = float64(b.left) / d * float64(time.Second)
	if b.left > 0 {
		res.W = b.sojournSum / float64(b.left) / float64(time.Second)
	}
	if res.L > 0 {
		res.LittleError = math.Abs(res.L-res.Lambda*res.W) / res.L
	}
	res.Capacity = b.capacity()
}

// series lays out the time series: per client, counts per second.
func (r *run) series(res *Result) {
	a := r.acct
	perSec := float64(time.Second) / float64(r.step)
	rate := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x * perSec
		}
		return out
	}
	for ci := range r.clients {
		name := r.clients[ci].Name
		res.Series = append(res.Series,
			Series{Name: "admitted", Client: name, Points: rate(a.admitted[ci])},
			Series{Name: "denied", Client: name, Points: rate(a.denied[ci])},
			Series{Name: "retries", Client: name, Points: rate(a.retry[ci])})
	}
	if r.back != nil {
		res.Series = append(res.Series,
			Series{Name: "queue", Points: a.queue},
			Series{Name: "in_flight", Points: a.busy},
			Series{Name: "latency_p50", Points: a.p50},
			Series{Name: "latency_p99", Points: a.p99})
	}
}
