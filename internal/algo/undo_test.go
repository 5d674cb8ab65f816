package algo

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"
)

// The undo functions give back events admitted at an instant. Their rules,
// checked here for every algorithm:
//
//   - Right after an admission at now, an undo of the same n at now leaves
//     a state that decides as if the request had never been admitted (a
//     peek instead), at every instant from now on.
//   - An undo never makes a state more restrictive, at any instant: no
//     fewer Remaining, no longer ResetAfter; and never more capacity than
//     the burst, nor a negative count.
//   - A window algorithm gives back nothing in a later window than the one
//     the events were counted in (the log: once they are W old).
//   - n <= 0 and the degenerate modes change nothing.

// undoer is a machine that can also give back events.
type undoer interface {
	machine
	undo(now, n int64)
}

func (m *gcraM) undo(now, n int64)    { m.s = GCRAUndo(m.s, m.p, now, n) }
func (m *bucketM) undo(now, n int64)  { m.s = BucketUndo(m.s, m.p, now, n) }
func (m *fixedM) undo(now, n int64)   { m.s = FixedWindowUndo(m.s, m.p, now, n) }
func (m *slidingM) undo(now, n int64) { m.s = SlidingWindowUndo(m.s, m.p, now, n) }
func (m *logM) undo(now, n int64)     { m.s.SlidingLogUndo(m.p, now, n) }

// report is the decision a peek at now gets, without changing m.
func report(m machine, now int64) Result { return m.clone().step(now, 0) }

// checkLooser fails unless after decides at least as loosely as before at
// each instant of at: as many Remaining or more, a ResetAfter as short or
// shorter, never more than the burst.
func checkLooser(t *testing.T, where string, p *Params, before, after machine, at ...int64) {
	t.Helper()
	for _, now := range at {
		now = Clamp(now)
		b, a := report(before, now), report(after, now)
		if a.Remaining < b.Remaining || a.ResetAfter > b.ResetAfter || (p.Mode == Normal && a.Remaining > p.Burst) {
			t.Fatalf("%s: at %d the undo made %+v of %+v", where, now, a, b)
		}
	}
	checkSane(t, where, after)
}

// checkSane fails on a state no step can produce: negative counts, a
// negative level, a log whose sum is not that of its entries.
func checkSane(t *testing.T, where string, m machine) {
	t.Helper()
	bad := false
	switch m := m.(type) {
	case *gcraM:
		bad = m.s.At < 0 || m.s.Frac < 0 || (m.p.Mode == Normal && m.s.Frac >= m.p.Td)
	case *bucketM:
		bad = m.s.Level < 0 || m.s.Last < 0
	case *fixedM:
		bad = m.s.Count < 0
	case *slidingM:
		bad = m.s.Cur < 0 || m.s.Prev < 0
	case *logM:
		sum := int64(0)
		for i := 0; i < m.s.size; i++ {
			e := m.s.at(i)
			if e.N <= 0 || (i > 0 && e.At <= m.s.at(i-1).At) {
				bad = true
			}
			sum += e.N
		}
		bad = bad || sum != m.s.sum
	}
	if bad {
		t.Fatalf("%s: insane state %+v", where, m)
	}
}

