package prefetch

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
)

// holdOf is the block of m events a grant gave, the grant asked at
// instant sent and answered at recv (this instance's clock) with decision
// d. The block ends no later than the Store's state says, mapped onto this
// instance's clock from sent (the Store decided at or after it), so that
// it expires early rather than late: a slot of the GCRA family is spent
// only while this instance's clock, counted from sent, has not passed it;
// a window's events only from recv (the Store's window had begun) until
// the window's end counted from sent.
func (l *Limiter) holdOf(sent, recv, m int64, d admit.Decision) hold {
	reset := int64(d.ResetAfter) - 1 // ResetAfter is rounded up
	if !l.window {
		return hold{gcra: algo.BlockOf(&l.own.P, sent, reset, m), ok: true}
	}
	if l.sliding {
		// The count of the current window weighs until the end of the
		// next one: ResetAfter ends a window later than this one (the
		// approximate form's ends up to W/m sooner, m <= its count, so
		// its block may end that much before the window does: early).
		reset -= l.ceilW
	}
	return hold{left: m, start: recv, end: sent + reset, ok: true}
}

// left returns what h can still spend at now.
func (l *Limiter) left(h *hold, now int64) int64 {
	switch {
	case !h.ok:
		return 0
	case !l.window:
		return algo.BlockLeft(h.gcra, &l.own.P, now)
	case now < h.start || now >= h.end:
		return 0
	}
	return h.left
}

// take spends n events of h at now if it can.
func (l *Limiter) take(h *hold, now, n int64) bool {
	if !h.ok {
		return false
	}
	if !l.window {
		b, ok := algo.BlockStep(h.gcra, &l.own.P, now, n)
		h.gcra = b
		return ok
	}
	if now < h.start || now >= h.end || n > h.left {
		return false
	}
	h.left -= n
	return true
}

// spend admits n events at now from e's blocks if they fit in one.
func (l *Limiter) spend(e *entry, now, n int64) (admit.Decision, bool) {
	fromCur := l.take(&e.cur, now, n)
	if !fromCur && !l.take(&e.nxt, now, n) {
		return admit.Decision{}, false
	}
	if !fromCur && l.left(&e.cur, now) == 0 {
		e.cur, e.nxt = e.nxt, hold{} // cur is spent or expired
		fromCur = true
	}
	e.latest, e.latestCur, e.latestOK = n, fromCur, true
	l.st.local.Add(n)
	return admit.Decision{
		Allowed:   true,
		Limit:     l.own.Limit,
		Remaining: l.left(&e.cur, now) + l.left(&e.nxt, now),
		Rule:      l.name,
	}, true
}

// install keeps a new block in e: as the current one if that is spent,
// otherwise as the next.
func (l *Limiter) install(e *entry, h hold, now int64) {
	if left := l.left(&e.cur, now); left == 0 {
		e.cur = h
		return
	}
	e.nxt = h // a waiting block, if any, is dropped (counted in Stats.Unspent)
}

// blockSize returns the size of the block to take for a request of n at
// now: about the key's arrivals over a block's life (Interval for the
// GCRA family; for a window the rest of its current window, at least
// Interval), at least n, at most MaxBlock; 0 if the key is cold, expected
// fewer than twice in that time.
func (l *Limiter) blockSize(e *entry, now, n int64) int64 {
	elapsed := max(now-e.since, 1)
	if elapsed > 2*l.horizon {
		// Keep the estimate recent: the older half of the count goes.
		e.seen, e.since = (e.seen+1)/2, now-elapsed/2
		elapsed -= elapsed / 2
	}
	if e.seen < 2 {
		return 0
	}
	span := l.interval
	if l.window {
		span = max(span, l.ceilW-(now%l.ceilW+l.ceilW)%l.ceilW)
	}
	maxBlock := l.maxBlock.Load()
	if e.seen > (1<<62)/span {
		return maxBlock // asked so often that any block is small
	}
	// The arrivals expected over span: seen × span / elapsed.
	if e.seen*span < 2*elapsed {
		return 0
	}
	want := (e.seen*span + elapsed - 1) / elapsed
	return min(max(want, n), maxBlock)
}

// wantFetch returns the size of a block to fetch in the background for e
// (and marks e fetching), or 0: when the key is warm, nothing is in flight
// or waiting, and what e holds is half a block or less.
func (l *Limiter) wantFetch(e *entry, now int64) int64 {
	if e.fetching || e.nxt.ok || now < e.denied {
		return 0 // in flight, waiting, or the store is short until then
	}
	k := l.blockSize(e, now, 1)
	if k == 0 || 2*l.left(&e.cur, now) > k {
		return 0
	}
	l.startFetch(e)
	return k
}

