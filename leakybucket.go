package admit

import (
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// LeakyBucket is a leaky bucket used as a meter. The bucket holds up to
// Burst events and leaks at Rate per Period; a request of n events is
// admitted iff its n events fit in the bucket, and then adds them. Over any
// interval of length t it admits at most B + ⌊t/T⌋ events (T = Period/Rate).
// It decides exactly as TokenBucket and GCRA do (its level is the burst
// minus a token bucket's tokens); it differs in SetLimit, which keeps the
// level rather than the tokens, and in speaking of a level. For a leaky
// bucket used as a queue, which delays events instead of refusing them, see
// Pacer.
//
// An instant earlier than the latest one seen counts as the latest. The zero
// LeakyBucket is not usable; create one with NewLeakyBucket. A LeakyBucket is
// safe for concurrent use.
type LeakyBucket struct {
	m meter[algo.Bucket]
}

// NewLeakyBucket returns an empty leaky bucket for l, with the settings o
// (at most one; see Options). The error wraps ErrInvalidLimit for an
// invalid l and ErrInvalidConfig for invalid settings.
func NewLeakyBucket(l Limit, o ...Options) (*LeakyBucket, error) {
	b := &LeakyBucket{}
	b.m.step = bucketStep
	b.m.rebase = rebaseWith(algo.BucketRebaseLevel)
	if err := b.m.init("NewLeakyBucket", l, false, o); err != nil {
		return nil, err
	}
	return b, nil
}

// Allow is shorthand for AllowN(clock.Now(), 1).
func (b *LeakyBucket) Allow() bool { return b.m.allowAt(clockNanos(b.m.clock), 1) }

// AllowN reports whether n events fit in the bucket at instant now, and if
// so adds them.
func (b *LeakyBucket) AllowN(now time.Time, n int) bool { return b.m.allowN(now, n) }

// Decide is shorthand for DecideN(clock.Now(), 1).
func (b *LeakyBucket) Decide() Decision { return b.m.decideAt(clockNanos(b.m.clock), 1) }

// DecideN is AllowN returning the whole Decision.
func (b *LeakyBucket) DecideN(now time.Time, n int) Decision { return b.m.decideN(now, n) }

// Limit returns the current limit, with Burst filled in.
func (b *LeakyBucket) Limit() Limit { return b.m.getLimit() }

// Level is shorthand for LevelAt(clock.Now()).
func (b *LeakyBucket) Level() float64 { return b.LevelAt(b.m.clock.Now()) }

// LevelAt returns the events the bucket holds at instant now (fractional).
func (b *LeakyBucket) LevelAt(now time.Time) float64 {
	t := nanos(now)
	b.m.mu.Lock()
	defer b.m.mu.Unlock()
	return algo.BucketLevel(b.m.st, &b.m.p, t)
}

// SetLimit is shorthand for SetLimitAt(clock.Now(), l).
func (b *LeakyBucket) SetLimit(l Limit) error { return b.SetLimitAt(b.m.clock.Now(), l) }

// SetLimitAt changes the limit at instant now. The level carries over: a
// larger bucket has room at once, a smaller one may be over full and admit
// nothing until it has leaked below its new burst. The error wraps
// ErrInvalidLimit; the old limit then stays.
func (b *LeakyBucket) SetLimitAt(now time.Time, l Limit) error {
	return b.m.setLimitAt(now, l, false)
}
