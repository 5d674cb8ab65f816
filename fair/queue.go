package fair

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/defaults"
)

// Queue is a concurrency limit of max slots in flight whose waiters are
// served by weighted fair queueing across flows, rather than first come,
// first served: when slots are scarce, each flow (a tenant, a client, a
// key) gets a part of the slots granted in proportion to its weight
// (QueueConfig.Weight), however many requests it queues. A flow that floods the
// queue waits behind its own requests, not in front of everyone else's.
//
// # Model
//
// A request of n slots is granted at once if n slots are free and nobody
// waits. Otherwise it waits, tagged as in self-clocked fair queueing: with
// V the finish tag of the last request granted from the queue (the
// virtual time) and F_f the finish tag of flow f's last waiting request,
//
//	start  = max(V, F_f)
//	finish = start + n / weight(f)
//
// and waiters are served in order of finish tag (ties in arrival order),
// each as soon as its n slots are free: a waiter that does not fit blocks
// those behind it, so a large request is never overtaken for ever by small
// ones. So while two flows both wait, they are granted slots in the ratio
// of their weights, whatever their numbers of waiters, and a flow that
// arrives is served within about one request of each other flow. A flow
// that leaves the queue is forgotten; it comes back with no debt and no
// credit.
//
// The queue holds at most QueueConfig.MaxWaiters requests. When it is full, a new
// request whose finish tag is earlier than that of the last waiter (the
// one that would be served last, usually the tail of the flow that queued
// most) takes its place, and that waiter is refused; otherwise the new
// request is refused. So a flooding flow cannot keep the others out of
// the queue either. A waiter whose context ends leaves the queue at once;
// the tags of its flow's later waiters move up as if it had never come
// (but not before the requests granted since).
//
// Decisions are admit.Decisions of Kind admit.KindConcurrency: Limit is
// {Rate: max, Burst: max}, Remaining the free slots after the decision (0
// while requests wait), RetryAfter 0 (unknown: slots come back when
// released) or admit.InfDuration for n > max, which can never be admitted
// (with an error wrapping admit.ErrExceedsBurst).
//
// A Queue is safe for concurrent use and starts no goroutine; a waiting
// caller waits on its own goroutine. The zero Queue is not usable; create
// one with NewQueue.
type Queue struct {
	mu         sync.Mutex
	max        int64
	inflight   int64
	vtime      float64
	seq        uint64
	flows      map[string]*flow
	heap       []*qwaiter
	maxWaiters int
	weight     func(string) float64
	name       string
	g          grants[int64]
	clock      admit.Clock
	sys        bool      // clock is admit.SystemClock
	base       time.Time // the origin of now, read at NewQueue
	waits      uint64    // callers that waited and are done waiting
	waited     int64     // the time they waited in all, ns
}

// flow is a flow with requests waiting.
type flow struct {
	key        string
	w          float64
	head, tail *qwaiter
	finish     float64 // finish tag of the tail
}

// qwaiter is a request waiting in a Queue.
type qwaiter struct {
	f          *flow
	n          int64
	venq       float64 // the virtual time when it came
	start      float64
	finish     float64
	seq        uint64
	hi         int // index in the heap
	prev, next *qwaiter
	ready      chan struct{} // closed when granted or refused
	permit     Permit
	granted    bool
	refused    bool
}

var _ admit.Slots = queueLayer{}

// NewQueue returns a Queue of cfg.Max slots. It fails with an error
// wrapping admit.ErrInvalidLimit if Max <= 0.
func NewQueue(cfg QueueConfig) (*Queue, error) {
	if cfg.Max <= 0 {
		return nil, fmt.Errorf("%w: concurrency limit %d, must be positive", admit.ErrInvalidLimit, cfg.Max)
	}
	maxWaiters := cfg.MaxWaiters
	switch {
	case maxWaiters == 0:
		maxWaiters = defaultMaxWaiters
	case maxWaiters < 0:
		maxWaiters = 0
	}
	clock := defaults.Clock(cfg.Options)
	return &Queue{max: cfg.Max, flows: make(map[string]*flow), maxWaiters: maxWaiters, weight: cfg.Weight, name: cfg.Name,
		clock: clock, sys: clock == admit.SystemClock, base: clock.Now()}, nil
}

