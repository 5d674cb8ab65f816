package keyed

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
)

// counterOps is a test state: a count that grows with each decision's n and
// is "full" (forgettable) only at zero.
var counterOps = ops[int64]{
	step: func(s *int64, _ *algo.Params, _, n int64) algo.Result {
		*s += n
		return algo.Result{Remaining: *s}
	},
	fullAt: func(s *int64) int64 {
		if *s == 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	},
}

// FuzzTable drives a one-shard table through inserts, lookups and removals
// of keys of many lengths (so that the arena is compacted and the table
// resized) and checks every count against a map. Nothing is ever idle and
// the cap is never reached, so the table must never lose a key.
func FuzzTable(f *testing.F) {
	f.Add([]byte("\x01\x02\x03\x81\x82\x01\x01\xff"))
	f.Add([]byte(strings.Repeat("\x10\x90\x23\xa3", 300)))
	f.Fuzz(func(t *testing.T, ops []byte) {
		tb := newTable(counterOps, 1, 1<<20, 0)
		model := map[string]int64{}
		var p algo.Params
		for i, op := range ops {
			// The low 6 bits pick one of 64 keys, whose length varies
			// from 0 to 1000 bytes, so removals leave dead bytes.
			id := int(op & 63)
			key := strings.Repeat(string(rune('A'+id%26)), (id*37)%1001)
			if id%5 == 0 {
				key = string([]byte{byte(id), 0, '{', '}'})
			}
			if op&128 != 0 {
				_, had := model[key]
				if got := tb.reset(key); got != had {
					t.Fatalf("op %d: reset(%q) = %v, want %v", i, key, got, had)
				}
				delete(model, key)
			} else {
				r, _, ok := tb.decide(0, key, &p, 1, 0)
				model[key]++
				if !ok || r.Remaining != model[key] {
					t.Fatalf("op %d: key %d count %d, want %d", i, id, r.Remaining, model[key])
				}
			}
			if tb.len() != len(model) {
				t.Fatalf("op %d: len %d, want %d", i, tb.len(), len(model))
			}
		}
		sh := &tb.shards[0]
		live := 0
		for k := range model {
			live += len(k) + 1
			if len(k) >= 128 {
				live++
			}
		}
		if len(sh.arena)-sh.dead != live {
			t.Fatalf("arena holds %d live bytes, want %d", len(sh.arena)-sh.dead, live)
		}
		if sh.dead > 4096 && sh.dead > len(sh.arena)/2 {
			t.Fatalf("arena not compacted: %d dead of %d", sh.dead, len(sh.arena))
		}
		for k, want := range model {
			if i := sh.find(hashOf(tb, k), k); i < 0 || sh.slots[i].st != want {
				t.Fatalf("key %q lost or wrong (slot %d), want %d", k, i, want)
			}
		}
	})
}

// TestTableCapAndClock fills a one-shard table to its cap and checks that
// eviction prefers idle keys, then unreferenced ones, sparing keys in use.
func TestTableCapAndClock(t *testing.T) {
	tb := newTable(counterOps, 1, 8, 0)
	var p algo.Params
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		tb.decide(0, k, &p, 1, 0)
	}
	tb.decide(0, "hot", &p, 0, 0) // a peek on a new key stores nothing
	if tb.len() != 8 {
		t.Fatalf("len %d", tb.len())
	}
	// Reference "a" and "b": the pressure eviction must take another key.
	tb.decide(0, "a", &p, 1, 0)
	tb.decide(0, "b", &p, 1, 0)
	_, ev, _ := tb.decide(0, "i", &p, 1, 0)
	if ev.pressure != 1 || ev.idle != 0 || tb.len() != 8 {
		t.Fatalf("evictions %+v, len %d", ev, tb.len())
	}
	sh := &tb.shards[0]
	for _, k := range []string{"a", "b", "i"} {
		if sh.find(hashOf(tb, k), k) < 0 {
			t.Fatalf("key %q was evicted", k)
		}
	}
	// Make "a" idle (a zero count is full in counterOps): the next
	// insertion evicts it rather than a key in use.
	sh.slots[sh.find(hashOf(tb, "a"), "a")].st = 0
	_, ev, _ = tb.decide(0, "j", &p, 1, 0)
	if ev.idle != 1 || ev.pressure != 0 || sh.find(hashOf(tb, "a"), "a") >= 0 {
		t.Fatalf("want \"a\" evicted as idle, got %+v", ev)
	}
}

func hashOf[S any](tb *table[S], key string) uint32 {
	_, h := tb.locate(key)
	return h
}

// TestStoreFullError: a key refused because its shard's arena is full (4
// GiB of keys, too much to reach in a test) is an error wrapping
// admit.ErrTooManyKeys, which failure policies and the server treat as
// they treated keyed's own sentinel (a store failure, "resource
// exhausted"), and its message says what is full.
func TestStoreFullError(t *testing.T) {
	if !errors.Is(errStoreFull, admit.ErrTooManyKeys) || !strings.Contains(errStoreFull.Error(), "keyed: key store full") {
		t.Fatalf("errStoreFull = %v, want admit.ErrTooManyKeys, a full key store", errStoreFull)
	}
	var sh shard[int64]
	if sh.arenaFull(1 << 10) {
		t.Fatal("an empty arena is full")
	}
	if !sh.arenaFull(1<<32 - 1) {
		t.Fatal("an arena that cannot take a key of 4 GiB is not full")
	}
}