// FuzzUndo runs a forward timeline through two machines of each algorithm:
// one admits requests and gives some of them back at once (an undo of the
// same n at the same instant), the other gets a peek instead of each of
// those. They must decide every other request identically. Other undos,
// of any size, at the instant or later, check that an undo never tightens
// a state.
func FuzzUndo(f *testing.F) {
	f.Add(uint16(3), uint16(5), uint16(2), int64(0), []byte{0, 0, 1, 0, 0, 129, 0, 0, 1, 100, 0, 1})
	f.Add(uint16(99), uint16(6), uint16(0), int64(1e18), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 255, 255, 250, 3, 3, 131})
	f.Add(uint16(6), uint16(37), uint16(13), int64(17), []byte("the quick brown fox jumps over the lazy dog"))
	f.Add(uint16(60001), uint16(8), uint16(0), int64(5e17), []byte{9, 9, 129, 9, 9, 66, 200, 1, 193, 0, 0, 130})
	f.Fuzz(func(t *testing.T, rate, period, burst uint16, start int64, data []byte) {
		p, err := fuzzLimit(rate, period, burst)
		if err != nil {
			t.Skip()
		}
		start = Clamp(start) / 2
		if len(data) > 600 {
			data = data[:600]
		}
		var bucketResults, gcraResults []Result
		for _, mk := range machines {
			if mk.window && p.CheckWindow() != nil {
				continue
			}
			a, b := mk.make(&p).(undoer), mk.make(&p)
			now := start
			var results []Result
			for d := data; len(d) >= 3; d = d[3:] {
				dt := int64(binary.LittleEndian.Uint16(d)) * (p.Tn/p.Td/64 + 1) / 16
				now += dt
				n := int64(d[2] % 8)
				where := fmt.Sprintf("%s %+v at %d n=%d", mk.name, p, now-start, n)
				switch op := d[2] >> 6; {
				case op == 2 && n > 0:
					// Admit and give back at once; b peeks instead.
					before := a.clone()
					r := a.step(now, n)
					results = append(results, r)
					if !r.Allowed {
						if rb := b.step(now, n); rb != r {
							t.Fatalf("%s: %+v, but %+v without the requests given back", where, r, rb)
						}
						continue
					}
					a.undo(now, n)
					b.step(now, 0)
					for _, at := range []int64{now, now + 1, now + int64(p.Window()), now + r.ResetAfter, now + 3*dt} {
						if ra, rb := report(a, Clamp(at)), report(before, Clamp(at)); ra != rb {
							t.Fatalf("%s: after the undo, at +%d: %+v; before the admission: %+v", where, at-now, ra, rb)
						}
					}
				case op == 3 && n > 0:
					// An undo of any size, at now, of events admitted
					// earlier (or never): it may only loosen. b follows
					// it, so that they stay comparable.
					m := n * int64(d[1]%5+1)
					before := a.clone()
					a.undo(now, m)
					b.(undoer).undo(now, m)
					checkLooser(t, where, &p, before, a, now-dt, now, now+1, now+dt, now+int64(p.Window()), now+p.Burst*p.Tn/p.Td)
				default:
					ra, rb := a.step(now, n), b.step(now, n)
					if ra != rb {
						t.Fatalf("%s: %+v, but %+v without the requests given back", where, ra, rb)
					}
					results = append(results, ra)
				}
				checkSane(t, where, a)
			}
			switch mk.name {
			case "gcra":
				gcraResults = results
			case "bucket":
				bucketResults = results
			}
		}
		// On a forward timeline, GCRA and the bucket still agree.
		for i := range gcraResults {
			if gcraResults[i] != bucketResults[i] {
				t.Fatalf("%+v: decision %d: gcra %+v, bucket %+v", p, i, gcraResults[i], bucketResults[i])
			}
		}
	})
}

// FuzzUndoAnywhere gives back events of any size at any instant, before or
// after the state's, among steps that go backwards too: an undo never
// tightens a state, and the decisions after it keep every exactness
// property FuzzInvariants checks.
func FuzzUndoAnywhere(f *testing.F) {
	f.Add(uint16(3), uint16(5), uint16(2), int64(0), []byte{0, 0, 1, 0, 0, 129, 0, 0, 241, 100, 0, 1, 7, 0, 200})
	f.Add(uint16(7), uint16(2), uint16(9), int64(3e17), []byte("backwards and forwards and back again, refunding"))
	f.Fuzz(func(t *testing.T, rate, period, burst uint16, start int64, data []byte) {
		p, err := fuzzLimit(rate, period, burst)
		if err != nil {
			t.Skip()
		}
		start = Clamp(start) / 2
		if len(data) > 300 {
			data = data[:300]
		}
		for _, mk := range machines {
			if mk.window && p.CheckWindow() != nil {
				continue
			}
			m := mk.make(&p).(undoer)
			now := start
			for d := data; len(d) >= 4; d = d[4:] {
				dt := int64(binary.LittleEndian.Uint16(d)) * (p.Tn/p.Td/64 + 1) / 16
				if d[3]&1 == 1 && now-dt >= 0 {
					dt = -dt
				}
				now += dt
				n := int64(d[2] % 8)
				where := fmt.Sprintf("%s %+v at %d n=%d", mk.name, p, now-start, n)
				if d[3]&2 != 0 {
					if d[3]&4 != 0 {
						n = math.MaxInt64 >> (d[2] % 64)
					}
					before := m.clone()
					m.undo(now, n)
					checkLooser(t, where, &p, before, m, now-2*dt, now-1, now, now+1, now+int64(p.Window()), now+p.Burst*p.Tn/p.Td+1)
					continue
				}
				before := m.clone()
				r := m.step(now, n)
				checkStep(t, where, &p, before, m, now, n, r)
			}
		}
	})
}

