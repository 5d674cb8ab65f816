package fair

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/admit-go/admit"
)

var ctx = context.Background()

func mustSlots(t testing.TB, cfg SlotLanesConfig) *SlotLanes {
	t.Helper()
	s, err := NewSlotLanes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// take acquires n slots of lane one at a time until refused, and returns
// the permits.
func take(t *testing.T, s *SlotLanes, lane string, n int) []Permit {
	t.Helper()
	var ps []Permit
	for range n {
		p, d, err := s.TryAcquire(ctx, lane, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			break
		}
		ps = append(ps, p)
	}
	return ps
}

func stats(s *SlotLanes) map[string]LaneStats {
	m := map[string]LaneStats{}
	for _, st := range s.Stats() {
		m[st.Name] = st
	}
	return m
}

func TestSlotLanesReserved(t *testing.T) {
	s := mustSlots(t, SlotLanesConfig{Options: admit.Options{Name: "workers"}, Max: 10, Lanes: threeLanes})
	reserved := int64(0)
	for _, st := range s.Stats() {
		reserved += st.Reserved
	}
	if reserved != 10 {
		t.Fatalf("the lanes reserve %d slots, want the 10 they share", reserved)
	}
	p, d, err := s.TryAcquire(ctx, "critical", 2)
	// 5 reserved, 3 left, and what it may borrow (BorrowUp): batch 2-1,
	// default 3-2.
	want := admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 5, Burst: 5}, Remaining: 3 + 1 + 1, Rule: "workers/critical", Kind: admit.KindConcurrency}
	if err != nil || d != want {
		t.Fatalf("%+v, %v; want %+v", d, err, want)
	}
	if stats(s)["critical"].Used != 2 || !p.Release() || p.Release() || stats(s)["critical"].Used != 0 {
		t.Fatal("permit released other than once")
	}
	var zero Permit
	if zero.Release() {
		t.Fatal("zero permit")
	}
	// Bad input.
	if _, d, err := s.TryAcquire(ctx, "nope", 1); !errors.Is(err, ErrUnknownLane) || d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Fatalf("%+v, %v", d, err)
	}
	if _, d, err := s.TryAcquire(ctx, "batch", -1); !errors.Is(err, admit.ErrInvalidCost) || d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	// batch can never get 3 (2 reserved, borrows nothing under BorrowUp).
	if _, d, err := s.TryAcquire(ctx, "batch", 3); !errors.Is(err, admit.ErrExceedsBurst) || d.RetryAfter != admit.InfDuration {
		t.Fatalf("%+v, %v", d, err)
	}
	if p, d, err := s.TryAcquire(ctx, "batch", 0); err != nil || !d.Allowed || p != (Permit{}) {
		t.Fatalf("%+v, %+v, %v", p, d, err)
	}
}

// TestSlotLanesBorrowUp: the lowest lane gets its reservation and no
// more; the highest gets its own and the others' spare beyond their
// reserves; a lane whose slots were lent gets its reserve at once.
func TestSlotLanesBorrowUp(t *testing.T) {
	s := mustSlots(t, SlotLanesConfig{Max: 10, Lanes: threeLanes}) // 5, 3, 2; reserves 3, 2, 1
	if got := len(take(t, s, "batch", 10)); got != 2 {
		t.Fatalf("batch got %d", got)
	}
	s = mustSlots(t, SlotLanesConfig{Max: 10, Lanes: threeLanes})
	crit := take(t, s, "critical", 10)
	if len(crit) != 5+1+1 {
		t.Fatalf("critical got %d", len(crit))
	}
	st := stats(s)
	if st["critical"].Used != 5 || st["critical"].Borrowed != 2 || st["batch"].Lent != 1 || st["default"].Lent != 1 {
		t.Fatalf("stats %+v", st)
	}
	if got := len(take(t, s, "batch", 10)); got != 1 {
		t.Fatalf("batch got %d beside critical", got)
	}
	if got := len(take(t, s, "default", 10)); got != 2 {
		t.Fatalf("default got %d beside critical", got)
	}
	// default was refused, so it holds: the slot lent to critical comes
	// back to it and is not lent again, until default admits.
	for _, p := range crit {
		p.Release()
	}
	if st := stats(s); !st["default"].Holding || st["default"].Lent != 0 || st["critical"].Borrowed != 0 {
		t.Fatalf("stats %+v", st)
	}
	crit = take(t, s, "critical", 10)
	if len(crit) != 5 { // its own: default and batch were refused, so hold
		t.Fatalf("critical got %d while the others hold", len(crit))
	}
	if got := len(take(t, s, "default", 1)); got != 1 {
		t.Fatalf("default got %d", got)
	}
	if st := stats(s); st["default"].Holding {
		t.Fatalf("default holding after it admitted: %+v", st)
	}
}