// now reads the Queue's clock, in nanoseconds since NewQueue; for the
// system clock, only its monotonic reading, which costs less.
func (q *Queue) now() int64 {
	if q.sys {
		return int64(time.Since(q.base))
	}
	return int64(q.clock.Now().Sub(q.base))
}

// decision describes the queue after a request of n was decided. It
// requires q.mu.
func (q *Queue) decision(allowed bool, n int64) admit.Decision {
	d := admit.Decision{
		Allowed: allowed,
		Limit:   admit.Limit{Rate: q.max, Burst: q.max},
		Rule:    q.name,
		Kind:    admit.KindConcurrency,
	}
	if len(q.heap) == 0 {
		d.Remaining = q.max - q.inflight
	}
	if !allowed && n > q.max {
		d.RetryAfter = admit.InfDuration
	}
	return d
}

func (q *Queue) check(n int64) error {
	switch {
	case n < 0:
		return fmt.Errorf("%w: %d slots requested", admit.ErrInvalidCost, n)
	case n > q.max:
		return fmt.Errorf("%w: %d slots requested, the limit is %d", admit.ErrExceedsBurst, n, q.max)
	}
	return nil
}

// TryAcquire takes n slots for flow if they are free and nobody waits; it
// never waits. If the request is admitted, the Permit holds the slots until
// its Release; otherwise it is the zero Permit. n = 0 is always admitted
// and holds nothing. The error is non-nil only for bad input (n < 0:
// admit.ErrInvalidCost; n > max: admit.ErrExceedsBurst), with a Decision
// that denies with RetryAfter admit.InfDuration. The context is not
// consulted.
func (q *Queue) TryAcquire(ctx context.Context, flow string, n int64) (Permit, admit.Decision, error) {
	return q.acquire(ctx, flow, n, false)
}

// Acquire takes n slots for flow, waiting for them if it must: at once if
// they are free and nobody waits (even if ctx is done), otherwise in the
// queue, in fair order (see Queue). It returns a Decision that admits
// with the Permit, or one that refuses, without an error, when the queue
// is full (QueueConfig.MaxWaiters) and the request does not displace another, or
// when a later request displaced it. If ctx ends first it returns ctx's
// error with a refusing Decision, and gives back slots granted just then.
// Errors for bad input are those of TryAcquire, and an error wrapping
// admit.ErrInvalidConfig ("fair: invalid weight") if QueueConfig.Weight
// returns a weight that is not a positive finite number.
func (q *Queue) Acquire(ctx context.Context, flow string, n int64) (Permit, admit.Decision, error) {
	return q.acquire(ctx, flow, n, true)
}

func (q *Queue) acquire(ctx context.Context, key string, n int64, wait bool) (Permit, admit.Decision, error) {
	if err := q.check(n); err != nil {
		q.mu.Lock()
		d := q.decision(false, n)
		q.mu.Unlock()
		d.RetryAfter = admit.InfDuration
		return Permit{}, d, err
	}
	w := 1.0
	if wait && q.weight != nil && n > 0 {
		// Asked before the lock: user code must not run under it.
		w = q.weight(key)
		if !(w > 0) || math.IsInf(w, 1) {
			return Permit{}, admit.Decision{Limit: admit.Limit{Rate: q.max, Burst: q.max}, Rule: q.name, Kind: admit.KindConcurrency},
				fmt.Errorf("%w: fair: invalid weight: flow %q has weight %v, want a positive finite number", admit.ErrInvalidConfig, truncate(key), w)
		}
	}
	q.mu.Lock()
	if n == 0 || (len(q.heap) == 0 && n <= q.max-q.inflight) {
		p := q.grant(n)
		d := q.decision(true, n)
		q.mu.Unlock()
		return p, d, nil
	}
	if !wait || q.maxWaiters == 0 {
		d := q.decision(false, n)
		q.mu.Unlock()
		return Permit{}, d, nil
	}
	start := q.now() // read before wt can be seen waiting
	wt := q.enqueue(key, n, w)
	if wt == nil {
		d := q.decision(false, n)
		q.mu.Unlock()
		return Permit{}, d, nil
	}
	q.serve() // wt may come first, and fit
	q.mu.Unlock()

	select {
	case <-wt.ready:
	case <-ctx.Done():
		end := q.now()
		q.mu.Lock()
		q.count(end - start)
		if !wt.granted && !wt.refused {
			q.remove(wt, true)
			q.serve()
			d := q.decision(false, n)
			q.mu.Unlock()
			return Permit{}, d, ctx.Err()
		}
		q.mu.Unlock()
		if wt.granted {
			wt.permit.Release()
		}
		q.mu.Lock()
		d := q.decision(false, n)
		q.mu.Unlock()
		return Permit{}, d, ctx.Err()
	}
	end := q.now()
	q.mu.Lock()
	q.count(end - start)
	d := q.decision(wt.granted, n)
	q.mu.Unlock()
	if !wt.granted {
		return Permit{}, d, nil
	}
	d.Allowed = true
	return wt.permit, d, nil
}