// checkStep checks a decision's exactness as checkTimeline does: RetryAfter,
// Remaining and ResetAfter are exact, from the states before and after.
func checkStep(t *testing.T, where string, p *Params, before, after machine, now, n int64, r Result) {
	t.Helper()
	switch {
	case n > p.Burst:
		if r.Allowed || r.RetryAfter != Never {
			t.Fatalf("%s: n > burst got %+v", where, r)
		}
	case n == 0 || r.Allowed:
		if !r.Allowed || r.RetryAfter != 0 {
			t.Fatalf("%s: got %+v", where, r)
		}
	default:
		if !before.clone().step(now+r.RetryAfter, n).Allowed || before.clone().step(now+r.RetryAfter-1, n).Allowed {
			t.Fatalf("%s: denied %+v: RetryAfter not exact", where, r)
		}
	}
	if r.Remaining > 0 && !after.clone().step(now, r.Remaining).Allowed {
		t.Fatalf("%s: Remaining %d not admitted", where, r.Remaining)
	}
	if r.Remaining < p.Burst && after.clone().step(now, r.Remaining+1).Allowed {
		t.Fatalf("%s: Remaining %d but %d admitted", where, r.Remaining, r.Remaining+1)
	}
	if got := report(after, now+r.ResetAfter).Remaining; got != p.Burst {
		t.Fatalf("%s: %+v: Remaining %d after ResetAfter", where, r, got)
	}
	if r.ResetAfter > 0 && report(after, now+r.ResetAfter-1).Remaining == p.Burst {
		t.Fatalf("%s: %+v: full 1ns before ResetAfter", where, r)
	}
}

// TestUndo checks each algorithm on hand-worked cases.
func TestUndo(t *testing.T) {
	const s = int64(time.Second)
	t0 := int64(1_767_225_600) * s // a window boundary for the limits below
	p, err := Compile(10, s, 5)    // T = 100ms, B = 5, W = 500ms
	if err != nil {
		t.Fatal(err)
	}
	for _, mk := range machines {
		t.Run(mk.name, func(t *testing.T) {
			m := mk.make(&p).(undoer)
			full := report(m, t0)
			// Nothing to give back: the state stays as it is.
			m.undo(t0, 3)
			if got := report(m, t0); got != full {
				t.Fatalf("undo of a full state: %+v, want %+v", got, full)
			}
			if r := m.step(t0, 3); !r.Allowed || r.Remaining != 2 {
				t.Fatalf("step: %+v", r)
			}
			m.undo(t0, 2)
			if r := report(m, t0); r.Remaining != 4 {
				t.Fatalf("after giving back 2 of 3: %+v", r)
			}
			m.undo(t0, 100) // more than was admitted: full, not more
			if r := report(m, t0); r != full {
				t.Fatalf("after giving back 100: %+v, want %+v", r, full)
			}
			// n <= 0 changes nothing.
			m.step(t0, 5)
			busy := report(m, t0)
			m.undo(t0, 0)
			m.undo(t0, -7)
			if r := report(m, t0); r != busy {
				t.Fatalf("undo of n <= 0: %+v, want %+v", r, busy)
			}
			// Later in the same window (or 150ms later for the buckets,
			// which have drained 1.5 events): 2 come back.
			later := t0 + 150*int64(time.Millisecond)
			want := report(m, later)
			m.undo(later, 2)
			got := report(m, later)
			if got.Remaining != want.Remaining+2 {
				t.Fatalf("undo of 2 at +150ms: %+v, before %+v", got, want)
			}
			// In the next window (W = 500ms) nothing comes back for the
			// windows; the buckets drain to empty and stay there.
			next := t0 + 500*int64(time.Millisecond) + 1
			before := m.clone()
			m.undo(next, 1)
			if mk.window {
				for _, at := range []int64{t0, next, next + s} {
					if a, b := report(m, at), report(before, at); a != b {
						t.Fatalf("undo in the next window changed the decision at %d: %+v, was %+v", at-t0, a, b)
					}
				}
			}
		})
	}
}