// TestSlotLanesBorrowAny: a flood of the lowest lane takes every slot
// beyond the reserves; the critical lane then gets its reserve at once,
// and the slots lent come back to it as they are released, never lent
// again while it waits.
func TestSlotLanesBorrowAny(t *testing.T) {
	s := mustSlots(t, SlotLanesConfig{Max: 10, Lanes: threeLanes, Borrowing: BorrowAny})
	batch := take(t, s, "batch", 10)
	if len(batch) != 2+1+2 { // own 2, default 3-2, critical 5-3
		t.Fatalf("batch got %d", len(batch))
	}
	crit := take(t, s, "critical", 10)
	if len(crit) != 3 { // its reserve; default's spare went to batch
		t.Fatalf("critical got %d", len(crit))
	}
	if st := stats(s); !st["critical"].Holding {
		t.Fatalf("critical refused but not holding: %+v", st)
	}
	// batch releases everything; the flood resumes at once: it gets its
	// own 2 back, and nothing from critical, which holds.
	for _, p := range batch {
		p.Release()
	}
	batch = take(t, s, "batch", 10)
	if got := len(batch); got != 2+1 {
		t.Fatalf("batch got %d while critical holds", got)
	}
	more := take(t, s, "critical", 2) // the two batch had borrowed
	if len(more) != 2 {
		t.Fatalf("critical got %d of its last 2", len(more))
	}
	if st := stats(s); st["critical"].Holding {
		t.Fatalf("critical still holding after it admitted: %+v", st)
	}
	for _, p := range append(append(crit, more...), batch...) {
		p.Release()
	}
	for _, st := range s.Stats() {
		if st.Used != 0 || st.Lent != 0 || st.Borrowed != 0 {
			t.Fatalf("left over: %+v", st)
		}
	}
}

func TestSlotLanesLayerAndDefault(t *testing.T) {
	s := mustSlots(t, SlotLanesConfig{Max: 4, Lanes: []Lane{{"a", 1}, {"b", 1}}, DefaultLane: "b", Borrowing: BorrowNone})
	l := s.Layer()
	r, d, err := l.TryAcquire(ctx, admit.Request{Key: "unknown", N: 2})
	if err != nil || !d.Allowed || r == nil || d.Rule != "b" {
		t.Fatalf("%v, %+v, %v", r, d, err)
	}
	if r2, d, err := l.TryAcquire(ctx, admit.Request{Key: "b", N: 1}); err != nil || d.Allowed || r2 != nil {
		t.Fatalf("%v, %+v, %v", r2, d, err)
	}
	// More than it could ever get: a refusal, not an error, as a layer.
	if r2, d, err := l.TryAcquire(ctx, admit.Request{Key: "b", N: 3}); err != nil || d.Allowed || d.RetryAfter != admit.InfDuration || r2 != nil {
		t.Fatalf("%v, %+v, %v", r2, d, err)
	}
	if _, _, err := l.TryAcquire(ctx, admit.Request{Key: "b", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	r.Release()
	r.Release()
	if st := stats(s); st["b"].Used != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSlotLanesConcurrent hammers a SlotLanes from many goroutines: the
// slots in flight never exceed max, and everything comes back.
func TestSlotLanesConcurrent(t *testing.T) {
	s := mustSlots(t, SlotLanesConfig{Max: 16, Lanes: threeLanes, Borrowing: BorrowAny})
	var (
		mu       sync.Mutex
		inflight int64
		peak     int64
		wg       sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lane := threeLanes[w%3].Name
			for i := range 2000 {
				n := int64(i%3) + 1
				p, d, err := s.TryAcquire(ctx, lane, n)
				if err != nil {
					continue
				}
				if d.Allowed {
					mu.Lock()
					inflight += n
					peak = max(peak, inflight)
					mu.Unlock()
					mu.Lock()
					inflight -= n
					mu.Unlock()
					p.Release()
				}
			}
		}()
	}
	wg.Wait()
	if peak > 16 {
		t.Fatalf("%d slots in flight", peak)
	}
	for _, st := range s.Stats() {
		if st.Used != 0 || st.Lent != 0 || st.Borrowed != 0 {
			t.Fatalf("left over: %+v", st)
		}
	}
}
