package fair

import (
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

// FuzzRateLanes runs random requests and refunds of random lanes along a
// forward timeline and checks the budget: the lanes together never admit
// more (net of refunds) than the budget's burst plus what its rate
// refilled, whatever the lanes, shares, borrowing and reserve.
func FuzzRateLanes(f *testing.F) {
	f.Add(int64(100), int64(1000), int64(0), []byte{50, 30, 20}, uint8(1), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add(int64(7), int64(333), int64(9), []byte{1, 1, 1}, uint8(4), []byte{9, 9, 9, 200, 1, 1, 1, 2, 2, 2})
	f.Add(int64(3), int64(1), int64(40), []byte{5, 1}, uint8(9), []byte{1, 0, 1, 0, 1, 0, 3, 3, 3, 255, 2, 2})
	f.Fuzz(func(t *testing.T, rate, periodMs, burst int64, shares []byte, flags uint8, ops []byte) {
		if len(shares) > 8 {
			shares = shares[:8]
		}
		lanes := make([]Lane, len(shares))
		for i, s := range shares {
			lanes[i] = Lane{Name: string(rune('a' + i)), Share: int64(s)}
		}
		budget := admit.Limit{Rate: rate, Period: time.Duration(periodMs) * time.Millisecond, Burst: burst}
		reserve := []float64{0.5, 0.01, 1, 0.3}[flags>>2%4]
		r, err := NewRateLanes(RateLanesConfig{Budget: budget, Lanes: lanes, Borrowing: Borrowing(flags % 3), Reserve: reserve})
		if err != nil {
			return
		}
		b := budget
		if b.Burst == 0 {
			b.Burst = b.Rate
		}
		now := int64(0)
		var admitted int64
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int64(ops[i+1])
			lane := lanes[int(arg)%len(lanes)].Name
			switch op % 4 {
			case 0:
				now += arg * arg * int64(time.Millisecond) / 8
			case 1, 2:
				n := arg % 5
				d, err := allowAt(r, t0.Add(time.Duration(now)), lane, n)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admitted += n
				} else if d.RetryAfter == 0 {
					t.Fatalf("refused with RetryAfter 0: %+v", d)
				}
				if d.Remaining < 0 {
					t.Fatalf("%+v", d)
				}
			case 3:
				n := arg % 3
				if err := refundAt(r, t0.Add(time.Duration(now)), lane, n); err != nil {
					t.Fatal(err)
				}
				admitted -= n
			}
			// admitted <= B + floor(R × now / P)
			bound := new(big.Int).Mul(big.NewInt(b.Rate), big.NewInt(now))
			bound.Quo(bound, big.NewInt(int64(b.Period)))
			bound.Add(bound, big.NewInt(b.Burst))
			if big.NewInt(admitted).Cmp(bound) > 0 {
				t.Fatalf("admitted %d > %v at %v", admitted, bound, time.Duration(now))
			}
		}
	})
}

// FuzzSlotLanes runs random acquisitions and releases and checks the
// bookkeeping: at most max slots in flight, no lane's slots over-used,
// and everything back at the end.
func FuzzSlotLanes(f *testing.F) {
	f.Add(int64(10), []byte{50, 30, 20}, uint8(1), []byte{0, 1, 0, 2, 1, 0, 0, 3, 2, 1})
	f.Add(int64(3), []byte{1, 1, 1}, uint8(5), []byte{0, 0, 0, 1, 0, 2, 1, 1, 0, 0})
	f.Fuzz(func(t *testing.T, max int64, shares []byte, flags uint8, ops []byte) {
		if len(shares) > 8 {
			shares = shares[:8]
		}
		lanes := make([]Lane, len(shares))
		for i, s := range shares {
			lanes[i] = Lane{Name: string(rune('a' + i)), Share: int64(s)}
		}
		reserve := []float64{0.5, 0.01, 1, 0.3}[flags>>2%4]
		s, err := NewSlotLanes(SlotLanesConfig{Max: max, Lanes: lanes, Borrowing: Borrowing(flags % 3), Reserve: reserve})
		if err != nil {
			return
		}
		type held struct {
			p Permit
			n int64
		}
		var live []held
		var inflight int64
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int64(ops[i+1])
			if op%2 == 0 {
				n := arg % 4
				p, d, err := s.TryAcquire(ctx, lanes[int(arg)%len(lanes)].Name, n)
				if err != nil {
					continue
				}
				if d.Allowed && n > 0 {
					live = append(live, held{p, n})
					inflight += n
				}
			} else if len(live) > 0 {
				k := int(arg) % len(live)
				if !live[k].p.Release() || live[k].p.Release() {
					t.Fatal("a permit released other than once")
				}
				inflight -= live[k].n
				live = append(live[:k], live[k+1:]...)
			}
			if inflight > max {
				t.Fatalf("%d in flight of %d", inflight, max)
			}
			var used, lent, borrowed int64
			for _, st := range s.Stats() {
				if st.Used < 0 || st.Lent < 0 || st.Used+st.Lent > st.Reserved {
					t.Fatalf("lane %+v", st)
				}
				used += st.Used + st.Lent
				lent += st.Lent
				borrowed += st.Borrowed
			}
			if used != inflight || lent != borrowed {
				t.Fatalf("lanes count %d in flight (%d lent, %d borrowed), permits %d", used, lent, borrowed, inflight)
			}
		}
		for _, h := range live {
			h.p.Release()
		}
		for _, st := range s.Stats() {
			if st.Used != 0 || st.Lent != 0 || st.Borrowed != 0 {
				t.Fatalf("left over %+v", st)
			}
		}
	})
}