// giveBack refunds to the Store what e's window blocks hold at now (Close).
func (l *Limiter) giveBack(ctx context.Context, key string, e *entry, now int64) error {
	if !l.window {
		return nil
	}
	e.mu.Lock()
	n := l.left(&e.cur, now) + l.left(&e.nxt, now)
	e.cur, e.nxt = hold{}, hold{}
	e.mu.Unlock()
	if n == 0 {
		return nil
	}
	if err := l.refunder().Refund(ctx, admit.Request{Key: key, N: n}); err != nil {
		return fmt.Errorf("prefetch: giving back %d events of %q: %w", n, key, err)
	}
	l.st.closed.Add(n)
	return nil
}

// refunder returns the Store as a Refunder, or one that gives nothing
// back.
func (l *Limiter) refunder() admit.Refunder {
	if rf, ok := l.store.(admit.Refunder); ok {
		return rf
	}
	return noRefund{}
}

type noRefund struct{}

func (noRefund) Refund(context.Context, admit.Request) error { return nil }

// Refund gives back r.N events admitted for r.Key at r.At (the clock's now
// when zero). The latest admission of the key from a block goes back into
// that block (its slots, never before r.At; its count for a window). Any
// other refund of a window goes to the Store, which takes it off the
// window's count; of GCRA or a bucket it is dropped: moving the Store's
// state back could hand out slots that another instance's block holds,
// which would break the bound. The error is non-nil only for bad input.
func (l *Limiter) Refund(ctx context.Context, r admit.Request) error {
	if r.N < 0 {
		return fmt.Errorf("%w: prefetch: n=%d", admit.ErrInvalidCost, r.N)
	}
	if r.N == 0 {
		return nil
	}
	if e := l.keys.get(r.Key); e != nil && (r.Limit == (admit.Limit{}) || r.Limit == l.own.Key) {
		now := l.at(r.At)
		e.mu.Lock()
		if e.latestOK && e.latest == r.N {
			h := &e.nxt
			if e.latestCur {
				h = &e.cur
			}
			if l.window {
				h.left += r.N
			} else {
				h.gcra = algo.BlockUndo(h.gcra, &l.own.P, now, r.N)
			}
			e.latestOK = false
			e.mu.Unlock()
			l.st.intoBlocks.Add(r.N)
			return nil
		}
		e.mu.Unlock()
	}
	if !l.window {
		l.st.dropped.Add(r.N)
		return nil
	}
	l.st.toStore.Add(r.N)
	return l.refunder().Refund(ctx, r)
}

// Stats are a Limiter's counts since New.
type Stats struct {
	Blocks int64 // blocks taken from the Store
	Taken  int64 // events those blocks held
	Local  int64 // events admitted from blocks
	Strict int64 // requests sent to the Store as they were
	Cached int64 // denials answered from memory
	// Early is the denials of Cached the Store would have admitted: while
	// this instance waited for a block's worth to come back before asking
	// again, one for each event that came back to the Store meanwhile (an
	// upper bound of the capacity the wait cost). A denial by the Store
	// while other instances' blocks hold capacity is early too; this
	// instance cannot tell it apart (the others' Held and Unspent bound
	// it).
	Early int64
	// Held is what the blocks hold now, and Unspent what they held but
	// neither spent nor gave back: slots that expired, blocks dropped with
	// their key or replaced while waiting. Held and Unspent are the
	// capacity this instance kept from the others.
	Held, Unspent int64
	Refunded      int64 // events of refunds given back into a block or to the Store
	Dropped       int64 // events of refunds dropped (see Refund)
	Keys          int   // keys this instance keeps local state for
	// Instances and MaxBlock are the instances the Limiter sizes blocks
	// for (Config.Instances, SetInstances) and the most a block holds now.
	Instances int
	MaxBlock  int64
}

type counters struct {
	blocks, taken, local, strict, cached, early atomic.Int64
	intoBlocks, toStore, closed, dropped        atomic.Int64
}

// Stats returns the Limiter's counts; it visits every key (for Held).
func (l *Limiter) Stats() Stats {
	s := &l.st
	now := l.now()
	var held int64
	keys := 0
	l.keys.each(func(_ string, e *entry) {
		e.mu.Lock()
		held += l.left(&e.cur, now) + l.left(&e.nxt, now)
		e.mu.Unlock()
		keys++
	})
	taken, local, into := s.taken.Load(), s.local.Load(), s.intoBlocks.Load()
	return Stats{
		Blocks: s.blocks.Load(), Taken: taken, Local: local, Strict: s.strict.Load(), Cached: s.cached.Load(), Early: s.early.Load(),
		Held: held, Unspent: taken + into - local - held - s.closed.Load(),
		Refunded: into + s.toStore.Load() + s.closed.Load(), Dropped: s.dropped.Load(), Keys: keys,
		Instances: int(l.fleet.Load()), MaxBlock: l.maxBlock.Load(),
	}
}