// grant takes n slots. It requires q.mu.
func (q *Queue) grant(n int64) Permit {
	if n == 0 {
		return Permit{}
	}
	q.inflight += n
	idx, id := q.g.add(n)
	return Permit{h: q, idx: idx, id: id}
}

// enqueue adds a waiter of n slots for key, of weight w, displacing the
// last waiter if the queue is full and the new one comes before it. It
// returns nil if the new waiter is refused. It requires q.mu.
func (q *Queue) enqueue(key string, n int64, w float64) *qwaiter {
	f := q.flows[key]
	prev := q.vtime
	if f != nil {
		w = f.w // a flow keeps its weight while it waits
		prev = math.Max(prev, f.finish)
	}
	finish := prev + float64(n)/w
	q.seq++
	if q.maxWaiters > 0 && len(q.heap) >= q.maxWaiters {
		last := q.last()
		if last == nil || !before(finish, q.seq, last.finish, last.seq) {
			return nil
		}
		last.refused = true
		q.remove(last, true)
		close(last.ready)
		f = q.flows[key] // the displaced waiter may have been its flow's last
		prev = q.vtime
		if f != nil {
			prev = math.Max(prev, f.finish)
		}
		finish = prev + float64(n)/w
	}
	if f == nil {
		f = &flow{key: key, w: w}
		q.flows[key] = f
	}
	wt := &qwaiter{f: f, n: n, venq: q.vtime, start: prev, finish: finish, seq: q.seq, ready: make(chan struct{})}
	wt.prev = f.tail
	if f.tail == nil {
		f.head = wt
	} else {
		f.tail.next = wt
	}
	f.tail, f.finish = wt, finish
	q.push(wt)
	return wt
}

// last returns the waiter that would be served last: the flow tail with
// the latest finish tag. It requires q.mu.
func (q *Queue) last() *qwaiter {
	var last *qwaiter
	for _, f := range q.flows {
		if t := f.tail; last == nil || before(last.finish, last.seq, t.finish, t.seq) {
			last = t
		}
	}
	return last
}

func before(f1 float64, s1 uint64, f2 float64, s2 uint64) bool {
	return f1 < f2 || (f1 == f2 && s1 < s2)
}

// remove takes wt out of the queue. A waiter that is served leaves its
// flow's tags as they are; one that leaves without being served (retag)
// moves the later waiters of its flow up as if it had never come. It
// requires q.mu.
func (q *Queue) remove(wt *qwaiter, retag bool) {
	q.heapRemove(wt.hi)
	f := wt.f
	if wt.prev == nil {
		f.head = wt.next
	} else {
		wt.prev.next = wt.next
	}
	if wt.next == nil {
		f.tail = wt.prev
	} else {
		wt.next.prev = wt.prev
	}
	if f.head == nil {
		delete(q.flows, f.key)
		q.idle()
		return
	}
	if !retag {
		return
	}
	finish := wt.start // the flow's finish tag before wt came
	if wt.prev != nil {
		finish = wt.prev.finish
	}
	for s := wt.next; s != nil; s = s.next {
		s.start = math.Max(math.Max(s.venq, finish), q.vtime)
		s.finish = s.start + float64(s.n)/f.w
		finish = s.finish
		q.heapFix(s.hi)
	}
	f.finish = finish
}