// FuzzQueue drives a Queue's scheduler directly (without goroutines):
// arrivals of random flows, weights and sizes, cancellations and releases,
// checking after each step the heap order, each flow's list and tags,
// the bounds, and that grants come in order of finish tag.
func FuzzQueue(f *testing.F) {
	f.Add(int64(3), uint8(4), []byte{0, 1, 0, 2, 0, 3, 1, 0, 2, 0, 0, 1, 3, 3})
	f.Add(int64(1), uint8(2), []byte{0, 9, 0, 9, 0, 9, 0, 1, 2, 0, 1, 1, 1, 2})
	f.Fuzz(func(t *testing.T, max int64, maxWaiters uint8, ops []byte) {
		q, err := NewQueue(QueueConfig{Max: max % 64, MaxWaiters: int(maxWaiters % 16)})
		if err != nil {
			return
		}
		var (
			waiting []*qwaiter
			held    []Permit
			lastTag float64
		)
		collect := func() {
			keep := waiting[:0]
			var granted []*qwaiter
			for _, w := range waiting {
				switch {
				case w.granted:
					granted = append(granted, w)
					held = append(held, w.permit)
				case !w.refused:
					keep = append(keep, w)
				}
			}
			waiting = keep
			slices.SortFunc(granted, func(a, b *qwaiter) int {
				if before(a.finish, a.seq, b.finish, b.seq) {
					return -1
				}
				return 1
			})
			for _, w := range granted {
				if w.finish < lastTag {
					t.Fatalf("granted tag %v after %v", w.finish, lastTag)
				}
				lastTag = w.finish
			}
		}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int64(ops[i+1])
			q.mu.Lock()
			switch op % 3 {
			case 0:
				n := arg%4 + 1
				if n > q.max {
					break
				}
				if len(q.heap) == 0 && n <= q.max-q.inflight {
					held = append(held, q.grant(n))
					break
				}
				if q.maxWaiters == 0 {
					break
				}
				flow := string(rune('a' + arg%5))
				if wt := q.enqueue(flow, n, float64(arg%3+1)); wt != nil {
					waiting = append(waiting, wt)
				}
				q.serve()
			case 1:
				if len(waiting) > 0 {
					w := waiting[int(arg)%len(waiting)]
					if !w.granted && !w.refused {
						q.remove(w, true)
						w.refused = true
						q.serve()
					}
				}
			case 2:
				if len(held) > 0 {
					k := int(arg) % len(held)
					p := held[k]
					held = append(held[:k], held[k+1:]...)
					q.mu.Unlock()
					p.Release()
					q.mu.Lock()
				}
			}
			checkQueue(t, q)
			empty := len(q.heap) == 0
			q.mu.Unlock()
			collect()
			if empty {
				lastTag = 0 // the virtual time restarts
			}
		}
	})
}

// checkQueue checks a Queue's invariants. It requires q.mu.
func checkQueue(t *testing.T, q *Queue) {
	t.Helper()
	if q.inflight < 0 || q.inflight > q.max {
		t.Fatalf("in flight %d of %d", q.inflight, q.max)
	}
	if len(q.heap) > q.maxWaiters {
		t.Fatalf("%d waiting, at most %d", len(q.heap), q.maxWaiters)
	}
	for i, w := range q.heap {
		if w.hi != i {
			t.Fatalf("heap index %d of %d", w.hi, i)
		}
		if i > 0 && (waiters{q}).Less(i, (i-1)/2) {
			t.Fatal("heap order")
		}
	}
	count := 0
	for key, f := range q.flows {
		if f.key != key || f.head == nil || f.head.prev != nil || f.tail.next != nil || f.finish != f.tail.finish {
			t.Fatalf("flow %q", key)
		}
		prev := -1.0
		for w := f.head; w != nil; w = w.next {
			count++
			if w.f != f || w.finish <= prev || w.finish <= w.start || w.start < w.venq || q.heap[w.hi] != w {
				t.Fatalf("waiter of %q: %+v", key, w)
			}
			if w.next != nil && w.next.prev != w {
				t.Fatal("links")
			}
			prev = w.finish
		}
	}
	if count != len(q.heap) {
		t.Fatalf("%d waiters in flows, %d in the heap", count, len(q.heap))
	}
	if len(q.heap) > 0 && q.heap[0].n <= q.max-q.inflight {
		t.Fatal("the first waiter fits but waits")
	}
}
