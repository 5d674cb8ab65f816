package concurrency

import (
	"context"
	"time"

	"github.com/admit-go/admit"
)

// waiter is a caller of Acquire in a key's queue. The shard that serves it
// sets granted, permit and dec, and signals it; so does a change that
// concerns the first waiter (it became first, or the key's earliest lease
// deadline moved earlier), which then sets its lease timer.
type waiter struct {
	n, max     int64
	prev, next *waiter
	signal     chan struct{} // buffered: a signal is never lost, never blocks
	granted    bool
	permit     Permit
	dec        admit.Decision
	at         int64 // when it joined the queue, ns since New (Limiter.now)
}

// notify wakes w, if it is not already due to wake.
func (w *waiter) notify() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// enqueue appends w to the queue of ks.
func (ks *keyState) enqueue(w *waiter) {
	w.prev, w.next = ks.wtail, nil
	if ks.wtail == nil {
		ks.whead = w
	} else {
		ks.wtail.next = w
	}
	ks.wtail = w
	ks.nwait++
}

// dequeue removes w from the queue of ks.
func (ks *keyState) dequeue(w *waiter) {
	if w.prev == nil {
		ks.whead = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		ks.wtail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	ks.nwait--
}

// wait waits until w is granted its slots, its wait is too long, or ctx
// ends. Only the first waiter of a key keeps a lease timer (when leases
// are on): for the key's earliest lease deadline, at which it reclaims the
// shard's expired leases, which serves the queue.
func (l *Limiter) wait(ctx context.Context, s *shard, ks *keyState, w *waiter, key string) (Permit, admit.Decision, error) {
	var (
		maxT, leaseT admit.Timer
		maxC, leaseC <-chan time.Time
		leaseAt      int64 // the deadline leaseT is set for
	)
	if l.maxWait > 0 {
		maxT = l.clock.NewTimer(l.maxWait)
		maxC = maxT.C()
	}
	defer func() {
		if maxT != nil {
			maxT.Stop()
		}
		if leaseT != nil {
			leaseT.Stop()
		}
		l.waits.Add(1)
		l.waited.Add(max(l.now()-w.at, 0))
	}()
	for {
		s.mu.Lock()
		if w.granted {
			p, d := w.permit, w.dec
			s.mu.Unlock()
			l.observe(key, w.n, d)
			return p, d, nil
		}
		if l.lease > 0 && ks.whead == w && ks.lhead != nilIdx {
			if at := s.slab[ks.lhead].deadline; leaseT == nil || at != leaseAt {
				if leaseT != nil {
					leaseT.Stop()
				}
				leaseT = l.clock.NewTimer(time.Duration(at - l.now()))
				leaseC, leaseAt = leaseT.C(), at
			}
		}
		s.mu.Unlock()

		select {
		case <-w.signal:
		case <-leaseC:
			leaseT, leaseC = nil, nil
			s.mu.Lock()
			s.reclaim(l.now())
			s.mu.Unlock()
			l.track()
		case <-maxC:
			maxT, maxC = nil, nil
			s.mu.Lock()
			if w.granted {
				s.mu.Unlock()
				continue
			}
			d := s.leave(ks, w)
			s.mu.Unlock()
			l.observe(key, w.n, d)
			l.track()
			return Permit{}, d, nil
		case <-ctx.Done():
			s.mu.Lock()
			if w.granted {
				// Granted as the context ended: give the slots back
				// (unless their lease has run out meanwhile).
				if s.owns(w.permit) {
					s.release(w.permit.idx)
				}
				d := s.decide(s.lookup(key), w.max, w.n, false, l.leaseNow())
				s.mu.Unlock()
				l.track()
				return Permit{}, d, ctx.Err()
			}
			d := s.leave(ks, w)
			s.mu.Unlock()
			l.track()
			return Permit{}, d, ctx.Err()
		}
	}
}

// leave takes w, not granted, out of the queue of ks, serves the callers
// behind it if it was first, and returns the Decision denying it. It
// requires s.mu.
func (s *shard) leave(ks *keyState, w *waiter) admit.Decision {
	now := s.l.leaseNow()
	first := ks.whead == w
	ks.dequeue(w)
	if first {
		s.serve(ks, now, w)
	}
	d := s.decide(ks, w.max, w.n, false, now)
	s.forget(ks)
	return d
}

// leaseNow reads the clock if the Limiter has leases (the time matters
// only to them), and returns 0 otherwise.
func (l *Limiter) leaseNow() int64 {
	if l.lease > 0 {
		return l.now()
	}
	return 0
}