// TestUndoDegenerate: the unlimited and closed modes have no state to give
// back to.
func TestUndoDegenerate(t *testing.T) {
	for _, p := range []Params{{Mode: Unlimited}, {Mode: Closed}} {
		for _, mk := range machines {
			m := mk.make(&p).(undoer)
			m.undo(5, 3)
			switch m := m.(type) {
			case *gcraM:
				if m.s != (GCRA{}) {
					t.Errorf("%s %v: %+v", mk.name, p.Mode, m.s)
				}
			case *bucketM:
				if m.s != (Bucket{}) {
					t.Errorf("%s %v: %+v", mk.name, p.Mode, m.s)
				}
			case *logM:
				if m.s.Len() != 0 {
					t.Errorf("%s %v: %+v", mk.name, p.Mode, m.s)
				}
			}
		}
	}
	// A GCRA state with a debt keeps it under a degenerate limit.
	s := GCRA{At: 100, Frac: 0}
	if got := GCRAUndo(s, &Params{Mode: Unlimited}, 50, 1); got != s {
		t.Errorf("unlimited: %+v", got)
	}
}

// TestSlidingLogUndoEntries checks which entries a log gives back: the
// newest first, never those W old, and an emptied log is empty.
func TestSlidingLogUndoEntries(t *testing.T) {
	p, err := Compile(10, 10, 10) // W = 10ns, B = 10
	if err != nil {
		t.Fatal(err)
	}
	l := new(SlidingLog)
	for _, e := range []LogEntry{{100, 2}, {103, 3}, {105, 1}} {
		if r := l.SlidingLogStep(&p, e.At, e.N); !r.Allowed {
			t.Fatal(e, r)
		}
	}
	entries := func() []LogEntry {
		var out []LogEntry
		for i := 0; i < l.size; i++ {
			out = append(out, *l.at(i))
		}
		return out
	}
	l.SlidingLogUndo(&p, 105, 2) // the entry at 105, then one at 103
	if got := fmt.Sprint(entries(), l.Sum()); got != "[{100 2} {103 2}] 4" {
		t.Fatalf("got %s", got)
	}
	l.SlidingLogUndo(&p, 101, 1) // before the newest: as at 103
	if got := fmt.Sprint(entries(), l.Sum()); got != "[{100 2} {103 1}] 3" {
		t.Fatalf("got %s", got)
	}
	l.SlidingLogUndo(&p, 110, 5) // 100 is W old at 110: only 103's
	if got := fmt.Sprint(entries(), l.Sum()); got != "[{100 2}] 2" {
		t.Fatalf("got %s", got)
	}
	l.SlidingLogUndo(&p, 110, 5)
	if got := fmt.Sprint(entries(), l.Sum()); got != "[{100 2}] 2" {
		t.Fatalf("got %s", got)
	}
	l.SlidingLogUndo(&p, 109, 5)
	if l.Len() != 0 || l.Sum() != 0 || l.head != 0 {
		t.Fatalf("emptied log: %+v", l)
	}
	if r := l.SlidingLogStep(&p, 120, 10); !r.Allowed {
		t.Fatalf("after emptying: %+v", r)
	}
}

// TestUndoAllocs: the undo functions do not allocate.
func TestUndoAllocs(t *testing.T) {
	p, _ := Compile(3, int64(time.Second), 5)
	l := new(SlidingLog)
	l.SlidingLogStep(&p, 1e18, 3)
	g, b := GCRA{At: 2e18}, Bucket{Last: 1e18, Level: 5e9}
	allocs := testing.AllocsPerRun(100, func() {
		g = GCRAUndo(g, &p, 1e18, 1)
		b = BucketUndo(b, &p, 1e18, 1)
		_ = FixedWindowUndo(FixedWindow{Win: 3e8, Count: 3}, &p, 1e18, 1)
		_ = SlidingWindowUndo(SlidingWindow{Win: 3e8, Cur: 3}, &p, 1e18, 1)
		l.SlidingLogUndo(&p, 1e18, 1)
		l.SlidingLogStep(&p, 1e18, 1)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// TestGCRAUndoHugeDebt: a state owing more than any step makes (a Frac
// past Td, as a stored value could hold) is never turned into an instant
// outside the time line.
func TestGCRAUndoHugeDebt(t *testing.T) {
	p, _ := Compile(5, 5, 5) // T = 1ns, Td = 1
	for _, s := range []GCRA{{At: 3199336, Frac: math.MaxInt64}, {At: farFuture, Frac: math.MaxInt64}, {At: farFuture}} {
		for _, now := range []int64{0, 1e18, MaxTime} {
			for _, n := range []int64{1, 5, math.MaxInt64} {
				got := GCRAUndo(s, &p, now, n)
				if got.At < 0 || got.At > farFuture || got.Frac < 0 {
					t.Errorf("GCRAUndo(%+v, now %d, n %d) = %+v", s, now, n, got)
				}
			}
		}
	}
}
