package server

// Expiry of the lease table: its heap by expiry, and the goroutine that reaps.

import (
	"context"
	"time"

	"github.com/admit-go/admit"
)

// releasingLocked returns the done channels of the batches of expired
// leases being given back.
func (l *leaseTable) releasingLocked() []chan struct{} {
	var batches []chan struct{}
	for x := range l.releasing {
		batches = append(batches, x.done)
	}
	return batches
}

// waitReleased waits until every channel of batches is closed, or ctx is
// done.
func waitReleased(ctx context.Context, batches []chan struct{}) error {
	for _, done := range batches {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// expiry is a batch of expired leases taken off the table together;
// done is closed once their slots are given back.
type expiry struct {
	leases []*lease
	done   chan struct{}
}

// expireLocked removes the leases expired at now from the table and
// returns them as a batch registered in l.releasing, to be given back
// (giveBack) once the lock is released; nil when none expired.
func (l *leaseTable) expireLocked(now time.Time) *expiry {
	var x *expiry
	for {
		ls, ok := l.queue.PopExpired(now)
		if !ok {
			break
		}
		delete(l.byID, ls.id)
		if x == nil {
			x = &expiry{done: make(chan struct{})}
			l.releasing[x] = struct{}{}
		}
		x.leases = append(x.leases, ls)
	}
	return x
}

// giveBack releases the leases of x, a batch from expireLocked (nil for
// none), and tells the acquires waiting for it.
func (l *leaseTable) giveBack(x *expiry) int {
	if x == nil {
		return 0
	}
	releaseLeases(x.leases)
	l.mu.Lock()
	delete(l.releasing, x)
	l.mu.Unlock()
	close(x.done)
	return len(x.leases)
}

func releaseLeases(ls []*lease) {
	for _, x := range ls {
		x.release(false, false)
	}
}

// run gives back expired leases: it sleeps until the earliest expiry, or
// until an earlier one is added.
func (l *leaseTable) run() {
	defer close(l.stopped)
	for {
		l.mu.Lock()
		var next time.Time
		first, pending := l.queue.First()
		if pending {
			next = first.exp.At
		}
		l.mu.Unlock()
		var t admit.Timer
		var fire <-chan time.Time
		if pending {
			t = l.clock.NewTimer(next.Sub(l.clock.Now()))
			fire = t.C()
		}
		select {
		case <-l.done:
			if t != nil {
				t.Stop()
			}
			return
		case <-l.wake:
			if t != nil {
				t.Stop()
			}
			continue
		case <-fire:
		}
		l.mu.Lock()
		expired := l.expireLocked(l.clock.Now())
		l.mu.Unlock()
		if expired != nil && l.reaping != nil {
			l.reaping()
		}
		n := l.giveBack(expired)
		if l.reaped != nil {
			l.reaped(n)
		}
	}
}