// idle resets the virtual time when nobody waits: every tag is relative
// to it, and no flow is remembered.
func (q *Queue) idle() {
	if len(q.heap) == 0 {
		q.vtime = 0
	}
}

// serve grants slots to waiters in tag order while the first fits. It
// requires q.mu.
func (q *Queue) serve() {
	for len(q.heap) > 0 {
		wt := q.heap[0]
		if wt.n > q.max-q.inflight {
			return
		}
		q.vtime = wt.finish
		q.remove(wt, false)
		wt.permit = q.grant(wt.n)
		wt.granted = true
		close(wt.ready)
	}
}

func (q *Queue) release(idx int32, id uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, ok := q.g.take(idx, id)
	if !ok {
		return false
	}
	q.inflight -= n
	q.serve()
	return true
}

// count counts a caller done waiting after d ns. It requires q.mu.
func (q *Queue) count(d int64) {
	q.waits++
	q.waited += max(d, 0)
}

// QueueStats describes a Queue at one instant.
type QueueStats struct {
	InFlight int64 // slots held
	Waiting  int   // requests waiting
	Flows    int   // flows with requests waiting
	// Waits is the number of callers of Acquire that waited in the queue
	// since NewQueue and are done waiting, whatever the outcome (granted,
	// displaced, or their context ended). A caller decided at once did
	// not wait.
	Waits uint64
	// Waited is the time those callers waited in all, measured by the
	// Queue's Clock (QueueConfig.Options): Waited / Waits is their mean
	// wait.
	Waited time.Duration
}

// Stats returns the Queue's current state and counts.
func (q *Queue) Stats() QueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return QueueStats{InFlight: q.inflight, Waiting: len(q.heap), Flows: len(q.flows), Waits: q.waits, Waited: time.Duration(q.waited)}
}

// Layer returns q as admit.Slots, for use as a layer of a compose.Chain:
// their TryAcquire is Queue.TryAcquire with the key as the flow, and the
// Permit's Release as the Releaser. As concurrency.Limiter.Slots does, it
// reports a request that could never be admitted (admit.ErrExceedsBurst)
// as a refusal, without an error. The Slots have no method beyond
// admit.Slots, and are safe for concurrent use.
func (q *Queue) Layer() admit.Slots { return queueLayer{q} }

// queueLayer is a Queue seen as admit.Slots, for Queue.Layer.
type queueLayer struct{ q *Queue }

// TryAcquire is Queue.TryAcquire, with the Permit as a admit.Releaser.
func (l queueLayer) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	p, d, err := l.q.TryAcquire(ctx, r.Key, r.N)
	if err != nil && errorsIsExceeds(err) {
		err = nil
	}
	return asReleaser(p), d, err
}

// The heap of waiters, by finish tag then arrival.

// waiters is the Queue's heap as a container/heap.Interface (a type of
// its own, so that Queue gets no exported methods); Push and Pop are
// there for the interface: the heap moves by heap.Fix.
type waiters struct{ q *Queue }

func (w waiters) Len() int { return len(w.q.heap) }

func (w waiters) Less(i, j int) bool {
	a, b := w.q.heap[i], w.q.heap[j]
	return before(a.finish, a.seq, b.finish, b.seq)
}

func (w waiters) Swap(i, j int) {
	h := w.q.heap
	h[i], h[j] = h[j], h[i]
	h[i].hi, h[j].hi = i, j
}

func (w waiters) Push(x any) { w.q.heap = append(w.q.heap, x.(*qwaiter)) }

func (w waiters) Pop() any {
	h := w.q.heap
	wt := h[len(h)-1]
	h[len(h)-1] = nil // no reference kept past the end
	w.q.heap = h[:len(h)-1]
	return wt
}

func (q *Queue) push(wt *qwaiter) {
	wt.hi = len(q.heap)
	q.heap = append(q.heap, wt)
	heap.Fix(waiters{q}, wt.hi)
}

func (q *Queue) heapRemove(i int) {
	heap.Remove(waiters{q}, i)
}

func (q *Queue) heapFix(i int) { heap.Fix(waiters{q}, i) }
