package sim

import "container/heap"

// The run's events, in a binary heap by instant, then by the order they
// were scheduled in (so that a run is deterministic).

const (
	evArrival = iota // a client's next request
	evRetry          // a client's retry of a refused request
	evDone           // the backend is done with a request
)

type event struct {
	at      int64  // nanoseconds since the run's start
	seq     uint64 // order of scheduling, among events of one instant
	kind    uint8
	attempt uint16 // evRetry: the attempt it is, from 2
	rep     int32  // the client (index into run.reps)
	slot    int32  // evDone: the request's slot in the backend; evRetry: its replay line
}

type events struct {
	h   []event
	seq uint64
}

// events is a container/heap.Interface; push and pop go through heap.Fix,
// which boxes no event.
func (q *events) Len() int { return len(q.h) }

func (q *events) Less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (q *events) Swap(i, j int) { q.h[i], q.h[j] = q.h[j], q.h[i] }
func (q *events) Push(x any)    { q.h = append(q.h, x.(event)) }

func (q *events) Pop() any {
	e := q.h[len(q.h)-1]
	q.h = q.h[:len(q.h)-1]
	return e
}

func (q *events) push(e event) {
	q.seq++
	e.seq = q.seq
	q.h = append(q.h, e)
	heap.Fix(q, len(q.h)-1)
}

func (q *events) pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	if n > 0 {
		heap.Fix(q, 0)
	}
	return top
}
