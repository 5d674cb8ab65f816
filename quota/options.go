package quota

import (
	"fmt"
	"time"

	"github.com/admit-go/admit"
)

const (
	// DefaultMaxKeys is the default cap on the keys a Quota holds.
	DefaultMaxKeys = 1 << 20
	// DefaultMaxKeyLength is the default maximum length of a key, in bytes.
	DefaultMaxKeyLength = 4096
)

// Option configures a Quota. The zero set of options gives the defaults
// documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	loc       *time.Location
	weekStart time.Weekday
	clock     admit.Clock
	name      string
	obs       admit.Observer
	maxKeys   int
	maxKeyLen int
	err       error
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func (o *options) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithLocation sets the time zone whose calendar the periods follow, as
// returned by time.LoadLocation("Europe/Paris"). The default is time.UTC.
// A nil location is an error.
func WithLocation(loc *time.Location) Option {
	return optionFunc(func(o *options) {
		if loc == nil {
			o.fail("WithLocation(nil): want a location, such as time.UTC")
			return
		}
		o.loc = loc
	})
}

// WithWeekStart sets the first day of a week, for Week quotas. The default
// is time.Monday (ISO 8601); time.Sunday is the other usual choice.
func WithWeekStart(d time.Weekday) Option {
	return optionFunc(func(o *options) {
		if d < time.Sunday || d > time.Saturday {
			o.fail("WithWeekStart(%d): want time.Sunday to time.Saturday", int(d))
			return
		}
		o.weekStart = d
	})
}

// WithClock sets the clock that Allow and Refund read for a Request whose At
// is zero. The
// default is admit.SystemClock. A nil clock leaves the default.
func WithClock(c admit.Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithName names the quota: the name is each Decision's Rule and each
// observer event's Limiter. The default is no name.
func WithName(name string) Option {
	return optionFunc(func(o *options) { o.name = name })
}

// WithObserver sets an observer told of every decision, of keys evicted and
// of the number of keys held (Tracked): 0 by New, then whenever keys are
// evicted or a new key is refused at the cap, and as their number grows,
// so that it lags by an eighth of it at most. The default is none.
func WithObserver(obs admit.Observer) Option {
	return optionFunc(func(o *options) { o.obs = obs })
}

// WithMaxKeys caps the number of keys the quota holds at n, exactly. A new
// key beyond the cap is refused with an error wrapping ErrTooManyKeys (see
// Quota). The default is DefaultMaxKeys; n must be positive.
func WithMaxKeys(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			o.fail("WithMaxKeys(%d): the cap must be positive", n)
			return
		}
		o.maxKeys = n
	})
}

// WithMaxKeyLength sets the longest key, in bytes, the quota accepts; a
// longer key is an error wrapping ErrKeyTooLong. The default is
// DefaultMaxKeyLength; n must be positive.
func WithMaxKeyLength(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			o.fail("WithMaxKeyLength(%d): want a positive length", n)
			return
		}
		o.maxKeyLen = n
	})
}
