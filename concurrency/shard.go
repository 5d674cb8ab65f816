package concurrency

import (
	"math"
	"sync"
	"time"

	"github.com/admit-go/admit"
)

// A shard holds the state of the keys that hash to it under one mutex. The
// empty key has a shard of its own (Limiter.global), whose one keyState is
// never forgotten, so the global limit costs no map operation.
//
// Each grant of slots is a holder: a record in the shard's slab, named by
// its index and an id that is never reused, so that a Permit released late
// (twice, or after its lease was reclaimed) finds another id there and does
// nothing. With leases, the holders are also linked, in deadline order,
// into one list per shard (so that expired leases are found in O(1) each,
// whatever their key) and one per key (the key's earliest deadline, for its
// first waiter's timer, and its latest, for ResetAfter).
type shard struct {
	mu     sync.Mutex
	l      *Limiter
	fixed  *keyState            // the global shard's only key; nil otherwise
	keys   map[string]*keyState // keys with slots held or callers waiting
	peak   int                  // len(keys) high-water mark since the map was made
	pool   []*keyState          // forgotten keyStates, for reuse
	slab   []holder
	free   int32 // first free holder (linked by snext), or nil
	held   int   // holders in use
	nextID uint64
	lhead  int32 // holder with the earliest lease deadline, or nil
	ltail  int32 // holder with the latest lease deadline, or nil
	_      [64]byte
}

// nilIdx is the nil holder index.
const nilIdx = -1

// keyState is one key's state.
type keyState struct {
	key      string
	inflight int64   // slots held
	lhead    int32   // the key's holder with the earliest lease deadline
	ltail    int32   // and with the latest
	whead    *waiter // the first caller waiting, or nil
	wtail    *waiter
	nwait    int
}

// holder is a grant of slots, alive while id != 0.
type holder struct {
	id           uint64
	ks           *keyState
	n            int64
	deadline     int64 // lease deadline on the Limiter's time line
	kprev, knext int32 // the key's lease list
	sprev, snext int32 // the shard's lease list; snext links the free list
}

const (
	poolMax      = 16   // keyStates kept for reuse per shard
	shrinkMin    = 256  // a map that never held this many keys is never rebuilt
	slabShrinkAt = 1024 // a slab this big is dropped when no slot is held
)

func (s *shard) init(l *Limiter, global bool) {
	s.l = l
	s.free, s.lhead, s.ltail = nilIdx, nilIdx, nilIdx
	if global {
		s.fixed = &keyState{lhead: nilIdx, ltail: nilIdx}
	}
}

// lookup returns the state of key, or nil if it has none.
func (s *shard) lookup(key string) *keyState {
	if s.fixed != nil {
		return s.fixed
	}
	return s.keys[key]
}

// add creates the state of key, which has none. It reports false if the
// Limiter holds its maximum number of keys.
func (s *shard) add(key string) (*keyState, bool) {
	l := s.l
	if l.maxKeys > 0 {
		if l.keys.Add(1) > int64(l.maxKeys) {
			l.keys.Add(-1)
			return nil, false
		}
	} else if l.observer != nil {
		l.keys.Add(1)
	}
	var ks *keyState
	if k := len(s.pool); k > 0 {
		ks = s.pool[k-1]
		s.pool = s.pool[:k-1]
	} else {
		ks = &keyState{}
	}
	*ks = keyState{key: key, lhead: nilIdx, ltail: nilIdx}
	if s.keys == nil {
		s.keys = make(map[string]*keyState)
	}
	s.keys[key] = ks
	if len(s.keys) > s.peak {
		s.peak = len(s.keys)
	}
	if l.observer != nil {
		l.changes.Add(1)
	}
	return ks, true
}

// forget drops the state of ks if it is idle: no slot held, no caller
// waiting. The global key is never dropped.
func (s *shard) forget(ks *keyState) {
	if ks.inflight != 0 || ks.whead != nil || ks == s.fixed {
		return
	}
	l := s.l
	delete(s.keys, ks.key)
	if l.maxKeys > 0 || l.observer != nil {
		l.keys.Add(-1)
	}
	if l.observer != nil {
		l.changes.Add(1)
	}
	*ks = keyState{}
	if len(s.pool) < poolMax {
		s.pool = append(s.pool, ks)
	}
	// A Go map keeps its buckets when emptied: rebuild it once it is
	// mostly empty, so memory follows what is in flight.
	if s.peak >= shrinkMin && len(s.keys) <= s.peak/8 {
		m := make(map[string]*keyState, len(s.keys))
		for k, v := range s.keys {
			m[k] = v
		}
		s.keys, s.peak = m, len(m)
	}
}

// hold grants n slots of ks, with a lease from now if the Limiter has
// leases, and returns their Permit.
func (s *shard) hold(ks *keyState, n, now int64) Permit {
	i := s.free
	if i != nilIdx {
		s.free = s.slab[i].snext
	} else {
		i = int32(len(s.slab))
		s.slab = append(s.slab, holder{})
	}
	s.nextID++
	h := &s.slab[i]
	h.id, h.ks, h.n = s.nextID, ks, n
	s.held++
	ks.inflight += n
	if lease := s.l.lease; lease > 0 {
		h.deadline = now + lease
		if h.deadline < now { // overflow
			h.deadline = math.MaxInt64
		}
		s.link(ks, i)
	}
	return Permit{s: s, idx: i, id: h.id}
}

