package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// backend is the simulated service behind admit: workers and a FIFO
// queue, with the time integrals Little's law and the charts need.
type backend struct {
	workers  int
	busy     int
	queue    ring // slots waiting, in order
	maxQueue int
	timeout  int64

	dist       string
	mean       float64 // ns
	lo, hi     float64 // uniform's bounds, ns
	mu, sigma  float64 // lognormal's parameters (of ln ns)
	sojournSum float64 // ns, of the requests that left
	left       int64   // requests that left (served, or failed after waiting)
	areaN      float64 // ∫ (waiting + in service) dt, ns
	// ∫ waiting dt and ∫ in service dt over the series' current bucket.
	bucketQueue, bucketBusy float64
	queueTime               []float64
	latency                 hist // of the requests served, all run
}

func newBackend(b *Backend) *backend {
	k := &backend{workers: b.Concurrency, maxQueue: b.Queue, timeout: int64(b.Timeout), dist: b.Distribution, mean: float64(b.Service)}
	if k.maxQueue == 0 {
		k.maxQueue = 100_000
	}
	if k.dist == "" {
		k.dist = "exponential"
	}
	switch k.dist {
	case "uniform":
		k.lo, k.hi = float64(b.Service-b.Spread), float64(b.Service+b.Spread)
	case "lognormal":
		// median m, 99th percentile p: ln p = ln m + 2.3263σ.
		k.mu = math.Log(float64(b.Service))
		if b.Spread > b.Service {
			k.sigma = (math.Log(float64(b.Spread)) - k.mu) / 2.3263478740408408
		}
	}
	return k
}

// meanService is the mean service time (for lognormal, from its median
// and spread).
func (k *backend) meanService() time.Duration {
	if k.dist == "lognormal" {
		return time.Duration(math.Exp(k.mu + k.sigma*k.sigma/2))
	}
	return time.Duration(k.mean)
}

// capacity is the requests per second the workers serve at full use.
func (k *backend) capacity() float64 {
	return float64(k.workers) * float64(time.Second) / float64(k.meanService())
}

// service draws a service time, in ns (at least 1).
func (k *backend) service(rng *rand.Rand) int64 {
	var d float64
	switch k.dist {
	case "constant":
		d = k.mean
	case "uniform":
		d = k.lo + rng.Float64()*(k.hi-k.lo)
	case "lognormal":
		d = math.Exp(k.mu + k.sigma*rng.NormFloat64())
	default:
		d = rng.ExpFloat64() * k.mean
	}
	return max(int64(math.Min(d, float64(math.MaxInt64/4))), 1)
}

// inSystem is the requests waiting or in service.
func (k *backend) inSystem() int { return k.busy + k.queue.len() }

// integrate adds dt nanoseconds at the current counts to the integrals.
func (k *backend) integrate(dt int64) {
	if dt <= 0 {
		return
	}
	k.areaN += float64(k.inSystem()) * float64(dt)
	q := k.queue.len()
	k.bucketQueue += float64(q) * float64(dt)
	k.bucketBusy += float64(k.busy) * float64(dt)
	for len(k.queueTime) <= q {
		k.queueTime = append(k.queueTime, 0)
	}
	k.queueTime[q] += float64(dt)
}

// ring is a FIFO of request slots.
type ring struct {
	buf        []int32
	head, size int
}

func (r *ring) len() int { return r.size }

func (r *ring) push(v int32) {
	if r.size == len(r.buf) {
		nb := make([]int32, max(16, 2*len(r.buf)))
		for i := range r.size {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = v
	r.size++
}

func (r *ring) pop() int32 {
	v := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return v
}

// hist is a histogram of durations in buckets 2% wide, from 1µs to about
// 3 hours: quantiles within 2%, in constant memory.
type hist struct {
	n      int64
	counts [histBuckets]int64
}

const (
	histBuckets = 1200
	histBase    = 1000.0 // ns: the first bucket's upper bound
)

var histLog = math.Log(1.02)

func histIndex(ns int64) int {
	if float64(ns) <= histBase {
		return 0
	}
	i := int(math.Log(float64(ns)/histBase)/histLog) + 1
	return min(i, histBuckets-1)
}

func (h *hist) add(ns int64) {
	h.counts[histIndex(ns)]++
	h.n++
}

// quantile returns the q-quantile (the upper bound of its bucket).
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	var c int64
	for i, n := range h.counts {
		c += n
		if c >= max(rank, 1) {
			return time.Duration(histBase * math.Pow(1.02, float64(i)))
		}
	}
	return time.Duration(histBase * math.Pow(1.02, histBuckets-1))
}

func (h *hist) reset() { *h = hist{} }

// weightedQuantile returns the q-quantile of the queue's length, weighted
// by time.
func weightedQuantile(w []float64, q float64) float64 {
	var total float64
	for _, x := range w {
		total += x
	}
	if total == 0 {
		return 0
	}
	var c float64
	for i, x := range w {
		c += x
		if c >= q*total {
			return float64(i)
		}
	}
	return float64(len(w) - 1)
}
