package algo

// Bucket is the state of a token bucket, which is also a leaky bucket used as
// a meter: the two are one algorithm seen from two sides. Level is how full
// the leaky bucket was at instant Last, in units of 1/Td ns (one event adds
// Tn units, the bucket drains Td units per ns and holds CapN); the token
// bucket's tokens are B - Level/Tn. The zero value is an empty leaky bucket,
// that is a full token bucket.
//
// A Bucket and a GCRA state describe the same thing (TAT×Td = Last×Td +
// Level), and the step functions below are GCRA's applied to that TAT. The
// one difference is time going backwards: a Bucket remembers the latest
// instant it saw and treats an earlier one as that instant, while GCRA judges
// its TAT from the earlier instant, which owes more.
type Bucket struct {
	Last  int64
	Level int64
}

// tat converts the bucket to its GCRA state. It requires p.Mode == Normal.
func (b Bucket) tat(p *Params) GCRA {
	if b.Level == 0 {
		return GCRA{At: b.Last}
	}
	if p.Td == 1 {
		return GCRA{At: sat(b.Last, b.Level)}
	}
	return GCRA{At: sat(b.Last, b.Level/p.Td), Frac: b.Level % p.Td}
}

// bucketAt converts a GCRA state back to a bucket observed at now.
func bucketAt(g GCRA, p *Params, now int64) Bucket {
	d := g.debt(p, now)
	if !d.fits63() {
		return Bucket{Last: now, Level: 1<<63 - 1}
	}
	return Bucket{Last: now, Level: int64(d.lo)}
}

// sat returns a+b capped at farFuture (a, b >= 0).
func sat(a, b int64) int64 {
	if b > farFuture-a {
		return farFuture
	}
	return a + b
}

func (b Bucket) clamp(now int64) int64 {
	if now < b.Last {
		return b.Last
	}
	return now
}

// BucketStep admits n events at now if they fit. n must be >= 0.
func BucketStep(b Bucket, p *Params, now, n int64) (Bucket, Result) {
	if p.Mode != Normal {
		_, r := GCRAStep(GCRA{}, p, now, n)
		return b, r
	}
	t := b.clamp(now)
	g, r := GCRAStep(b.tat(p), p, t, n)
	if r.Allowed && n > 0 {
		b = bucketAt(g, p, t)
	}
	return b, r.shift(t - now)
}

// BucketAllow is BucketStep without the decision's details.
func BucketAllow(b Bucket, p *Params, now, n int64) (Bucket, bool) {
	now = b.clamp(now)
	g, ok := GCRAAllow(b.tat(p), p, now, n)
	if ok && n > 0 {
		b = bucketAt(g, p, now)
	}
	return b, ok
}

// BucketReserve is GCRAReserve for a bucket.
func BucketReserve(b Bucket, p *Params, now, n, maxWait int64) (Bucket, int64, bool) {
	if p.Mode != Normal {
		_, w, ok := GCRAReserve(GCRA{}, p, now, n, maxWait)
		return b, w, ok
	}
	now = b.clamp(now)
	g, wait, ok := GCRAReserve(b.tat(p), p, now, n, maxWait)
	if ok {
		b = bucketAt(g, p, now)
	}
	return b, wait, ok
}

// BucketUndo gives back n events admitted at now: GCRAUndo on the bucket's
// level, at now or, if the bucket has seen a later instant, at that one (as
// BucketStep admits); a bucket holding a delayed admission (a level above
// its capacity) keeps the instant it last saw. The level never goes below empty, and a bucket with
// nothing to give back is returned as it is.
func BucketUndo(b Bucket, p *Params, now, n int64) Bucket {
	if p.Mode != Normal || n <= 0 {
		return b
	}
	t := b.clamp(now)
	g := b.tat(p)
	u := GCRAUndo(g, p, t, n)
	if u == g {
		return b
	}
	if b.Level > p.CapN {
		// A delayed admission (BucketDelay), given back at its time to
		// act, later than any instant the bucket has seen: the bucket
		// keeps its Last, so that requests before that time are judged
		// at their own instants, not as if they came then.
		return bucketAt(u, p, b.Last)
	}
	return bucketAt(u, p, t)
}

// BucketReport describes the bucket at now without changing it.
func BucketReport(b Bucket, p *Params, now int64) Result {
	_, r := BucketStep(b, p, now, 0)
	return r
}

// BucketTokens returns the tokens available at now (negative while
// reservations are outstanding).
func BucketTokens(b Bucket, p *Params, now int64) float64 {
	if p.Mode != Normal {
		return GCRATokens(GCRA{}, p, now)
	}
	return GCRATokens(b.tat(p), p, b.clamp(now))
}

// BucketRebase is GCRARebase for a bucket.
func BucketRebase(b Bucket, old, new *Params, now int64) Bucket {
	now = b.clamp(now)
	var g GCRA
	if old.Mode == Normal {
		g = b.tat(old)
	}
	g = GCRARebase(g, old, new, now)
	if new.Mode != Normal {
		return Bucket{Last: now}
	}
	return bucketAt(g, new, now)
}

// BucketRebaseLevel converts a bucket kept under limit old into one under
// limit new at now keeping its level, the events it holds (rounded up), where
// BucketRebase keeps its tokens. Raising the burst this way gives room at
// once.
func BucketRebaseLevel(b Bucket, old, new *Params, now int64) Bucket {
	now = b.clamp(now)
	if new.Mode != Normal || old.Mode != Normal {
		return BucketRebase(b, old, new, now)
	}
	d := b.tat(old).debt(old, now)
	if d.hi != 0 {
		return Bucket{Last: now, Level: 1<<63 - 1}
	}
	lvl, ok := mulDiv(d.lo, uint64(new.Tn), uint64(old.Tn), true)
	if !ok || lvl > 1<<63-1 {
		return Bucket{Last: now, Level: 1<<63 - 1}
	}
	return Bucket{Last: now, Level: int64(lvl)}
}

// BucketLevel returns the events the bucket holds at now (fractional).
func BucketLevel(b Bucket, p *Params, now int64) float64 {
	if p.Mode != Normal {
		return 0
	}
	d := b.tat(p).debt(p, b.clamp(now))
	return (float64(d.hi)*(1<<64) + float64(d.lo)) / float64(p.Tn)
}
