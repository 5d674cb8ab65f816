package parity

import (
	"math"
	"time"

	"github.com/admit-go/admit"
	"golang.org/x/time/rate"
)

// step returns the instant of the next call: mostly forward (by nothing,
// a little, about T, or onto a reservation's time to act, give or take a
// nanosecond or a grid step), sometimes backward.
func (h *harness) step() int64 {
	r := h.rng.IntN(100)
	T := h.cur.interval()
	if T == 0 {
		T = float64(time.Second)
	}
	var t int64
	switch {
	case r < 12: // backward
		free := h.u == math.MinInt64 || (h.hasC && h.u <= h.c)
		lo := h.now - int64(4*T)
		if !free {
			lo = h.u
		}
		if lo >= h.now {
			return h.now
		}
		t = lo + h.rng.Int64N(h.now-lo)
	case r < 30 && len(h.res) > 0: // a reservation's time to act
		v := h.res[h.rng.IntN(len(h.res))]
		t = v.xAct
		if h.rng.IntN(2) == 0 {
			t = v.aAct
		}
		d := int64(1)
		if h.sh.exact {
			d = grid
		}
		t += d * int64(h.rng.IntN(3)-1)
		if t < h.now {
			return h.now
		}
	case r < 45:
		t = h.now
	default:
		t = h.now + int64(h.rng.Float64()*2*T)
	}
	if h.sh.exact {
		t -= t % grid
	}
	return t
}

// run makes n calls, comparing every answer.
func (h *harness) run(n int) {
	for range n {
		t := h.step()
		h.now = max(h.now, t)
		tx := h.xAt(t)
		h.st.ops++
		h.logf("at %d (x at %d)", t, tx)
		switch r := h.rng.IntN(100); {
		case r < 22:
			h.allow(t, tx)
		case r < 42:
			h.reserve(t, tx)
		case r < 60:
			h.cancel(t, tx)
		case r < 63:
			h.cancelAgain(t)
		case r < 75:
			h.checkReservations(tx)
		case r < 84:
			h.setBurst(t, tx)
		case r < 90:
			h.setLimit(t, tx)
		default:
			h.tokens(t, tx, "TokensAt")
		}
		h.tokens(t, tx, "after")
	}
}

// tolerance is how far apart the tokens may be: nothing on the exact
// shapes; on the others, float64 rounding (a relative 1e-12 of the values
// involved) plus what the whole-nanosecond times to act have moved apart.
func (h *harness) tolerance(x float64) float64 {
	if h.sh.exact {
		return 0
	}
	return 1e-12*(math.Abs(x)+float64(h.cur.burst)+1) + h.drift
}

func (h *harness) tokens(t, tx int64, what string) {
	xv, av := h.x.TokensAt(at(tx)), h.a.TokensAt(at(t))
	h.st.compared++
	if math.Abs(xv-av) > h.tolerance(xv) {
		h.fail("%s(%d): x/time/rate %v, admit %v (drift %g)", what, t, xv, av, h.drift)
	}
	if xv == av && xv == float64(h.cur.burst) && h.drift > 0 && h.hasC && tx == h.c && h.u <= h.c {
		// Both full at the latest instant of both: the tokens have come
		// back together, and once no reservation held can be
		// cancelled, nothing rounded remains.
		for _, v := range h.res {
			if v.xAct >= tx || v.aAct >= tx {
				return
			}
		}
		h.drift = 0
	}
}

func (h *harness) allow(t, tx int64) {
	n := h.rng.IntN(h.cur.burst + 3)
	xv0, av0 := h.x.TokensAt(at(tx)), h.a.TokensAt(at(t))
	xb, ab := h.x.AllowN(at(tx), n), h.a.AllowN(at(t), n)
	h.logf("AllowN(%d, %d) = %v %v", t, n, xb, ab)
	h.st.answer("AllowN", xb)
	if xb != ab {
		// Inexact shapes: x/time/rate rounds its wait down to whole
		// nanoseconds and its tokens to float64, so it may admit a
		// request its tokens miss by less than 1ns of refill, or miss by
		// its rounding one they cover.
		if !h.sh.exact && math.Abs(av0-float64(n)) <= h.tolerance(xv0)+h.perNs() {
			h.resync("AllowN: float64 rounding")
			return
		}
		h.fail("AllowN(%d, %d): x/time/rate %v, admit %v (tokens %v, %v)", t, n, xb, ab, xv0, av0)
	}
	if xb && h.cur.mode != unlimited {
		if n > 0 && h.cur.mode == finite {
			h.movedBoth(tx)
		} else {
			h.movedEither(tx)
		}
	}
}

// perNs is the tokens the limit refills in 1ns.
func (h *harness) perNs() float64 {
	if T := h.cur.interval(); T > 0 {
		return 1 / T
	}
	return 0
}

