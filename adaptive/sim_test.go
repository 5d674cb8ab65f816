package adaptive

import (
	"container/heap"
	"math/rand/v2"
	"time"

	"github.com/admit-go/admit/internal/timeline"
)

// server is a deterministic model of a backend: workers serve requests
// one at a time, each taking service (times a jitter factor in
// [1-jitter, 1+jitter], from a seeded generator); requests that find every
// worker busy wait in a FIFO queue. With k > workers requests in flight, a
// request takes about service × k / workers: latency rises with load beyond
// capacity, while throughput stays at workers / service.
type server struct {
	workers int
	service time.Duration
	jitter  float64
	rng     *rand.Rand
	busy    int
	queue   []*simReq
	running simHeap
	// maxQueue > 0 drops (as Dropped) requests arriving to a queue that
	// long: an overloaded server that sheds load.
	maxQueue int
}

type simReq struct {
	tok  Token
	done time.Time
	drop bool
}

type simHeap []*simReq

func (h simHeap) Len() int           { return len(h) }
func (h simHeap) Less(i, j int) bool { return h[i].done.Before(h[j].done) }
func (h simHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *simHeap) Push(x any)        { *h = append(*h, x.(*simReq)) }
func (h *simHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newServer(workers int, service time.Duration, jitter float64, seed uint64) *server {
	return &server{workers: workers, service: service, jitter: jitter, rng: rand.New(rand.NewPCG(seed, 1))}
}

func (s *server) serviceTime() time.Duration {
	if s.jitter == 0 {
		return s.service
	}
	f := 1 + s.jitter*(2*s.rng.Float64()-1)
	return time.Duration(float64(s.service) * f)
}

// submit starts r at now if a worker is free, else queues it (or drops it
// when the queue is full: it fails at once).
func (s *server) submit(now time.Time, r *simReq) {
	if s.busy < s.workers {
		s.busy++
		r.done = now.Add(s.serviceTime())
		heap.Push(&s.running, r)
		return
	}
	if s.maxQueue > 0 && len(s.queue) >= s.maxQueue {
		// Refused after a tenth of the service time.
		r.drop, r.done = true, now.Add(s.service/10)
		heap.Push(&s.running, r)
		return
	}
	s.queue = append(s.queue, r)
}

// next completes the earliest running request, starts the next queued one
// on its worker, and returns the completed request.
func (s *server) next() *simReq {
	r := heap.Pop(&s.running).(*simReq)
	if r.drop {
		return r
	}
	s.busy--
	for s.busy < s.workers && len(s.queue) > 0 {
		q := s.queue[0]
		s.queue = s.queue[1:]
		s.busy++
		q.done = r.done.Add(s.serviceTime())
		heap.Push(&s.running, q)
	}
	return r
}

// simResult summarises a simulation.
type simResult struct {
	end        time.Time
	served     int
	dropped    int
	meanLimit  float64 // time-weighted over the run
	minLimit   int64
	maxLimit   int64
	meanLat    time.Duration
	finalLimit int64
}

// simulate drives g with a closed loop of unlimited demand (every free
// slot is used at once) against s from start for d, and reports what
// happened.
func simulate(g *Gradient, s *server, start time.Time, d time.Duration) simResult {
	now := start
	end := start.Add(d)
	res := simResult{minLimit: g.Limit(), maxLimit: g.Limit()}
	var limitArea float64
	var latSum time.Duration
	fill := func() {
		for {
			tok, _, _ := g.TryAcquireN(now, 1)
			if tok.g == nil {
				return
			}
			s.submit(now, &simReq{tok: tok})
		}
	}
	fill()
	for s.running.Len() > 0 && !s.running[0].done.After(end) {
		r := s.next()
		lim := g.Limit()
		limitArea += float64(lim) * float64(r.done.Sub(now))
		now = r.done
		if r.drop {
			r.tok.DoneAt(now, Dropped)
			res.dropped++
		} else {
			g.mu.Lock()
			start := g.recs[r.tok.idx].start
			g.mu.Unlock()
			latSum += time.Duration(timeline.Nanos(now) - start)
			r.tok.DoneAt(now, Succeeded)
			res.served++
		}
		lim = g.Limit()
		res.minLimit = min(res.minLimit, lim)
		res.maxLimit = max(res.maxLimit, lim)
		fill()
	}
	res.end = now
	if el := now.Sub(start); el > 0 {
		res.meanLimit = limitArea / float64(el)
	}
	if res.served > 0 {
		res.meanLat = latSum / time.Duration(res.served)
	}
	res.finalLimit = g.Limit()
	return res
}
