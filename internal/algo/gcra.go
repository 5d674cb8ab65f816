package algo

// GCRA is the state of the generic cell rate algorithm (virtual scheduling):
// the theoretical arrival time TAT = At + Frac/Td ns, with 0 <= Frac < Td.
// The TAT is the instant at which the limit would be back to full capacity;
// at instant now the limit owes the debt D = max(TAT-now, 0), and a request
// of n fits iff D + n×T <= B×T. The zero value is a full limit.
//
// When Td == 1 (T is a whole number of nanoseconds) Frac is always 0, so the
// state is one int64 and a limiter can update it with a single CAS.
type GCRA struct {
	At   int64
	Frac int64
}

// debt returns D×Td, the debt in units of 1/Td ns. A TAT in the future of
// now counts in full, including when now went backwards.
func (s GCRA) debt(p *Params, now int64) u128 {
	if s.At < now || (s.At == now && s.Frac == 0) {
		return u128{}
	}
	return mul64(uint64(s.At-now), uint64(p.Td)).add64(uint64(s.Frac))
}

// at returns the state whose TAT lies debt units after now.
func gcraAt(p *Params, now int64, debt u128) GCRA {
	if p.Td == 1 && debt.hi == 0 {
		return GCRA{At: now + int64(debt.lo)}
	}
	q, r, ok := debt.divmod(uint64(p.Td))
	if !ok || q > uint64(MaxTime) {
		return GCRA{At: farFuture}
	}
	return GCRA{At: now + int64(q), Frac: int64(r)}
}

// GCRAStep admits n events at now if they fit and returns the new state and
// the decision. n must be >= 0.
func GCRAStep(s GCRA, p *Params, now, n int64) (GCRA, Result) {
	switch p.Mode {
	case Unlimited:
		return s, unlimited()
	case Closed:
		return s, closed(n)
	}
	d0 := s.debt(p, now)
	if n == 0 {
		return s, gcraReport(p, d0, true, 0)
	}
	if n > p.Burst {
		return s, gcraReport(p, d0, false, Never)
	}
	need := d0.add64(uint64(n) * uint64(p.Tn))
	capN := from64(uint64(p.CapN))
	if capN.less(need) {
		return s, gcraReport(p, d0, false, need.sub(capN).ceil63(uint64(p.Td)))
	}
	return gcraAt(p, now, need), gcraReport(p, need, true, 0)
}

// GCRAAllow is GCRAStep without the decision's details: the hot path of the
// single-key limiter. It requires p.Mode == Normal.
func GCRAAllow(s GCRA, p *Params, now, n int64) (GCRA, bool) {
	if n > p.Burst || n < 0 {
		return s, false
	}
	if n == 0 {
		return s, true
	}
	if p.Td == 1 {
		tat := s.At
		if tat < now {
			tat = now
		}
		// tat-now < 2^63 and CapN-n×Tn >= 0, so nothing overflows.
		if tat-now > p.CapN-n*p.Tn {
			return s, false
		}
		return GCRA{At: tat + n*p.Tn}, true
	}
	need := s.debt(p, now).add64(uint64(n) * uint64(p.Tn))
	if from64(uint64(p.CapN)).less(need) {
		return s, false
	}
	return gcraAt(p, now, need), true
}

// gcraReport fills a Result from the debt d (units) after the decision.
func gcraReport(p *Params, d u128, allowed bool, retry int64) Result {
	r := Result{Allowed: allowed, RetryAfter: retry}
	if d.less(from64(uint64(p.CapN))) {
		r.Remaining = (p.CapN - int64(d.lo)) / p.Tn
	}
	r.ResetAfter = d.ceil63(uint64(p.Td))
	return r
}

// GCRAReserve reserves n events at now even when they do not fit yet, as long
// as the wait until they fit is at most maxWait ns. It returns the new state
// and the wait; ok is false if n exceeds the burst or the wait is too long,
// in which case the state is unchanged.
func GCRAReserve(s GCRA, p *Params, now, n, maxWait int64) (next GCRA, wait int64, ok bool) {
	switch p.Mode {
	case Unlimited:
		return s, 0, true
	case Closed:
		return s, 0, n == 0
	}
	if n > p.Burst || n < 0 {
		return s, 0, false
	}
	need := s.debt(p, now).add64(uint64(n) * uint64(p.Tn))
	capN := from64(uint64(p.CapN))
	if capN.less(need) {
		wait = need.sub(capN).ceil63(uint64(p.Td))
	}
	if wait > maxWait || wait > MaxSpan {
		return s, 0, false
	}
	return gcraAt(p, now, need), wait, true
}

// GCRARefund gives back n events reserved by a reservation whose state right
// after reserving was after, minus whatever later reservations moved the
// TAT past it (they were scheduled relying on those events). The TAT never
// moves before now.
func GCRARefund(s GCRA, p *Params, now int64, after GCRA, n int64) GCRA {
	if p.Mode != Normal || n <= 0 {
		return s
	}
	cur := units(s, p)
	then := units(after, p)
	refund := from64(uint64(n) * uint64(p.Tn))
	if then.less(cur) {
		used := cur.sub(then)
		if !used.less(refund) {
			return s
		}
		refund = refund.sub(used)
	}
	d := s.debt(p, now)
	if !refund.less(d) {
		return GCRA{At: now}
	}
	return gcraAt(p, now, d.sub(refund))
}

