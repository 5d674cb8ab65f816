package keyed

import (
	"fmt"
	"runtime"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/defaults"
)

// Config configures a Limiter (New, LocalShare, LiveShare). Every field's
// zero value is its default; set Limit, since the zero Limit denies every
// request that does not give its own (Request.Limit).
type Config struct {
	// Options are the clock, name and observer (see admit.Options). The
	// clock is read by Allow and Refund for a Request whose At is zero.
	// The observer is told of every decision and eviction, and of the
	// number of keys held (Tracked): 0 by New, then whenever keys are
	// evicted and as their number grows, so that it lags by an eighth of
	// it (and a key per shard) at most.
	admit.Options

	// Algorithm decides each key; the zero value is admit.AlgGCRA.
	Algorithm admit.Algorithm

	// Limit is the limit of the calls that do not give one
	// (Request.Limit). The zero Limit denies every such call; an invalid
	// Limit is an error wrapping admit.ErrInvalidLimit. For LocalShare and
	// LiveShare, it is the limit the instances share.
	Limit admit.Limit

	// MaxKeys caps the number of keys the limiter holds (see Limiter for
	// what happens at the cap). The cap is enforced per shard, so the
	// limiter holds at most MaxKeys rounded up to a multiple of the number
	// of shards. 0 means 1<<20; a negative value is an error.
	MaxKeys int

	// MaxKeyLength is the longest key, in bytes, the limiter accepts; a
	// longer key is an error wrapping admit.ErrKeyTooLong. 0 means 4096; it
	// must be at most 1<<24, and a negative value is an error.
	MaxKeyLength int

	// ForgetAfter is how long a key that is back at full capacity is kept
	// before it may be forgotten (see Limiter). 0 means one second; a
	// negative value means no grace period: such a key may be forgotten at
	// once.
	ForgetAfter time.Duration

	// Shards is the number of shards (locks) of the table, rounded up to a
	// power of two. 0 means 16 per CPU (GOMAXPROCS); in every case at most
	// 4096 and at most one per 8 keys of the cap. A negative value is an
	// error.
	Shards int
}

// The defaults of Config's fields, and the largest MaxKeyLength.
const (
	defaultMaxKeys      = 1 << 20
	defaultMaxKeyLength = 4096
	defaultForgetAfter  = time.Second
	maxKeyLength        = 1 << 24
)

// settings are a Config checked, with its defaults filled in.
type settings struct {
	clock     admit.Clock
	maxKeys   int
	maxKeyLen int
	shards    int
	grace     int64
}

// settings checks cfg's fields (not its Limit and Algorithm, which New
// checks) and fills in their defaults.
func (cfg *Config) settings() (settings, error) {
	s := settings{
		clock:     defaults.Clock(cfg.Options),
		maxKeys:   cfg.MaxKeys,
		maxKeyLen: cfg.MaxKeyLength,
		shards:    cfg.Shards,
		grace:     int64(cfg.ForgetAfter),
	}
	switch {
	case cfg.MaxKeys < 0:
		return s, fmt.Errorf("%w: keyed: MaxKeys %d: want >= 0", admit.ErrInvalidConfig, cfg.MaxKeys)
	case cfg.MaxKeyLength < 0 || cfg.MaxKeyLength > maxKeyLength:
		return s, fmt.Errorf("%w: keyed: MaxKeyLength %d: want 0 to %d", admit.ErrInvalidConfig, cfg.MaxKeyLength, maxKeyLength)
	case cfg.Shards < 0:
		return s, fmt.Errorf("%w: keyed: Shards %d: want >= 0", admit.ErrInvalidConfig, cfg.Shards)
	}
	if s.maxKeys == 0 {
		s.maxKeys = defaultMaxKeys
	}
	if s.maxKeyLen == 0 {
		s.maxKeyLen = defaultMaxKeyLength
	}
	switch {
	case cfg.ForgetAfter == 0:
		s.grace = int64(defaultForgetAfter)
	case cfg.ForgetAfter < 0:
		s.grace = 0
	}
	if s.shards == 0 {
		s.shards = 16 * runtime.GOMAXPROCS(0)
	}
	s.shards = pow2(min(s.shards, 1<<12, max(s.maxKeys/8, 1)))
	return s, nil
}