func (h *harness) reserve(t, tx int64) {
	n := h.rng.IntN(h.cur.burst + 3)
	xv0, av0 := h.x.TokensAt(at(tx)), h.a.TokensAt(at(t))
	xr, ar := h.x.ReserveN(at(tx), n), h.a.ReserveN(at(t), n)
	xd, ad := xr.DelayFrom(at(tx)), ar.DelayFrom(at(tx))
	h.logf("ReserveN(%d, %d) = %v %v, %v %v", t, n, xr.OK(), ar.OK(), xd, ad)
	h.st.answer("ReserveN", xr.OK())
	if h.cur.mode == zero && n == 0 && (xr.OK() != ar.OK() || xd != ad) && !h.sh.exact && math.Abs(av0) <= h.tolerance(xv0) {
		// Under a zero limit, which never refills, tokens a rounding
		// below zero stay there: an infinite wait for one library,
		// none for the other.
		h.resync("ReserveN(0) under a zero limit: float64 rounding")
		return
	}
	if xr.OK() != ar.OK() {
		// Under a zero limit, a reservation of 0 while the tokens are
		// below zero: x/time/rate answers OK with an infinite delay
		// (and its latest time to act becomes infinite), admit not OK.
		if h.cur.mode == zero && n == 0 && xr.OK() && xd == rate.InfDuration && ad == admit.InfDuration {
			h.resync("ReserveN(0) under a zero limit in debt")
			return
		}
		h.fail("ReserveN(%d, %d): OK x/time/rate %v, admit %v", t, n, xr.OK(), ar.OK())
	}
	if !h.sameDelay(xd, ad) {
		h.fail("ReserveN(%d, %d): delay x/time/rate %v, admit %v", t, n, xd, ad)
	}
	if !xr.OK() {
		return
	}
	v := &res{x: xr, a: ar, n: n, xAct: tx + int64(xd), aAct: tx + int64(ad), underInf: h.cur.mode == unlimited, lim: h.cur}
	h.res = append(h.res, v)
	if len(h.res) > 64 {
		h.res = h.res[1:]
	}
	if h.cur.mode != unlimited {
		if n > 0 && h.cur.mode == finite {
			h.movedBoth(tx)
		} else {
			h.movedEither(tx)
		}
	}
}

// sameDelay: equal on the exact shapes; otherwise admit's (exact, rounded
// up) may be up to 1ns longer than x/time/rate's (float64, rounded down),
// plus what the tokens have drifted apart.
func (h *harness) sameDelay(xd, ad time.Duration) bool {
	if xd == ad || h.sh.exact {
		return xd == ad
	}
	if xd == rate.InfDuration || ad == admit.InfDuration {
		return false
	}
	slack := 1.0
	if p := h.perNs(); p > 0 {
		slack += (h.drift + 1e-12*float64(h.cur.burst+1)) / p
	}
	return math.Abs(float64(ad-xd)) <= slack+1e-9*math.Abs(float64(xd))
}

// checkReservations asks the reservations held for their OK and delay at
// tx: both must still answer what they answered when made (their times to
// act were compared then).
func (h *harness) checkReservations(tx int64) {
	for _, v := range h.res {
		xd, ad := v.x.DelayFrom(at(tx)), v.a.DelayFrom(at(tx))
		if !v.x.OK() || !v.a.OK() || xd != time.Duration(max(v.xAct-tx, 0)) || ad != time.Duration(max(v.aAct-tx, 0)) {
			h.fail("reservation of %d: at %d, OK %v %v, delay %v %v, times to act %d %d", v.n, tx, v.x.OK(), v.a.OK(), xd, ad, v.xAct, v.aAct)
		}
	}
}

// actsDiffer reports whether any reservation held has times to act that
// differ (by x/time/rate's rounding down and admit's rounding up).
func (h *harness) actsDiffer() bool {
	for _, v := range h.res {
		if v.xAct != v.aAct {
			return true
		}
	}
	return false
}

// pick returns a reservation to cancel: the latest not yet cancelled half
// the time (in order), otherwise any (out of order).
func (h *harness) pick() *res {
	if len(h.res) == 0 {
		return nil
	}
	if h.rng.IntN(2) == 0 {
		for i := len(h.res) - 1; i >= 0; i-- {
			if !h.res[i].cancelled {
				return h.res[i]
			}
		}
	}
	return h.res[h.rng.IntN(len(h.res))]
}