// link inserts holder i into the shard's and its key's lease lists, in
// deadline order. Deadlines come in order unless the clock went back, so
// the walk from the tail almost always stops at once.
func (s *shard) link(ks *keyState, i int32) {
	h := &s.slab[i]
	at := h.deadline
	p := s.ltail
	for p != nilIdx && s.slab[p].deadline > at {
		p = s.slab[p].sprev
	}
	h.sprev = p
	if p == nilIdx {
		h.snext, s.lhead = s.lhead, i
	} else {
		h.snext, s.slab[p].snext = s.slab[p].snext, i
	}
	if h.snext == nilIdx {
		s.ltail = i
	} else {
		s.slab[h.snext].sprev = i
	}

	p = ks.ltail
	for p != nilIdx && s.slab[p].deadline > at {
		p = s.slab[p].kprev
	}
	h.kprev = p
	if p == nilIdx {
		h.knext, ks.lhead = ks.lhead, i
		// A new earliest deadline for the key (the clock went back):
		// its first waiter's timer must be set earlier.
		if ks.whead != nil {
			ks.whead.notify()
		}
	} else {
		h.knext, s.slab[p].knext = s.slab[p].knext, i
	}
	if h.knext == nilIdx {
		ks.ltail = i
	} else {
		s.slab[h.knext].kprev = i
	}
}

// unlink removes holder i from the lease lists.
func (s *shard) unlink(ks *keyState, i int32) {
	h := &s.slab[i]
	if h.sprev == nilIdx {
		s.lhead = h.snext
	} else {
		s.slab[h.sprev].snext = h.snext
	}
	if h.snext == nilIdx {
		s.ltail = h.sprev
	} else {
		s.slab[h.snext].sprev = h.sprev
	}
	if h.kprev == nilIdx {
		ks.lhead = h.knext
	} else {
		s.slab[h.kprev].knext = h.knext
	}
	if h.knext == nilIdx {
		ks.ltail = h.kprev
	} else {
		s.slab[h.knext].kprev = h.kprev
	}
}

// drop frees holder i, giving its slots back to its key, and returns the
// key.
func (s *shard) drop(i int32) *keyState {
	h := &s.slab[i]
	ks := h.ks
	if s.l.lease > 0 {
		s.unlink(ks, i)
	}
	ks.inflight -= h.n
	h.id, h.ks, h.snext = 0, nil, s.free
	s.free = i
	s.held--
	if s.held == 0 && len(s.slab) >= slabShrinkAt {
		// Ids are never reused, so a late Permit cannot match a new
		// holder at its old index.
		s.slab, s.free = nil, nilIdx
	}
	return ks
}

// reclaim frees the holders whose leases have expired at now, serves the
// callers waiting for their keys, and forgets keys left idle.
func (s *shard) reclaim(now int64) {
	for s.lhead != nilIdx && s.slab[s.lhead].deadline <= now {
		ks := s.drop(s.lhead)
		s.l.reclaimed.Add(1)
		if ks.whead != nil {
			s.serve(ks, now, ks.whead)
		}
		s.forget(ks)
	}
}

// serve grants slots to the callers waiting for ks, in order, as long as
// the first fits: strict FIFO, the first waiter blocks those behind it. If
// the first waiter is then one that was not first before (prev), it is told
// so, to set its lease timer.
func (s *shard) serve(ks *keyState, now int64, prev *waiter) {
	for w := ks.whead; w != nil && w.n <= w.max-ks.inflight; w = ks.whead {
		ks.dequeue(w)
		w.permit = s.hold(ks, w.n, now)
		w.granted = true
		w.dec = s.decide(ks, w.max, w.n, true, now)
		w.notify()
	}
	if w := ks.whead; w != nil && w != prev && s.l.lease > 0 {
		w.notify()
	}
}

// decide returns the Decision for a request of n slots of ks (nil: a key
// without state) under max, at now.
func (s *shard) decide(ks *keyState, max, n int64, allowed bool, now int64) admit.Decision {
	d := admit.Decision{
		Allowed:   allowed,
		Limit:     admit.Limit{Rate: max, Burst: max},
		Remaining: max,
		Rule:      s.l.name,
		Kind:      admit.KindConcurrency,
	}
	if !allowed && n > max {
		d.RetryAfter = admit.InfDuration
	}
	if ks == nil {
		return d
	}
	d.Remaining = 0
	if ks.whead == nil && ks.inflight < max {
		d.Remaining = max - ks.inflight
	}
	if ks.ltail == nilIdx {
		return d
	}
	d.ResetAfter = durationTo(s.slab[ks.ltail].deadline, now)
	if allowed || n > max {
		return d
	}
	// The time until enough of the slots held now reach their lease
	// deadlines for n to fit (at least the earliest deadline, when n is
	// denied only because callers are waiting).
	free := max - ks.inflight
	for i := ks.lhead; i != nilIdx; i = s.slab[i].knext {
		free += s.slab[i].n
		d.RetryAfter = durationTo(s.slab[i].deadline, now)
		if free >= n {
			break
		}
	}
	return d
}

// durationTo returns the time from now to at, at least 1ns.
func durationTo(at, now int64) time.Duration {
	if at <= now {
		return 1
	}
	return time.Duration(at - now)
}
