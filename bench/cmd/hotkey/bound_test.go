package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// bruteWorst is worstWindow by trying every pair of answers.
func bruteWorst(recv []int64, l limit) float64 {
	best := -1e18
	for i := range recv {
		for j := i; j < len(recv); j++ {
			n := 0
			for _, r := range recv {
				if r >= recv[i] && r <= recv[j] {
					n++
				}
			}
			best = max(best, l.excess(window{recv[i], recv[j], n}))
		}
	}
	return best
}

// bruteProven is provenWindow by trying every sent instant against every
// recv instant.
func bruteProven(events []event, l limit) float64 {
	best := -1e18
	for _, a := range events {
		for _, b := range events {
			if b.recv < a.sent {
				continue
			}
			n := 0
			for _, e := range events {
				if e.sent >= a.sent && e.recv <= b.recv {
					n++
				}
			}
			best = max(best, l.excess(window{a.sent, b.recv, n}))
		}
	}
	return best
}

func TestWindowsAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	l := limit{burst: 3, per: time.Millisecond}
	for round := range 300 {
		n := 1 + r.IntN(40)
		events := make([]event, n)
		for i := range events {
			s := r.Int64N(int64(20 * time.Millisecond))
			if round%3 == 0 {
				s -= s % int64(time.Millisecond) // ties
			}
			events[i] = event{s, s + r.Int64N(int64(3*time.Millisecond))}
		}
		recv := make([]int64, n)
		for i, e := range events {
			recv[i] = e.recv
		}
		slices.Sort(recv)
		w := worstWindow(recv, l)
		if got, want := l.excess(w), bruteWorst(recv, l); !near(got, want) {
			t.Fatalf("round %d: worstWindow excess %v (%+v), brute force %v", round, got, w, want)
		}
		p := provenWindow(events, l)
		if got, want := l.excess(p), bruteProven(events, l); !near(got, want) {
			t.Fatalf("round %d: provenWindow excess %v (%+v), brute force %v", round, got, p, want)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestGCRATimeline: the admissions of an exact GCRA (a burst at 0, then
// one every T) meet the bound with no excess, and one event more exceeds
// it by one.
func TestGCRATimeline(t *testing.T) {
	l := limit{burst: 100, per: time.Millisecond}
	var recv []int64
	for range 100 {
		recv = append(recv, 0)
	}
	for i := int64(1); i <= 1000; i++ {
		recv = append(recv, i*int64(time.Millisecond))
	}
	if e := l.excess(worstWindow(recv, l)); !near(e, 0) {
		t.Errorf("exact GCRA: worst excess %v, want 0", e)
	}
	if w := busiest(recv, int64(10*time.Millisecond)); w.count != 110 {
		t.Errorf("busiest 10 ms window holds %d, want 110", w.count)
	}
	more := append(slices.Clone(recv), int64(500*time.Millisecond))
	slices.Sort(more)
	if e := l.excess(worstWindow(more, l)); !near(e, 1) {
		t.Errorf("one event too many: worst excess %v, want 1", e)
	}
	events := make([]event, len(more))
	for i, r := range more {
		events[i] = event{r, r}
	}
	if e := l.excess(provenWindow(events, l)); !near(e, 1) {
		t.Errorf("one event too many: proven excess %v, want 1", e)
	}
}
