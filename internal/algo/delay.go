package algo

// Delay mode: a request that does not fit yet is admitted if it fits within
// a bound, maxDelay ns, and the state moves ahead as if it had been
// admitted at the instant it fits, so that its slot is held (nginx's
// limit_req with delay=; the keyed form of GCRA.ReserveN). Only GCRA and the
// buckets can hold a slot ahead: their state is a time line. The result of
// such an admission has Allowed true and RetryAfter the delay (the only
// results with both); the keyed and Redis limiters turn it into
// Decision.Delay. A request that does not fit within maxDelay is decided
// as by the step function (denied, changing nothing). The Lua mirrors are
// gcraDelay (gcra.lua) and bucketDelay (bucket.lua), and the fast paths of
// fast.lua.

// GCRADelay decides n events at now as GCRAStep does, except that a
// request that would be admitted within maxDelay ns is admitted now, with
// RetryAfter the wait, and the TAT moves ahead by n×T from where it was.
// maxDelay <= 0 is GCRAStep. n must be >= 0.
func GCRADelay(s GCRA, p *Params, now, n, maxDelay int64) (GCRA, Result) {
	next, r := GCRAStep(s, p, now, n)
	if r.Allowed || r.RetryAfter > maxDelay || r.RetryAfter > MaxSpan {
		return next, r
	}
	need := s.debt(p, now).add64(uint64(n) * uint64(p.Tn))
	return gcraAt(p, now, need), gcraReport(p, need, true, r.RetryAfter)
}

// BucketDelay is GCRADelay for a bucket: decided at max(now, Last), as
// BucketStep decides, with the wait counted from now.
func BucketDelay(b Bucket, p *Params, now, n, maxDelay int64) (Bucket, Result) {
	if p.Mode != Normal {
		return BucketStep(b, p, now, n)
	}
	t := b.clamp(now)
	g, r := GCRADelay(b.tat(p), p, t, n, maxDelay-(t-now))
	if r.Allowed && n > 0 {
		b = bucketAt(g, p, t)
	}
	return b, r.shift(t - now)
}
