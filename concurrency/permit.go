package concurrency

// Permit holds the slots one request was granted, until Release. It is a
// small value (a pointer and two integers), so acquiring one does not
// allocate; copies of a Permit are the same Permit.
//
// Each grant has an identity that is never reused, so releasing is safe
// whatever happened before: the second Release of a Permit (or of a copy),
// the Release of a Permit whose lease was reclaimed (see Config.Lease) and the
// Release of the zero Permit do nothing and report false. They can never
// free slots granted to someone else.
//
// The zero Permit holds nothing. A Permit is safe for concurrent use.
type Permit struct {
	s   *shard
	idx int32  // the holder's index in s.slab
	id  uint64 // the holder's id; 0 for the zero Permit
}

// Release gives back the slots p holds, to the callers waiting for its key
// first. It reports whether it did: false if p was released before, its
// lease has expired (its slots were reclaimed, or are reclaimed now), or p
// is the zero Permit (a request of n = 0, or one that was denied).
func (p Permit) Release() bool {
	s := p.s
	if s == nil {
		return false
	}
	s.mu.Lock()
	if s.l.lease > 0 {
		s.reclaim(s.l.now())
	}
	if !s.owns(p) {
		s.mu.Unlock()
		return false
	}
	s.release(p.idx)
	s.mu.Unlock()
	if s.l.observer != nil {
		s.l.track()
	}
	return true
}

// Held reports whether p still holds its slots: false once it has been
// released or its lease has expired, and for the zero Permit. A holder
// with a lease may call it to learn whether it has overrun its lease.
func (p Permit) Held() bool {
	s := p.s
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.l.lease > 0 {
		s.reclaim(s.l.now())
	}
	return s.owns(p)
}

// owns reports whether p's holder is alive. It requires s.mu.
func (s *shard) owns(p Permit) bool {
	return p.id != 0 && int(p.idx) < len(s.slab) && s.slab[p.idx].id == p.id
}

// release frees holder i, serves the callers waiting for its key and
// forgets the key if it is left idle. It requires s.mu.
func (s *shard) release(i int32) {
	ks := s.drop(i)
	if ks.whead != nil {
		var now int64
		if s.l.lease > 0 {
			now = s.l.now()
		}
		s.serve(ks, now, ks.whead)
	}
	s.forget(ks)
}
