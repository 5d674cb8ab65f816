package algo

// Reservations on a token bucket, kept as golang.org/x/time/rate keeps them
// (the root package's TokenBucket). x/time/rate's state is the tokens at an
// instant, which a Bucket holds as its level, plus the latest time to act of
// any reservation, which the caller holds. Giving back a cancelled
// reservation follows x/time/rate's rule: the reservation's n tokens less
// those the limit refills between its time to act and that latest time to
// act (the tokens later reservations were scheduled on), except that it
// never gives back more than n.
//
// Reservations exist only in memory: nothing here has a Lua mirror, and the
// step functions the keyed and Redis limiters share (BucketStep) are not
// changed by it.

// UnitParams returns the parameters of a bucket of burst tokens counted in
// whole tokens (Tn = Td = 1). A limiter keeps its tokens in these units
// while its limit is unlimited or zero and no other units apply.
func UnitParams(burst int64) Params {
	return Params{Mode: Normal, Burst: burst, Tn: 1, Td: 1, CapN: burst}
}

// BucketSettle returns b observed at now: its level drained to now at p's
// rate, and Last = now. An instant before b.Last counts as b.Last. p must
// limit (p.Mode == Normal).
func BucketSettle(b Bucket, p *Params, now int64) Bucket {
	now = b.clamp(now)
	if now == b.Last {
		return b
	}
	return bucketAt(b.tat(p), p, now)
}

// BucketTokensCmp compares the tokens b holds at b.Last, counted in p's
// units, with k whole tokens: -1, 0 or +1 as they are fewer, as many or
// more. k must be >= 0.
func BucketTokensCmp(b Bucket, p *Params, k int64) int {
	// tokens×Tn = CapN - Level; compare with k×Tn.
	if b.Level >= p.CapN {
		if b.Level == p.CapN && k == 0 {
			return 0
		}
		return -1
	}
	return from64(uint64(p.CapN - b.Level)).cmp(mul64(uint64(k), uint64(p.Tn)))
}

// BucketPeek decides a request of n = 0 at now as x/time/rate's AllowN(now,
// 0) does: allowed iff the tokens at now are not below zero, that is iff no
// reservation holds the bucket in debt; if they are, RetryAfter is how long
// until they are back to zero. It changes nothing. p must limit.
func BucketPeek(b Bucket, p *Params, now int64) Result {
	t := b.clamp(now)
	d := b.tat(p).debt(p, t)
	capN := from64(uint64(p.CapN))
	if !capN.less(d) {
		return gcraReport(p, d, true, 0).shift(t - now)
	}
	return gcraReport(p, d, false, d.sub(capN).ceil63(uint64(p.Td))).shift(t - now)
}

// BucketGiveBack gives back to b, at b.Last, what cancelling a reservation
// of n tokens returns: n tokens less those a limit of interval rTn/rTd ns
// (the limit the reservation was made under) refills in used ns, if that is
// positive; never more than n (a negative used counts as 0). The tokens are
// converted to p's units rounding down, and the level stops at floor: 0 for
// a bucket at its burst, p.CapN for one at zero tokens (a zero limit). ok
// reports whether the reservation had anything to give back.
func BucketGiveBack(b Bucket, p *Params, n, used, rTn, rTd, floor int64) (Bucket, bool) {
	if used < 0 {
		used = 0
	}
	back := mul64(uint64(n), uint64(rTn)) // <= the reservation's CapN < 2^63
	spent := mul64(uint64(used), uint64(rTd))
	if !spent.less(back) {
		return b, false
	}
	units := back.sub(spent).lo
	if p.Tn != rTn {
		var ok bool
		if units, ok = mulDiv(units, uint64(p.Tn), uint64(rTn), false); !ok {
			units = 1<<64 - 1
		}
	}
	if room := b.Level - floor; room <= 0 || units >= uint64(room) {
		b.Level = floor
	} else {
		b.Level -= int64(units)
	}
	return b, true
}

// TokenSpan returns how long a limit of interval tn/td ns takes to refill n
// tokens, rounded down to whole nanoseconds (n×tn must fit an int64, as it
// does for n up to the limit's burst).
func TokenSpan(n, tn, td int64) int64 {
	return n * tn / td
}
