package algo

// The pacer (a leaky bucket used as a queue) releases events one emission
// interval T apart. Its state is a GCRA state with burst 1: the TAT is the
// earliest instant at which the next event may be released. The functions
// below keep the schedule exact when T is not a whole number of nanoseconds:
// an event released at its slot rounded up to the nanosecond does not push
// the following slots by that rounding.

// PacerReady reports whether an event may be released at now: TAT <= now.
func PacerReady(s GCRA, now int64) bool {
	return s.At < now || (s.At == now && s.Frac == 0)
}

// PacerNext returns the state after an event is released at r. An event
// released less than 1ns after the TAT (at its slot, rounded up) took that
// slot, so the next slot is TAT+T exactly; an event released later than
// that (the pacer was idle, or the waiter woke late) moves the next slot to
// r+T, so released events are never closer than T.
func PacerNext(s GCRA, p *Params, r int64) GCRA {
	if p.Td == 1 { // Frac is 0: r < TAT+1 is r <= TAT
		if r < s.At {
			r = s.At
		}
		return GCRA{At: sat(r, p.Tn)}
	}
	tat := units(s, p)
	ru := mul64(uint64(r), uint64(p.Td))
	next := ru
	if ru.less(tat.add64(uint64(p.Td))) {
		next = tat
	}
	return fromUnits(next.add64(uint64(p.Tn)), p)
}

// PacerWait returns the ns from now until the slot k intervals after the
// TAT (the slot of the caller with k callers queued ahead of it), rounded up;
// 0 if that slot has passed. It saturates at Never.
func PacerWait(s GCRA, p *Params, now, k int64) int64 {
	if k < 0 {
		k = 0
	}
	slot := units(s, p).add(mul64(uint64(k), uint64(p.Tn)))
	nu := mul64(uint64(now), uint64(p.Td))
	if !nu.less(slot) {
		return 0
	}
	return slot.sub(nu).ceil63(uint64(p.Td))
}

// fromUnits converts an instant in units of 1/Td ns to a state, saturating
// at farFuture.
func fromUnits(u u128, p *Params) GCRA {
	q, r, ok := u.divmod(uint64(p.Td))
	if !ok || q > uint64(farFuture) {
		return GCRA{At: farFuture}
	}
	return GCRA{At: int64(q), Frac: int64(r)}
}