func (h *harness) cancel(t, tx int64) {
	v := h.pick()
	if v == nil || v.cancelled {
		return
	}
	xv0, av0 := h.x.TokensAt(at(tx)), h.a.TokensAt(at(t))
	v.x.CancelAt(at(tx))
	v.a.CancelAt(at(t))
	xv, av := h.x.TokensAt(at(tx)), h.a.TokensAt(at(t))
	h.logf("CancelAt(%d) n=%d act %d %d: tokens %v -> %v, %v -> %v", t, v.n, v.xAct, v.aAct, xv0, xv, av0, av)
	// A cancel too late, or under an unlimited limit, does nothing, and
	// the reservation may be cancelled again, at an earlier instant or
	// under a limit.
	reached := v.n > 0 && v.aAct >= tx && h.cur.mode != unlimited
	if reached {
		v.cancelled = true
		h.movedEither(tx)
		if !h.sh.exact && v.lim.mode == finite && h.prevX(v) != h.prevA(v) {
			h.chain = true
		}
	}
	if math.Abs(xv-av) <= h.tolerance(xv) {
		if !h.sh.exact && reached {
			h.drift += 2 * h.perNs() // the two times to act may each be 1ns apart
		}
		return
	}
	switch {
	case v.underInf && h.cur.mode != unlimited && av == av0:
		// Made under an unlimited limit, it took nothing; x/time/rate
		// gives back its n tokens anyway (and moves its latest time to
		// act to infinity).
		h.resync("cancel of a reservation made under Inf")
	case xv > av && math.Abs(av-math.Min(av0+float64(v.n), h.capTokens())) <= h.tolerance(av):
		// x/time/rate gave back more than the n tokens reserved (its
		// latest time to act was before this one's, after cancels out
		// of order); admit gives back n.
		h.resync("cancel gives back more than n")
	case !h.sh.exact && tx > v.xAct && tx <= v.aAct:
		// Between x/time/rate's time to act (rounded down) and admit's
		// (rounded up): too late for the one, in time for the other.
		h.resync("cancel between the rounded times to act")
	case !h.sh.exact && (h.actsDiffer() || h.chain):
		// x/time/rate recognises the latest reservation by its time to
		// act being equal to the latest time to act, and after
		// cancelling it takes the one before to act n tokens' span
		// earlier. Rounded down in float64, times 1ns apart break that
		// chain where admit's, exact, keep it.
		h.resync("cancel after times to act rounded apart")
	default:
		h.fail("CancelAt(%d) of %d (acts %d, %d): tokens x/time/rate %v -> %v, admit %v -> %v", tx, v.n, v.xAct, v.aAct, xv0, xv, av0, av)
	}
}

// prevX and prevA are the instant each library takes the reservation
// before v to act at, once v is cancelled: v's time to act less the span
// of its n tokens, in float64 rounded toward zero (x/time/rate) or exact
// and rounded down (admit).
func (h *harness) prevX(v *res) int64 {
	return v.xAct + int64(time.Duration(float64(-v.n)/float64(v.lim.xr)*1e9))
}

func (h *harness) prevA(v *res) int64 {
	return v.aAct - int64(v.n)*int64(v.lim.period)/v.lim.rate
}

// capTokens is the most tokens the bucket holds now.
func (h *harness) capTokens() float64 {
	if h.cur.mode == zero {
		return 0
	}
	return float64(h.cur.burst)
}

// cancelAgain cancels, on admit only, a reservation already cancelled:
// nothing changes. (x/time/rate gives back again; see
// TestDoubleCancel.)
func (h *harness) cancelAgain(t int64) {
	for _, v := range h.res {
		if v.cancelled {
			before := h.a.TokensAt(at(t))
			v.a.CancelAt(at(t))
			if after := h.a.TokensAt(at(t)); after != before {
				h.fail("second CancelAt(%d): tokens %v -> %v", t, before, after)
			}
			return
		}
	}
}

func (h *harness) setBurst(t, tx int64) {
	if h.cur.mode == zero {
		return // a zero Limit has no burst
	}
	b := h.sh.bursts[h.rng.IntN(len(h.sh.bursts))]
	h.logf("SetBurstAt(%d, %d)", t, b)
	h.x.SetBurstAt(at(tx), b)
	if err := h.a.SetBurstAt(at(t), int64(b)); err != nil {
		h.fail("SetBurstAt: %v", err)
	}
	h.cur.burst = b
	h.movedBoth(tx)
}

func (h *harness) setLimit(t, tx int64) {
	next := h.cur
	switch r := h.rng.IntN(10); {
	case r == 0:
		next.mode = unlimited
	case r == 1:
		next = limit{mode: zero}
	default:
		o := h.sh.others[h.rng.IntN(len(h.sh.others))]
		if h.sh.exact && o.k > h.minK {
			// Faster than a rate the tokens were counted at: their
			// finer fractions would round, in admit's units and in
			// x/time/rate's grid alike.
			return
		}
		next = o
		next.burst = h.cur.burst
		if next.burst == 0 {
			next.burst = h.sh.bursts[0]
		}
	}
	h.logf("SetLimitAt(%d, %v)", t, next)
	h.x.SetLimitAt(at(tx), next.x())
	if next.burst != h.cur.burst || next.mode == zero {
		h.x.SetBurstAt(at(tx), next.burst)
	}
	if err := h.a.SetLimitAt(at(t), next.admit()); err != nil {
		h.fail("SetLimitAt(%v): %v", next, err)
	}
	if !h.sh.exact && next.mode == finite {
		// admit carries the tokens over in the new limit's units, rounded
		// down: less than the refill of 1ns.
		h.cur = next
		h.drift += h.perNs()
	}
	h.cur = next
	if next.mode == finite {
		h.minK = min(h.minK, next.k)
	}
	h.movedBoth(tx)
}
