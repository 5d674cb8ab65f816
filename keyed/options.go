package keyed

import (
	"fmt"
	"time"

	"github.com/admit-go/admit"
)

const (
	// DefaultMaxKeys is the default cap on the keys a Limiter holds.
	DefaultMaxKeys = 1 << 20
	// DefaultMaxKeyLength is the default maximum length of a key, in bytes.
	DefaultMaxKeyLength = 4096
	// DefaultForgetAfter is the default grace period before a key back at
	// full capacity is forgotten.
	DefaultForgetAfter = time.Second
	// MaxKeyLength is the largest maximum key length WithMaxKeyLength
	// accepts.
	MaxKeyLength = 1 << 24
)

// Option configures a Limiter.
type Option interface {
	apply(*options)
}

type options struct {
	clock     admit.Clock
	name      string
	obs       admit.Observer
	maxKeys   int
	maxKeyLen int
	shards    int
	grace     int64
	err       error
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock sets the clock that Allow and Refund read for a Request whose
// At is zero. The default is admit.SystemClock.
func WithClock(c admit.Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithName names the limiter: the name is each Decision's Rule and each
// observer event's Limiter. The default is no name.
func WithName(name string) Option {
	return optionFunc(func(o *options) { o.name = name })
}

// WithObserver sets an observer told of every decision and eviction, and
// of the number of keys held (Tracked): 0 by New, then whenever keys are
// evicted and as their number grows, so that it lags by an eighth of it
// (and a key per shard) at most. The default is none.
func WithObserver(obs admit.Observer) Option {
	return optionFunc(func(o *options) { o.obs = obs })
}

// WithMaxKeys caps the number of keys the limiter holds (see Limiter for
// what happens at the cap). The cap is enforced per shard, so the limiter
// holds at most n rounded up to a multiple of the number of shards. The
// default is DefaultMaxKeys; n must be positive.
func WithMaxKeys(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			o.err = fmt.Errorf("keyed: WithMaxKeys(%d): the cap must be positive", n)
			return
		}
		o.maxKeys = n
	})
}

// WithMaxKeyLength sets the longest key, in bytes, the limiter accepts; a
// longer key is an error wrapping ErrKeyTooLong. The default is
// DefaultMaxKeyLength; n must be in [1, MaxKeyLength].
func WithMaxKeyLength(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 || n > MaxKeyLength {
			o.err = fmt.Errorf("keyed: WithMaxKeyLength(%d): want 1 to %d", n, MaxKeyLength)
			return
		}
		o.maxKeyLen = n
	})
}

// WithForgetAfter sets how long a key that is back at full capacity is kept
// before it may be forgotten (see Limiter). The default is
// DefaultForgetAfter; d must not be negative.
func WithForgetAfter(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.err = fmt.Errorf("keyed: WithForgetAfter(%v): want a duration >= 0", d)
			return
		}
		o.grace = int64(d)
	})
}

// WithShards sets the number of shards (locks) of the table, rounded up to
// a power of two. The default is 16 per CPU (GOMAXPROCS), at most 4096 and
// at most one per 8 keys of the cap.
func WithShards(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			o.err = fmt.Errorf("keyed: WithShards(%d): want a positive number", n)
			return
		}
		o.shards = n
	})
}
