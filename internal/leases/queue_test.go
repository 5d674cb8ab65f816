package leases

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type item struct {
	name string
	exp  Expiry
}

func (i *item) Expiry() *Expiry { return &i.exp }

// TestQueue: a Queue gives its elements back by expiry, earliest first,
// through pushes, moves and removals, and says when one becomes the
// earliest.
func TestQueue(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var q Queue[*item]
	if _, ok := q.First(); ok || q.Len() != 0 {
		t.Fatal("the zero Queue is not empty")
	}
	a, b, c, d := &item{name: "a", exp: Expiry{At: at(30)}}, &item{name: "b", exp: Expiry{At: at(10)}}, &item{name: "c", exp: Expiry{At: at(20)}}, &item{name: "d", exp: Expiry{At: at(40)}}
	for _, tc := range []struct {
		e     *item
		first bool
	}{{a, true}, {b, true}, {c, false}, {d, false}} {
		if got := q.Push(tc.e); got != tc.first {
			t.Errorf("Push(%s) = %v, want %v", tc.e.name, got, tc.first)
		}
	}
	if !q.Move(d, at(5)) || q.Move(b, at(50)) {
		t.Error("Move: d should be first, b not")
	}
	q.Remove(c)
	if e, ok := q.PopExpired(at(4)); ok {
		t.Errorf("PopExpired(t0+4s) = %s, want none", e.name)
	}
	var got []string
	for {
		e, ok := q.PopExpired(at(30))
		if !ok {
			break
		}
		got = append(got, e.name)
	}
	if !slices.Equal(got, []string{"d", "a"}) || q.Len() != 1 {
		t.Errorf("expired by t0+30s: %q, %d left; want [d a], 1 left", got, q.Len())
	}
	if e, ok := q.First(); !ok || e != b {
		t.Errorf("First = %v, %v; want b", e, ok)
	}
	q.Clear()
	if q.Len() != 0 {
		t.Error("Clear left elements")
	}

	// Many, in random order, with random moves and removals.
	r := rand.New(rand.NewPCG(1, 2))
	var all []*item
	for i := range 500 {
		e := &item{exp: Expiry{At: at(r.IntN(1000))}}
		all = append(all, e)
		q.Push(e)
		if i%3 == 0 {
			q.Move(all[r.IntN(len(all))], at(r.IntN(1000)))
		}
	}
	for _, e := range all[:100] {
		q.Remove(e)
	}
	var last time.Time
	for n := 0; ; n++ {
		e, ok := q.PopExpired(at(1000))
		if !ok {
			if n != 400 {
				t.Errorf("%d popped, want 400", n)
			}
			break
		}
		if e.exp.At.Before(last) {
			t.Fatalf("popped %v after %v", e.exp.At, last)
		}
		last = e.exp.At
	}
}
