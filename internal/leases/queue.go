package leases

import (
	"container/heap"
	"time"
)

// Expiry is when an element of a Queue expires, and its place there.
type Expiry struct {
	// At is the instant the element expires. Change it only while the
	// element is out of its Queue, or through Queue.Move.
	At  time.Time
	idx int
}

// Expiring is an element of a Queue: a pointer to a value holding an
// Expiry.
type Expiring interface {
	Expiry() *Expiry
}

// Queue is a heap of elements by the instant they expire, the earliest
// first: the leases of admit serve's lease table, a Tally's grants. The
// zero Queue is empty. A Queue is not safe for concurrent use.
type Queue[E Expiring] struct{ h expiryHeap[E] }

// Len returns the number of elements in q.
func (q *Queue[E]) Len() int { return len(q.h) }

// Push adds e to q; it reports whether e is now the earliest.
func (q *Queue[E]) Push(e E) bool {
	heap.Push(&q.h, e)
	return e.Expiry().idx == 0
}

// Remove removes e, an element of q, from q.
func (q *Queue[E]) Remove(e E) { heap.Remove(&q.h, e.Expiry().idx) }

// Move sets the instant e, an element of q, expires to at; it reports
// whether e is now the earliest.
func (q *Queue[E]) Move(e E, at time.Time) bool {
	x := e.Expiry()
	x.At = at
	heap.Fix(&q.h, x.idx)
	return x.idx == 0
}

// First returns the element of q that expires first, and false if q is
// empty.
func (q *Queue[E]) First() (E, bool) {
	if len(q.h) == 0 {
		var zero E
		return zero, false
	}
	return q.h[0], true
}

// PopExpired removes and returns the element of q that expires first if
// it has expired at now (its instant is not after now), and false if
// none has.
func (q *Queue[E]) PopExpired(now time.Time) (E, bool) {
	if e, ok := q.First(); !ok || e.Expiry().At.After(now) {
		var zero E
		return zero, false
	}
	return heap.Pop(&q.h).(E), true
}

// Clear empties q.
func (q *Queue[E]) Clear() { q.h = nil }

// expiryHeap is Queue's heap.Interface.
type expiryHeap[E Expiring] []E

func (h expiryHeap[E]) Len() int           { return len(h) }
func (h expiryHeap[E]) Less(i, j int) bool { return h[i].Expiry().At.Before(h[j].Expiry().At) }

func (h expiryHeap[E]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].Expiry().idx, h[j].Expiry().idx = i, j
}

func (h *expiryHeap[E]) Push(x any) {
	e := x.(E)
	e.Expiry().idx = len(*h)
	*h = append(*h, e)
}

func (h *expiryHeap[E]) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	var zero E
	old[n-1] = zero
	*h = old[:n-1]
	return e
}
