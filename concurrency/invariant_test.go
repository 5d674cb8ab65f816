package concurrency

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

// checkInvariants checks the internal consistency of l: the holders, the
// free list, the lease lists (complete and in deadline order), the queues,
// and that every key with state is in use.
func checkInvariants(t testing.TB, l *Limiter) {
	t.Helper()
	keys := 0
	check := func(s *shard) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		states := map[*keyState]bool{}
		if s.fixed != nil {
			states[s.fixed] = true
		} else {
			keys += len(s.keys)
			for k, ks := range s.keys {
				if ks.key != k {
					return fmt.Errorf("key %q has the state of %q", k, ks.key)
				}
				if ks.inflight == 0 && ks.whead == nil {
					return fmt.Errorf("key %q is idle but has state", k)
				}
				states[ks] = true
			}
		}
		alive, sum := 0, map[*keyState]int64{}
		for i := range s.slab {
			h := &s.slab[i]
			if h.id == 0 {
				continue
			}
			alive++
			if !states[h.ks] {
				return fmt.Errorf("holder %d of a key without state", i)
			}
			if h.n <= 0 {
				return fmt.Errorf("holder %d of %d slots", i, h.n)
			}
			if h.id > s.nextID {
				return fmt.Errorf("holder %d has id %d > %d", i, h.id, s.nextID)
			}
			sum[h.ks] += h.n
		}
		if alive != s.held {
			return fmt.Errorf("%d holders alive, held = %d", alive, s.held)
		}
		free := 0
		for i := s.free; i != nilIdx; i = s.slab[i].snext {
			if s.slab[i].id != 0 {
				return fmt.Errorf("free holder %d is alive", i)
			}
			free++
			if free > len(s.slab) {
				return fmt.Errorf("free list loops")
			}
		}
		if free+alive != len(s.slab) {
			return fmt.Errorf("%d free + %d alive != %d holders", free, alive, len(s.slab))
		}
		for ks := range states {
			if ks.inflight != sum[ks] {
				return fmt.Errorf("key %q: inflight %d, holders hold %d", ks.key, ks.inflight, sum[ks])
			}
			n := 0
			var prev *waiter
			for w := ks.whead; w != nil; w = w.next {
				if w.prev != prev || w.granted {
					return fmt.Errorf("key %q: queue broken", ks.key)
				}
				prev = w
				n++
			}
			if prev != ks.wtail || n != ks.nwait {
				return fmt.Errorf("key %q: queue of %d, nwait %d", ks.key, n, ks.nwait)
			}
		}
		if l.lease == 0 {
			if s.lhead != nilIdx || s.ltail != nilIdx {
				return fmt.Errorf("a lease list without leases")
			}
			return nil
		}
		// The shard's lease list: every alive holder, in deadline order.
		n, last, p := 0, int64(-1<<63), int32(nilIdx)
		for i := s.lhead; i != nilIdx; i = s.slab[i].snext {
			h := &s.slab[i]
			if h.id == 0 || h.sprev != p || h.deadline < last {
				return fmt.Errorf("shard lease list broken at %d", i)
			}
			p, last = i, h.deadline
			n++
			if n > alive {
				return fmt.Errorf("shard lease list too long")
			}
		}
		if n != alive || p != s.ltail {
			return fmt.Errorf("shard lease list has %d of %d holders", n, alive)
		}
		total := 0
		for ks := range states {
			last, p := int64(-1<<63), int32(nilIdx)
			for i := ks.lhead; i != nilIdx; i = s.slab[i].knext {
				h := &s.slab[i]
				if h.id == 0 || h.ks != ks || h.kprev != p || h.deadline < last {
					return fmt.Errorf("key %q: lease list broken at %d", ks.key, i)
				}
				p, last = i, h.deadline
				total++
				if total > alive {
					return fmt.Errorf("key lease lists too long")
				}
			}
			if p != ks.ltail {
				return fmt.Errorf("key %q: lease list tail", ks.key)
			}
		}
		if total != alive {
			return fmt.Errorf("key lease lists hold %d of %d holders", total, alive)
		}
		return nil
	}
	if err := check(&l.global); err != nil {
		t.Fatalf("global shard: %v", err)
	}
	for i := range l.shards {
		if err := check(&l.shards[i]); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	if got := l.keys.Load(); (l.maxKeys > 0 || l.observer != nil) && got != int64(keys) {
		t.Fatalf("keys counter %d, %d keys in the maps", got, keys)
	}
}

// modelPermit is a Permit as the fuzz model sees it.
type modelPermit struct {
	p        Permit
	key      string
	n        int64
	deadline time.Duration // since the start; 0: no lease
	released bool
}

