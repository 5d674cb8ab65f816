package fair

import (
	"errors"

	"github.com/admit-go/admit"
)

// Permit holds the slots a SlotLanes or a Queue granted to one request,
// until Release. It is a small value, so acquiring one does not allocate;
// copies of a Permit are the same Permit.
//
// Each grant has an identity that is never reused, so releasing is safe
// whatever happened before: the second Release of a Permit (or of a copy)
// and the Release of the zero Permit do nothing and report false; they
// can never free slots granted to someone else.
//
// The zero Permit holds nothing. A Permit is safe for concurrent use.
type Permit struct {
	h   holder
	idx int32
	id  uint64
}

// holder is what grants Permits.
type holder interface {
	release(idx int32, id uint64) bool
}

// Release gives back the slots p holds. It reports whether it did: false
// if p was released before, or is the zero Permit (a request of n = 0, or
// one that was denied).
func (p Permit) Release() bool {
	if p.h == nil {
		return false
	}
	return p.h.release(p.idx, p.id)
}

// releaser adapts a Permit to admit.Releaser.
type releaser Permit

func (r releaser) Release() { Permit(r).Release() }

// asReleaser returns p as an admit.Releaser, or nil for the zero Permit.
func asReleaser(p Permit) admit.Releaser {
	if p.h == nil {
		return nil
	}
	return releaser(p)
}

// grants is a slab of records of type T, each with an id that is never
// reused, so that a stale Permit finds nothing. It is not safe for
// concurrent use: its owner's lock guards it.
type grants[T any] struct {
	recs []grantRec[T]
	free []int32
	next uint64
}

type grantRec[T any] struct {
	id uint64 // 0: free
	v  T
}

// add records v and returns its index and id.
func (g *grants[T]) add(v T) (int32, uint64) {
	var i int32
	if k := len(g.free); k > 0 {
		i = g.free[k-1]
		g.free = g.free[:k-1]
	} else {
		g.recs = append(g.recs, grantRec[T]{})
		i = int32(len(g.recs) - 1)
	}
	g.next++
	g.recs[i] = grantRec[T]{id: g.next, v: v}
	return i, g.next
}

// has reports whether record i is id.
func (g *grants[T]) has(i int32, id uint64) bool {
	return id != 0 && i >= 0 && int(i) < len(g.recs) && g.recs[i].id == id
}

// take removes record i if it is id, and returns it.
func (g *grants[T]) take(i int32, id uint64) (T, bool) {
	var zero T
	if !g.has(i, id) {
		return zero, false
	}
	v := g.recs[i].v
	g.recs[i] = grantRec[T]{}
	g.free = append(g.free, i)
	return v, true
}

// errorsIsExceeds reports whether err says a request can never be admitted.
func errorsIsExceeds(err error) bool { return errors.Is(err, admit.ErrExceedsBurst) }
