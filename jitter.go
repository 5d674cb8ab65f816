package admit

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"time"
)

// Jitter spreads the retry times of refusals, so that the clients a limit
// refused do not all come back at the same instant. A fixed window or a
// calendar quota refuses every client until it resets, and each refusal
// says "retry at the reset": without jitter they return as one herd, and
// most are refused again. With Jitter, a refusal's RetryAfter t becomes a
// time drawn uniformly from [t, t+j], where
//
//	j = min(Fraction × t, Max)    (no cap when Max is 0)
//
// The wait is never shortened: a client that waits the jittered time is
// admitted whenever one waiting exactly t would be. Jitter changes what a
// refusal reports, never what a limiter decides or counts, so a client
// cannot get more than its limit from it, whatever it sends.
//
// j is a fraction of the wait rather than a fixed duration so that one
// setting suits every limit: a wait of 100ms grows by at most
// Fraction × 100ms, and a client kept out until the end of a window or a
// quota period, the one in the herd, is spread over a fraction of what is
// left of that window. Max bounds what the long waits of calendar quotas
// (hours until midnight) may add.
//
// Durations sent in whole seconds (Retry-After) are rounded up from the
// jittered time, so they are never earlier either.
//
// The zero Jitter is off: Apply returns its decision unchanged. A Jitter
// is safe for concurrent use if its Source is (nil, the default, is).
type Jitter struct {
	// Fraction sizes the spread: j is Fraction times the wait, in [0, 1].
	// 0 turns jitter off. Values outside [0, 1] are refused by the
	// configurations that take a Jitter; Apply clamps them.
	Fraction float64

	// Max, if positive, caps j. 0 means no cap.
	Max time.Duration

	// Source gives the random numbers, 64 bits at a time (a
	// rand.NewPCG(seed1, seed2) makes tests deterministic; it is not safe
	// for concurrent use, so guard one shared by goroutines). Nil means
	// math/rand/v2's global source, which is.
	Source rand.Source
}

// Apply returns d with its retry time spread as j says: a refusal (not
// Allowed) with a finite, positive RetryAfter t gets a RetryAfter drawn
// uniformly from [t, t+j], and a ResetAfter of at least that, so that no
// duration it reports tells the client to come back before it. Admissions,
// refusals with RetryAfter 0 or InfDuration, and every decision under the
// zero Jitter are returned unchanged.
func (j Jitter) Apply(d Decision) Decision {
	t := d.RetryAfter
	if d.Allowed || t <= 0 || t == InfDuration {
		return d
	}
	span := j.span(t)
	if span <= 0 {
		return d
	}
	var u uint64
	if j.Source != nil {
		u = j.Source.Uint64()
	} else {
		u = rand.Uint64()
	}
	// The high word of u × (span+1) is uniform in [0, span].
	extra, _ := bits.Mul64(u, uint64(span)+1)
	if extra >= uint64(InfDuration-1-t) {
		t = InfDuration - 1 // a finite wait stays finite
	} else {
		t += time.Duration(extra)
	}
	d.RetryAfter = t
	d.ResetAfter = max(d.ResetAfter, t)
	return d
}

// span returns j for a wait of t: Fraction × t (rounded down, Fraction
// clamped to [0, 1]), at most Max when Max is positive.
func (j Jitter) span(t time.Duration) time.Duration {
	f := j.Fraction
	if !(f > 0) { // 0, negative, NaN
		return 0
	}
	f = min(f, 1)
	x := math.Floor(f * float64(t))
	s := time.Duration(math.MaxInt64)
	if x < math.MaxInt64 {
		s = time.Duration(x)
	}
	if j.Max > 0 {
		s = min(s, j.Max)
	}
	return s
}