// FuzzOps runs random sequences of TryAcquire, TryAcquire(Limit), Release,
// Held and clock advances against a model, and checks after each step that
// each key's in-flight count is the model's (so never above the limit), that
// a key's state vanishes when it is idle, and the internal invariants.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{0x10, 0x21, 0x32, 0x03, 0x14, 0x25, 0xf6, 0x37, 0x48, 0x5a, 0x6b, 0x7c})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 6, 6, 6, 6, 2, 2, 2, 2, 7, 7, 7})
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, data []byte) {
	{
		if len(data) < 2 {
			return
		}
		if len(data) > 512 { // longer adds time, not cases
			data = data[:512]
		}
		const limit = 5
		start := admittest.Epoch
		clk := admittest.NewManualClock(start)
		lease := time.Duration(data[0]%8) * time.Second // 0: no lease
		l, err := New(Config{Options: admit.Options{Clock: clk}, Max: limit, Lease: lease, MaxKeys: 3})
		if err != nil {
			t.Fatal(err)
		}
		keys := []string{"", "a", "b", "c", "d"}
		var permits []*modelPermit
		ctx := t.Context()
		now := func() time.Duration { return clk.Now().Sub(start) }
		alive := func(p *modelPermit) bool {
			return !p.released && (p.deadline == 0 || p.deadline > now())
		}
		inflight := func(key string) int64 {
			var sum int64
			for _, p := range permits {
				if p.key == key && alive(p) {
					sum += p.n
				}
			}
			return sum
		}
		for i := 1; i+1 < len(data); i += 2 {
			op, arg := data[i], data[i+1]
			switch op % 8 {
			case 0, 1, 2, 3: // TryAcquire or TryAcquire(Limit)
				key := keys[arg%5]
				n := int64(arg/5) % (limit + 2) // 0..max+1
				lim := int64(limit)
				var p Permit
				var d = l.invalid(0)
				if op%8 == 3 {
					lim = int64(arg/30)%limit + 1
					p, d, err = l.TryAcquire(ctx, admit.Request{Key: key, N: n, Limit: admit.Limit{Rate: lim}})
				} else {
					p, d, err = l.TryAcquire(ctx, admit.Request{Key: key, N: n})
				}
				want := n == 0 || (n <= lim && inflight(key)+n <= lim)
				newKey := key != "" && inflight(key) == 0 && n > 0
				if newKey && want {
					// A new key beyond the bound is refused.
					busy := 0
					for _, k := range keys[1:] {
						if inflight(k) > 0 {
							busy++
						}
					}
					if busy >= 3 {
						if !errors.Is(err, admit.ErrTooManyKeys) {
							t.Fatalf("step %d: a 4th key: err %v, want admit.ErrTooManyKeys", i, err)
						}
						continue
					}
				}
				if n > lim {
					if !errors.Is(err, admit.ErrExceedsBurst) || d.Allowed || d.RetryAfter != admit.InfDuration {
						t.Fatalf("step %d: n=%d > %d: %+v, %v", i, n, lim, d, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: TryAcquire(%q, %d): %v", i, key, n, err)
				}
				if d.Allowed != want {
					t.Fatalf("step %d: TryAcquire(%q, %d) under %d with %d in flight: allowed %v", i, key, n, lim, inflight(key), d.Allowed)
				}
				if d.Allowed && n > 0 {
					mp := &modelPermit{p: p, key: key, n: n}
					if lease > 0 {
						mp.deadline = now() + lease
					}
					permits = append(permits, mp)
				}
				if r := lim - inflight(key); d.Remaining != max(r, 0) {
					t.Fatalf("step %d: Remaining %d, want %d", i, d.Remaining, max(r, 0))
				}
			case 4, 5: // Release (perhaps again)
				if len(permits) == 0 {
					continue
				}
				p := permits[int(arg)%len(permits)]
				want := alive(p)
				if got := p.p.Release(); got != want {
					t.Fatalf("step %d: Release = %v, want %v", i, got, want)
				}
				p.released = true
			case 6: // Advance
				clk.Advance(time.Duration(arg%16) * 500 * time.Millisecond)
			case 7: // Held
				if len(permits) == 0 {
					continue
				}
				p := permits[int(arg)%len(permits)]
				if got, want := p.p.Held(), alive(p); got != want {
					t.Fatalf("step %d: Held = %v, want %v", i, got, want)
				}
			}
			checkInvariants(t, l)
			busy := 0
			for _, k := range keys {
				got, want := inFlightOf(l, k), inflight(k)
				if got != want {
					t.Fatalf("step %d: InFlight(%q) = %d, want %d", i, k, got, want)
				}
				if got > limit {
					t.Fatalf("step %d: InFlight(%q) = %d > %d", i, k, got, limit)
				}
				if k != "" && want > 0 {
					busy++
				}
			}
			if st := l.Stats(); st.Keys != busy {
				t.Fatalf("step %d: %d keys with state, %d busy", i, st.Keys, busy)
			}
		}
		for _, p := range permits {
			p.p.Release()
		}
		checkInvariants(t, l)
		if st := l.Stats(); st.Keys != 0 || st.InFlight != 0 || st.Holders != 0 {
			t.Fatalf("all released: %+v", st)
		}
	}
}

// inFlightOf returns l.InFlight(key), which never fails in memory.
func inFlightOf(l *Limiter, key string) int64 {
	n, err := l.InFlight(context.Background(), key)
	if err != nil {
		panic(err)
	}
	return n
}
