package compose

import "github.com/admit-go/admit"

// Finisher is a admit.Releaser that learns how the request it was granted to
// went, such as the Token of an adaptive.Gradient (whose limit follows the
// latency of the requests that succeed and is cut when they fail) or the
// grant of an adaptive.AIMD's layer (see Learner). Finish gives back what
// Release gives back and reports the outcome: failed is true if the
// request failed in a way that says what it protects is overloaded (a
// timeout, a 503, an "unavailable"), false if it succeeded. Only the first
// of Finish and Release counts; later calls do nothing.
//
// Release on a Finisher reports no outcome, or the one a caller that does
// not know it should assume: each implementation says which. A chain that
// refuses a request releases (never finishes) the grants its earlier layers
// made, since the request did not run.
type Finisher interface {
	admit.Releaser
	Finish(failed bool)
}

// Learner is a keyed limiter that learns from the outcome of the requests
// it admits, such as the limiter adaptive.AIMD.Layer returns, whose rate
// grows while they succeed and is cut when they fail. When a layer of a
// Chain (or of Admit) whose Limiter is a Learner admits n > 0 events and
// the check has a Held, the Finisher that Track returns for the request is
// recorded in the Held, as a Slots layer's grant is: Held.Finish then
// reports the outcome to it, Held.Release reports none, and a refusal by a
// later layer releases it (and refunds the Learner, if it is a Refunder).
// Track returning nil records nothing. A check without a Held
// (Chain.Allow, or AllowKeys with a nil Held) does not call Track: the
// Learner then learns nothing from the requests it admits.
//
// Track is called with the key and the cost of the request the layer just
// admitted; the key may be scratch space of the caller, so the Finisher
// must not keep it.
type Learner interface {
	admit.KeyedLimiter
	Track(key string, n int64) Finisher
}

// Held records what the layers of admitted requests hold until the
// requests are done: the slots of Slots layers, and the Finishers of
// Learner layers. Release gives them back; Finish gives them back and
// reports the request's outcome to those that learn from it.
//
// The zero Held is empty and ready to use; keep it on the stack of the
// request's goroutine (it holds up to four grants without allocating). A
// Held is not safe for concurrent use.
type Held struct {
	small [4]admit.Releaser
	more  []admit.Releaser
	n     int
	fin   int // grants that are Finishers
}

// Len returns the number of grants h holds.
func (h *Held) Len() int { return h.n }

func (h *Held) add(r admit.Releaser) {
	if h.n < len(h.small) {
		h.small[h.n] = r
	} else {
		h.more = append(h.more, r)
	}
	h.n++
	if _, ok := r.(Finisher); ok {
		h.fin++
	}
}

func (h *Held) at(i int) *admit.Releaser {
	if i < len(h.small) {
		return &h.small[i]
	}
	return &h.more[i-len(h.small)]
}

// releaseFrom releases the grants from index mark on, newest first.
func (h *Held) releaseFrom(mark int) {
	for i := h.n - 1; i >= mark; i-- {
		p := h.at(i)
		if h.fin > 0 {
			if _, ok := (*p).(Finisher); ok {
				h.fin--
			}
		}
		(*p).Release()
		*p = nil
	}
	h.truncate(mark)
}

// truncate forgets the grants from index mark on.
func (h *Held) truncate(mark int) {
	h.n = mark
	if mark <= len(h.small) {
		h.more = h.more[:0]
	} else {
		h.more = h.more[:mark-len(h.small)]
	}
	if mark == 0 {
		h.fin = 0
	}
}

// Release gives back every grant h holds, newest first, reporting no
// outcome, and empties h, which can then be used again. Calling it on an
// empty Held, or again, does nothing. Use Finish instead when the outcome
// of the request is known and WantsOutcome reports that a grant learns
// from it.
func (h *Held) Release() { h.releaseFrom(0) }

// Finish gives back every grant h holds, newest first, as Release does,
// except that the grants that are Finishers are given back by their
// Finish(failed): failed reports that the request failed in a way that
// says what it protects is overloaded (see Finisher). It empties h, which
// can then be used again; calling it on an empty Held, or again, does
// nothing.
func (h *Held) Finish(failed bool) {
	if h.fin == 0 {
		h.releaseFrom(0)
		return
	}
	for i := h.n - 1; i >= 0; i-- {
		p := h.at(i)
		if f, ok := (*p).(Finisher); ok {
			f.Finish(failed)
		} else {
			(*p).Release()
		}
		*p = nil
	}
	h.truncate(0)
}

// WantsOutcome reports whether a grant h holds is a Finisher, which learns
// from the outcome of the request: a caller that must do work to find the
// outcome out (a middleware capturing the status its handler writes) does
// it only then, and calls Finish rather than Release.
func (h *Held) WantsOutcome() bool { return h.fin > 0 }
