package adaptive

// Gradient's blocking path: AcquireN and the FIFO queue of its waiters.

import (
	"context"
	"fmt"

	"github.com/admit-go/admit"
)

// gwaiter is a caller of AcquireN waiting for its slots.
type gwaiter struct {
	n          int64
	next, prev *gwaiter
	ready      chan struct{} // closed when granted or failed
	tok        Token
	err        error
	done       bool
	at         int64 // when it came, on the time line of the limiter's Clock
}

// Acquire is shorthand for AcquireN(ctx, 1).
func (g *Gradient) Acquire(ctx context.Context) (Token, error) { return g.AcquireN(ctx, 1) }

// AcquireN takes n slots, waiting for them if it must: at once if they are
// free and no caller waits (even if ctx is done), otherwise in FIFO order,
// as slots are given back and the limit grows. The latency of the request
// is counted from the instant its slots are granted, read from the
// limiter's Clock.
//
// It fails with the errors of TryAcquireN for invalid input; with an
// error wrapping admit.ErrExceedsBurst if n exceeds the current limit while
// nothing is in flight (no sample could come to grow the limit); with an
// error wrapping admit.ErrQueueFull if GradientConfig.MaxWaiters callers
// wait already; and with ctx's error if ctx ends first (slots granted just
// then are given back).
func (g *Gradient) AcquireN(ctx context.Context, n int64) (Token, error) {
	if err := g.check(n); err != nil {
		return Token{}, err
	}
	if n == 0 {
		return Token{}, nil
	}
	t := g.now()
	g.mu.Lock()
	if g.whead == nil && n <= g.lim-g.inflight {
		tok := g.grant(t, n)
		g.mu.Unlock()
		return tok, nil
	}
	if g.whead == nil && g.inflight == 0 {
		lim := g.lim
		g.mu.Unlock()
		return Token{}, fmt.Errorf("%w: %d slots requested, the limit is %d", admit.ErrExceedsBurst, n, lim)
	}
	if g.maxWaiters >= 0 && g.nwait >= g.maxWaiters {
		nwait := g.nwait
		g.mu.Unlock()
		return Token{}, fmt.Errorf("adaptive: queue is full (%d waiting): %w", nwait, admit.ErrQueueFull)
	}
	w := &gwaiter{n: n, ready: make(chan struct{}), at: t}
	g.enqueue(w)
	g.mu.Unlock()

	select {
	case <-w.ready:
		return w.tok, w.err
	case <-ctx.Done():
		t := g.now()
		g.mu.Lock()
		if w.done {
			g.mu.Unlock()
			w.tok.done(t, Ignored, 0, false)
			return Token{}, ctx.Err()
		}
		first := g.whead == w
		g.dequeue(w, t)
		if first {
			g.serve(t)
		}
		g.mu.Unlock()
		return Token{}, ctx.Err()
	}
}

func (g *Gradient) enqueue(w *gwaiter) {
	w.prev = g.wtail
	if g.wtail == nil {
		g.whead = w
	} else {
		g.wtail.next = w
	}
	g.wtail = w
	g.nwait++
}

// dequeue takes w out of the queue at instant t. It requires g.mu.
func (g *Gradient) dequeue(w *gwaiter, t int64) {
	if w.prev == nil {
		g.whead = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		g.wtail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	g.nwait--
	g.waits++
	g.waited += max(t-w.at, 0)
}

// serve grants slots to the waiters at the head of the queue, in order,
// while they fit. A head that can never fit (more than the limit with
// nothing in flight) fails. It requires g.mu.
func (g *Gradient) serve(t int64) {
	for w := g.whead; w != nil; w = g.whead {
		switch {
		case w.n <= g.lim-g.inflight:
			g.dequeue(w, t)
			w.tok = g.grant(t, w.n)
		case g.inflight == 0:
			g.dequeue(w, t)
			w.err = fmt.Errorf("%w: %d slots requested, the limit is %d", admit.ErrExceedsBurst, w.n, g.lim)
		default:
			return
		}
		w.done = true
		close(w.ready)
	}
}