// GCRAUndo gives back n events admitted at now: it undoes GCRAStep(s, p,
// now, n) as far as the state allows. The TAT moves back by n×T, but never
// before now, so the limit never holds more than its burst; a state that
// owes nothing at now is returned as it is, and so is one that owes more
// than its capacity at now: a request admitted later with a delay
// (GCRADelay) holds a slot after now, scheduled on these events, so none
// can be given back. (A delayed admission is given back by undoing it at
// its time to act, now + its wait: it owes at most its capacity there iff
// no later admission relies on it, and the undo then restores the state
// it was admitted on.) Right after an admission of n at
// now, GCRAUndo at now leaves a state that decides as the state before the
// admission at every instant from now on. (GCRARefund is the form for
// reservations, which knows the state the reservation left.) n <= 0 and the
// degenerate modes change nothing.
func GCRAUndo(s GCRA, p *Params, now, n int64) GCRA {
	if p.Mode != Normal || n <= 0 || from64(uint64(p.CapN)).less(s.debt(p, now)) {
		return s
	}
	return gcraGive(s, p, now, mul64(uint64(n), uint64(p.Tn)))
}

// gcraGive moves the TAT of s back by refund units, never before now; a
// state that owes nothing at now is returned as it is.
func gcraGive(s GCRA, p *Params, now int64, refund u128) GCRA {
	d := s.debt(p, now)
	if d == (u128{}) {
		return s
	}
	if !refund.less(d) {
		return GCRA{At: now}
	}
	rest := d.sub(refund)
	if !rest.less(mul64(uint64(farFuture-now), uint64(p.Td))) {
		return s // still owing past farFuture, which no step makes: left as it is
	}
	return gcraAt(p, now, rest)
}

// units returns the TAT in units of 1/Td ns.
func units(s GCRA, p *Params) u128 {
	return mul64(uint64(s.At), uint64(p.Td)).add64(uint64(s.Frac))
}

// GCRAReport describes the state at now without changing it: the decision a
// request of n = 0 gets.
func GCRAReport(s GCRA, p *Params, now int64) Result {
	_, r := GCRAStep(s, p, now, 0)
	return r
}

// GCRATokens returns the events available at now as a fraction num/den
// (den = Tn), which may be negative when reservations are outstanding.
func GCRATokens(s GCRA, p *Params, now int64) float64 {
	switch p.Mode {
	case Unlimited:
		return float64(p.Burst)
	case Closed:
		return 0
	}
	d := s.debt(p, now)
	if d.hi != 0 {
		return -float64(d.hi) * (1 << 64) / float64(p.Tn)
	}
	return (float64(p.CapN) - float64(d.lo)) / float64(p.Tn)
}

// GCRARebase converts a state kept under limit old into one under limit
// new at now, so that the events available at now carry over (capped at the
// new burst; outstanding reservations carry over as a debt). The conversion
// rounds towards fewer available events by less than one unit. A limit that
// was unlimited converts to a full one, a closed one to an empty one.
func GCRARebase(s GCRA, old, new *Params, now int64) GCRA {
	if new.Mode != Normal {
		return GCRA{}
	}
	switch old.Mode {
	case Unlimited:
		return GCRA{}
	case Closed:
		return gcraAt(new, now, from64(uint64(new.CapN)))
	}
	d := s.debt(old, now)
	capOld := from64(uint64(old.CapN))
	capNew := from64(uint64(new.CapN))
	if !capOld.less(d) {
		// a = tokens×Tn_old >= 0; the new debt is CapN_new - floor(a×Tn_new/Tn_old).
		a := uint64(old.CapN) - d.lo
		keep, ok := mulDiv(a, uint64(new.Tn), uint64(old.Tn), false)
		if !ok || keep >= uint64(new.CapN) {
			return GCRA{}
		}
		return gcraAt(new, now, from64(uint64(new.CapN)-keep))
	}
	// Negative tokens: the debt beyond capacity converts, rounded up.
	over := d.sub(capOld)
	if over.hi != 0 {
		return GCRA{At: farFuture}
	}
	extra, ok := mulDiv(over.lo, uint64(new.Tn), uint64(old.Tn), true)
	if !ok {
		return GCRA{At: farFuture}
	}
	return gcraAt(new, now, capNew.add64(extra))
}

// mulDiv returns a×b/c rounded down (or up), ok=false if it overflows.
func mulDiv(a, b, c uint64, up bool) (uint64, bool) {
	q, r, ok := mul64(a, b).divmod(c)
	if !ok {
		return 0, false
	}
	if up && r != 0 {
		if q == 1<<64-1 {
			return 0, false
		}
		q++
	}
	return q, true
}
