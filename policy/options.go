package policy

import (
	"fmt"
	"log/slog"
	"reflect"

	"github.com/admit-go/admit"
)

// DefaultMaxOverrides is the default number of distinct inline limits an
// Engine keeps limiters for (see WithMaxOverrides).
const DefaultMaxOverrides = 1024

// Option configures an Engine. The zero set of options gives the defaults
// documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	backends     map[string]Backend
	defStore     string
	clock        admit.Clock
	obs          admit.Observer
	log          *slog.Logger
	prefix       string
	prev         *Engine
	shadow       bool
	maxKeys      int
	maxOverrides int
	err          error
}

func defaultOptions() options {
	return options{defStore: StoreLocal, clock: admit.SystemClock, maxOverrides: DefaultMaxOverrides}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func (o *options) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithClock sets the clock of the limiters the backends build (Spec.Clock:
// those kept in memory; a shared store decides on its own clock) and of
// the failure policies' breakers: admittest.ManualClock decides at explicit
// instants in tests. The default is admit.SystemClock; nil leaves the
// default.
func WithClock(c admit.Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithObserver sets the observer of every limiter the engine builds, and
// of their failure policies. With an observer, keys are allocated strings
// (an observer may keep them); without, a check of limiters kept in memory
// allocates nothing. The default is none.
func WithObserver(obs admit.Observer) Option {
	return optionFunc(func(o *options) { o.obs = obs })
}

// WithLogger sets the logger told of the failure policies' switches (see
// compose.GuardConfig.Logger). The default, nil, logs nothing.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.log = l })
}

// WithKeyPrefix puts prefix in front of the name of every limiter the
// engine builds (Spec.Name), and so in the keys its rules have in a shared
// store, so that engines sharing a Redis with rules of the same names keep
// apart. The default is
// no prefix.
func WithKeyPrefix(prefix string) Option {
	return optionFunc(func(o *options) {
		if len(prefix) > MaxNameLength {
			o.fail("WithKeyPrefix: %d bytes, the maximum is %d", len(prefix), MaxNameLength)
			return
		}
		o.prefix = prefix
	})
}

// WithPrevious hands over the limiters of old, the engine of the policy
// this one replaces (a reload): each limiter whose definition did not
// change (same rule name and tier, same limit, algorithm, store, failure
// policy) is reused with its state, so a reload neither refills the keys
// of unchanged rules nor forgets the slots in flight; the others start
// afresh. Limiters are reused only if both engines have the same stores
// (the same backends by the same names, and the same default), clock,
// observer and key prefix. old keeps working until it is
// closed, sharing the reused limiters. The default, nil, reuses nothing.
func WithPrevious(old *Engine) Option {
	return optionFunc(func(o *options) { o.prev = old })
}

// WithShadow puts every rule in shadow mode (envoyproxy/ratelimit's
// global SHADOW_MODE): the engine decides, counts and reports, and never
// refuses. The default is false.
func WithShadow(on bool) Option {
	return optionFunc(func(o *options) { o.shadow = on })
}

// WithMaxKeys caps the keys each limiter kept in memory holds (see
// keyed.Config.MaxKeys, quota.Config.MaxKeys, concurrency.Config.MaxKeys), and the
// keys each rule's adaptive limit or lanes hold (see ErrTooManyKeys). The
// default is each package's default, and DefaultMaxAdaptiveKeys for
// adaptive limits and lanes; n must be positive.
func WithMaxKeys(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			o.fail("WithMaxKeys(%d): want a positive cap", n)
			return
		}
		o.maxKeys = n
	})
}

// WithMaxOverrides caps the distinct inline limits (Descriptor.Limit) the
// engine builds limiters for, per domain: a request bringing one more is
// refused with ErrTooManyOverrides. Inline limits come from a proxy's
// configuration, so they are few; the cap keeps a client that invents
// them from exhausting memory. The default is DefaultMaxOverrides; n must
// not be negative (0 refuses every inline limit).
func WithMaxOverrides(n int) Option {
	return optionFunc(func(o *options) {
		if n < 0 {
			o.fail("WithMaxOverrides(%d): want a cap >= 0", n)
			return
		}
		o.maxOverrides = n
	})
}

// compatible reports whether limiters built under o may serve an engine
// built under p.
func (o *options) compatible(p *options) bool {
	if len(o.backends) != len(p.backends) || o.defStore != p.defStore {
		return false
	}
	for name, b := range o.backends {
		if !same(b, p.backends[name]) {
			return false
		}
	}
	return same(o.clock, p.clock) && same(o.obs, p.obs) && o.prefix == p.prefix && o.maxKeys == p.maxKeys && o.log == p.log
}

// same reports whether two interface values are identical, without
// panicking on values of types that cannot be compared.
func same(a, b any) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || !ta.Comparable() {
		return false
	}
	return a == b
}
