package main

import (
	"math"
	"slices"
	"time"
)

// event is one admitted check: the instants its request left and its
// answer arrived, in ns on the machine's monotonic clock from the start
// of the run. The store decided it at some instant between the two.
type event struct{ sent, recv int64 }

// limit is the bound checked: at most burst + t/per events over any
// interval of length t.
type limit struct {
	burst float64
	per   time.Duration // the emission interval T (Period / Rate)
}

// allowed returns B + t/T for an interval of t ns.
func (l limit) allowed(t int64) float64 { return l.burst + float64(t)/float64(l.per) }

// window is one interval [from, to] and the admitted events in it.
type window struct {
	from, to int64
	count    int
}

// excess returns how many events w holds beyond l's bound.
func (l limit) excess(w window) float64 { return float64(w.count) - l.allowed(w.to-w.from) }

// worstWindow returns the window [recv[i], recv[j]] with the largest
// excess over l, of every window from one admitted answer to another:
// the worst window of any length, since a window's excess can only grow
// when its ends move onto events. recv must be sorted. The excess of
// (i, j) is (j+1 - recv[j]/T) - (i - recv[i]/T) - B, so a running minimum
// of the second term finds it in one pass.
func worstWindow(recv []int64, l limit) window {
	if len(recv) == 0 {
		return window{}
	}
	per := float64(l.per)
	at := func(i int) float64 { return float64(i) - float64(recv[i])/per }
	best := window{recv[0], recv[0], 1}
	lo := 0
	for j := range recv {
		if at(j) < at(lo) {
			lo = j
		}
		w := window{recv[lo], recv[j], j - lo + 1}
		if l.excess(w) > l.excess(best) {
			best = w
		}
	}
	return best
}

// busiest returns the window of length t holding the most admitted
// answers, sliding its start over recv (sorted).
func busiest(recv []int64, t int64) window {
	best := window{}
	j := 0
	for i, a := range recv {
		for j < len(recv) && recv[j] <= a+t {
			j++
		}
		if j-i > best.count {
			best = window{a, a + t, j - i}
		}
	}
	return best
}

// provenWindow returns the window [a, b] with the largest excess over l
// counting only the events whose whole [sent, recv] lies in it: events
// the store certainly decided inside [a, b], whatever the latencies. A
// positive excess there is an overshoot no delay can explain.
//
// Candidate windows run from some sent instant a to some recv instant b.
// Events are added by decreasing sent; each adds 1 to the count of every
// b at or after its recv. A segment tree over the sorted recv instants
// holds count(b) - b/T, so the best b for the current a is one range
// maximum: O(n log n).
func provenWindow(events []event, l limit) window {
	n := len(events)
	if n == 0 {
		return window{}
	}
	recv := make([]int64, n)
	for i, e := range events {
		recv[i] = e.recv
	}
	slices.Sort(recv)
	bySent := slices.Clone(events)
	slices.SortFunc(bySent, func(x, y event) int { return -cmpInt64(x.sent, y.sent) })
	per := float64(l.per)
	t := newMaxTree(n, func(k int) float64 { return -float64(recv[k]) / per })
	var best window
	var bestExcess float64
	first := true
	for i := 0; i < n; {
		a := bySent[i].sent
		for ; i < n && bySent[i].sent == a; i++ {
			k, _ := slices.BinarySearch(recv, bySent[i].recv)
			t.add(k, n, 1)
		}
		from, _ := slices.BinarySearch(recv, a)
		v, k := t.max(from, n)
		if e := v + float64(a)/per - l.burst; first || e > bestExcess {
			best = window{a, recv[k], int(math.Round(v + float64(recv[k])/per))}
			bestExcess, first = e, false
		}
	}
	return best
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// maxTree is a segment tree over n values with range add and range
// maximum (and where it is).
type maxTree struct {
	n    int
	top  []float64 // the maximum of the node's range, its own lazy included
	arg  []int     // where that maximum is
	lazy []float64 // what was added to the node's whole range
}

func newMaxTree(n int, value func(int) float64) *maxTree {
	t := &maxTree{n: n, top: make([]float64, 4*n), arg: make([]int, 4*n), lazy: make([]float64, 4*n)}
	t.build(1, 0, n, value)
	return t
}

func (t *maxTree) build(node, lo, hi int, value func(int) float64) {
	if hi-lo == 1 {
		t.top[node], t.arg[node] = value(lo), lo
		return
	}
	mid := (lo + hi) / 2
	t.build(2*node, lo, mid, value)
	t.build(2*node+1, mid, hi, value)
	t.pull(node)
}

func (t *maxTree) pull(node int) {
	l, r := 2*node, 2*node+1
	if t.top[r] > t.top[l] {
		t.top[node], t.arg[node] = t.top[r]+t.lazy[node], t.arg[r]
	} else {
		t.top[node], t.arg[node] = t.top[l]+t.lazy[node], t.arg[l]
	}
}

// add adds d to the values [from, to).
func (t *maxTree) add(from, to int, d float64) { t.addAt(1, 0, t.n, from, to, d) }

func (t *maxTree) addAt(node, lo, hi, from, to int, d float64) {
	if to <= lo || hi <= from {
		return
	}
	if from <= lo && hi <= to {
		t.top[node] += d
		t.lazy[node] += d
		return
	}
	mid := (lo + hi) / 2
	t.addAt(2*node, lo, mid, from, to, d)
	t.addAt(2*node+1, mid, hi, from, to, d)
	t.pull(node)
}

// max returns the largest of the values [from, to) and its index.
func (t *maxTree) max(from, to int) (float64, int) { return t.maxAt(1, 0, t.n, from, to) }

func (t *maxTree) maxAt(node, lo, hi, from, to int) (float64, int) {
	if from <= lo && hi <= to {
		return t.top[node], t.arg[node]
	}
	mid := (lo + hi) / 2
	switch {
	case to <= mid:
		v, k := t.maxAt(2*node, lo, mid, from, to)
		return v + t.lazy[node], k
	case from >= mid:
		v, k := t.maxAt(2*node+1, mid, hi, from, to)
		return v + t.lazy[node], k
	}
	lv, lk := t.maxAt(2*node, lo, mid, from, to)
	rv, rk := t.maxAt(2*node+1, mid, hi, from, to)
	if rv > lv {
		return rv + t.lazy[node], rk
	}
	return lv + t.lazy[node], lk
}
