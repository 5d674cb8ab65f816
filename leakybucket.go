package admit

import (
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// leakyBucket is the state of the limiters NewLeakyBucket returns.
type leakyBucket struct {
	m meter[algo.Bucket]
}

// NewLeakyBucket returns an empty leaky bucket used as a meter for l, with
// the settings o (at most one; see Options). The error wraps
// ErrInvalidLimit for an invalid l and ErrInvalidConfig for invalid
// settings.
//
// The bucket holds up to Burst events and leaks at Rate per Period; a
// request of n events is admitted iff its n events fit in the bucket, and
// then adds them. Over any interval of length t it admits at most
// B + ⌊t/T⌋ events (T = Period/Rate). It decides exactly as TokenBucket and
// GCRA do (its level is the burst minus a token bucket's tokens, and a
// Decision's Remaining is the room left in the bucket, in whole events:
// DecideN(now, 0) reads it without adding anything); it differs in
// SetLimitAt, which keeps the level rather than the tokens: a larger bucket
// has room at once, a smaller one may be over full and admit nothing until
// it has leaked below its new burst. For a leaky bucket used as a queue,
// which delays events instead of refusing them, see Pacer.
//
// An instant earlier than the latest one seen counts as the latest. The
// limiter is safe for concurrent use.
func NewLeakyBucket(l Limit, o ...Options) (Limiter, error) {
	b := &leakyBucket{}
	b.m.step = bucketStep
	b.m.rebase = rebaseWith(algo.BucketRebaseLevel)
	if err := b.m.init("NewLeakyBucket", l, false, o); err != nil {
		return nil, err
	}
	return b, nil
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (b *leakyBucket) Allow() bool { return b.m.allowAt(clockNanos(b.m.clock), 1) }

// AllowN reports whether n events fit in the bucket at instant now, and if
// so adds them.
func (b *leakyBucket) AllowN(now time.Time, n int) bool { return b.m.allowN(now, n) }

// Decide is shorthand for DecideN(clock.Now(), 1).
func (b *leakyBucket) Decide() Decision { return b.m.decideAt(clockNanos(b.m.clock), 1) }

// DecideN is AllowN returning the whole Decision.
func (b *leakyBucket) DecideN(now time.Time, n int) Decision { return b.m.decideN(now, n) }

// Limit returns the current limit, with Burst filled in.
func (b *leakyBucket) Limit() Limit { return b.m.getLimit() }

// SetLimit is shorthand for SetLimitAt(clock.Now(), l).
func (b *leakyBucket) SetLimit(l Limit) error { return b.SetLimitAt(b.m.clock.Now(), l) }

// SetLimitAt changes the limit at instant now. The level carries over (see
// NewLeakyBucket). The error wraps ErrInvalidLimit; the old limit then
// stays.
func (b *leakyBucket) SetLimitAt(now time.Time, l Limit) error {
	return b.m.setLimitAt(now, l, false)
}
