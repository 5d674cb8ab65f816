package algo

import (
	"encoding/binary"
	"slices"
	"testing"
)

// TestGCRADelay: a request that fits within the bound is admitted with its
// wait as RetryAfter and holds its slot; one that does not is denied as by
// GCRAStep; a delayed admission undone at its time to act restores the
// state it was admitted on, unless a later one relies on it.
func TestGCRADelay(t *testing.T) {
	p := mustCompile(t, 10, 1e9, 2) // T = 100ms, C = 200ms
	var s GCRA
	s, _ = GCRAStep(s, &p, 0, 2) // empty: TAT = 200ms
	before := s
	s1, r := GCRADelay(s, &p, 0, 1, 100e6)
	if !r.Allowed || r.RetryAfter != 100e6 || r.Remaining != 0 || r.ResetAfter != 300e6 || s1.At != 300e6 {
		t.Fatalf("delayed 100ms: %+v %+v", r, s1)
	}
	if s2, r := GCRADelay(s1, &p, 0, 1, 199e6); r.Allowed || r.RetryAfter != 200e6 || s2 != s1 {
		t.Fatalf("beyond the bound: %+v %+v, want a denial changing nothing", r, s2)
	}
	if _, r := GCRADelay(s1, &p, 0, 3, Never-1); r.Allowed || r.RetryAfter != Never {
		t.Fatalf("above the burst: %+v", r)
	}
	if s2, r := GCRADelay(GCRA{}, &p, 0, 1, 100e6); !r.Allowed || r.RetryAfter != 0 || s2.At != 100e6 {
		t.Fatalf("fits now: %+v %+v", r, s2)
	}
	// Undone at its time to act (100ms): back to the state before.
	if u := GCRAUndo(s1, &p, 100e6, 1); u != before {
		t.Fatalf("undo at the time to act: %+v, want %+v", u, before)
	}
	// Undone before it (the debt there passes the capacity): nothing.
	if u := GCRAUndo(s1, &p, 50e6, 1); u != s1 {
		t.Fatalf("undo before the time to act: %+v, want %+v", u, s1)
	}
	// A later delayed admission relies on it: nothing comes back.
	s2, r := GCRADelay(s1, &p, 10e6, 1, 300e6)
	if !r.Allowed || r.RetryAfter != 190e6 {
		t.Fatalf("second: %+v", r)
	}
	if u := GCRAUndo(s2, &p, 100e6, 1); u != s2 {
		t.Fatalf("undo of the first under the second: %+v, want %+v", u, s2)
	}
	// The latest one is given back at its own time to act.
	if u := GCRAUndo(s2, &p, 200e6, 1); u != s1 {
		t.Fatalf("undo of the latest: %+v, want %+v", u, s1)
	}
}

// FuzzDelay: under any timeline of delayed admissions and cancellations
// (each undone at its time to act, before it comes), the events that act,
// at their times to act, never pass the bound B + ⌊t/T⌋; the wait is
// exact (GCRAStep admits the request at now + wait and not 1ns before);
// a bucket decides as GCRA does on a forward timeline. (Limits of at
// least 1ns per event: below, times to act rounded up to the nanosecond
// may share one.)
func FuzzDelay(f *testing.F) {
	f.Add(uint16(3), uint16(5), uint16(2), []byte{0, 0, 1, 9, 0, 0, 1, 9, 0, 0, 129, 9, 1, 0, 1, 9})
	f.Add(uint16(7), uint16(9), uint16(4), []byte{0, 0, 3, 255, 0, 0, 3, 255, 0, 0, 131, 255, 0, 0, 2, 40})
	f.Fuzz(func(t *testing.T, rate, period, burst uint16, data []byte) {
		p, err := fuzzLimit(rate, period, burst)
		if err != nil || p.Mode != Normal || p.Tn < p.Td {
			return
		}
		type pending struct {
			act, n        int64
			before, after GCRA
		}
		var (
			g       GCRA
			b       Bucket
			now     int64 = 1e12
			held    []pending
			t1      = min(p.Tn/p.Td, 1e12) + 1 // about T, bounded
			actions []event
		)
		for ; len(data) >= 4; data = data[4:] {
			now += int64(binary.LittleEndian.Uint16(data)) * t1 / 64
			n := int64(data[2]%8) + 1
			maxDelay := int64(data[3]) * t1 / 8
			if data[2] >= 128 && len(held) > 0 { // cancel the latest held one
				h := held[len(held)-1]
				if h.act > now {
					// The latest is given back (to the state it was
					// admitted on, or to full at its time to act);
					// any other is kept.
					want := g
					if g == h.after {
						if want = h.before; h.before.debt(&p, h.act) == (u128{}) {
							want = GCRA{At: h.act}
						}
					}
					u := GCRAUndo(g, &p, h.act, h.n)
					if u != want {
						t.Fatalf("undo at %d of %+v from %+v: %+v, want %+v", h.act, h, g, u, want)
					}
					g = u
					b = BucketUndo(b, &p, h.act, h.n)
					held = held[:len(held)-1]
					continue
				}
			}
			g0 := g
			var r, rb Result
			g, r = GCRADelay(g, &p, now, n, maxDelay)
			b, rb = BucketDelay(b, &p, now, n, maxDelay)
			if r != rb {
				t.Fatalf("gcra %+v, bucket %+v at %d n=%d", r, rb, now, n)
			}
			if !r.Allowed {
				if r.RetryAfter <= maxDelay && r.RetryAfter != Never {
					t.Fatalf("denied %+v within %d", r, maxDelay)
				}
				continue
			}
			if r.RetryAfter > maxDelay {
				t.Fatalf("admitted %+v beyond %d", r, maxDelay)
			}
			if r.RetryAfter > 0 {
				if _, ok := GCRAAllow(g0, &p, now+r.RetryAfter, n); !ok {
					t.Fatalf("%+v: not admitted at the time to act", r)
				}
				if _, ok := GCRAAllow(g0, &p, now+r.RetryAfter-1, n); ok {
					t.Fatalf("%+v: admitted 1ns before the time to act", r)
				}
			}
			held = append(held, pending{act: now + r.RetryAfter, n: n, before: g0, after: g})
		}
		for _, h := range held {
			actions = append(actions, event{h.act, h.n})
		}
		slices.SortFunc(actions, func(a, b event) int { return int(a.at - b.at) })
		// A time to act is its exact slot rounded up to the nanosecond, so
		// with a fractional T the events acting in [a, b] had their slots
		// in (a-1, b]: the bound is of that interval.
		slack := int64(0)
		if p.Td > 1 {
			slack = 1
		}
		for i := range actions {
			sum := int64(0)
			for j := i; j < len(actions); j++ {
				sum += actions[j].n
				span := actions[j].at - actions[i].at + slack
				if most := p.Burst + mul64(uint64(span), uint64(p.Td)).div63(uint64(p.Tn)); sum > most {
					t.Fatalf("%+v: %d events act in [%d, %d] > %d", p, sum, actions[i].at, actions[j].at, most)
				}
			}
		}
	})
}
