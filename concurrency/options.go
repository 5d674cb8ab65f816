package concurrency

import (
	"time"

	"github.com/admit-go/admit"
)

// Option configures a Limiter. The zero set of options gives the defaults
// documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	clock      admit.Clock
	name       string
	observer   admit.Observer
	lease      time.Duration // <= 0: none
	maxWaiters int           // < 0: no bound
	maxWait    time.Duration // < 0: no bound
	maxKeys    int           // <= 0: no bound
	maxKeyLen  int           // < 0: no bound
}

// DefaultMaxKeyLength is the longest key a Limiter accepts unless
// WithMaxKeyLength says otherwise, in bytes.
const DefaultMaxKeyLength = 1024

func defaultOptions() options {
	return options{
		clock:      admit.SystemClock,
		maxWaiters: -1,
		maxWait:    -1,
		maxKeyLen:  DefaultMaxKeyLength,
	}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock sets the clock a Limiter reads lease deadlines from and whose
// timers bound waits (WithMaxWait) and wake waiters when a lease expires.
// The default is admit.SystemClock; a nil c keeps it.
// admittest.ManualClock drives a Limiter in tests without sleeping.
func WithClock(c admit.Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithName names the Limiter; the name appears as Decision.Rule and in the
// Observer's events. The default is no name.
func WithName(name string) Option {
	return optionFunc(func(o *options) { o.name = name })
}

// WithObserver sets the Observer told about each decision (Decided, after
// every call that returns a Decision without an error, and for requests
// that exceed the limit) and about the number of keys held (Tracked): 0 by
// New, then whenever it has moved by an eighth (and by 16 at least) since
// the last report, or after 4096 keys added or forgotten. The Limiter
// calls it synchronously, outside its locks. The default, or a nil obs, is
// none.
func WithObserver(obs admit.Observer) Option {
	return optionFunc(func(o *options) { o.observer = obs })
}

// WithLease bounds how long a Permit holds its slots: d after it was
// granted, if it has not been released, its slots are reclaimed and go to
// the next callers, and its Release does nothing. A holder that crashed,
// hangs or forgets to release then cannot leak capacity for longer than d.
// Set d well above the longest legitimate hold: a slot reclaimed from a
// holder that is still working lets one more request in flight than the
// limit.
//
// Leases cost no goroutine: expired ones are reclaimed by the next call
// (Acquire, Release, InFlight...) for any key of the same shard (a
// Limiter's keys are spread over 32 shards), by Stats, by a request for a
// new key that finds WithMaxKeys reached, and, while callers wait for a
// key, by the first of them, woken at the deadline of the key's earliest
// lease by a timer of the Limiter's Clock. With leases, a denial's RetryAfter and
// ResetAfter are upper bounds drawn from the lease deadlines (see
// Limiter). The default, or d <= 0, is no lease: slots are held until
// released.
func WithLease(d time.Duration) Option {
	return optionFunc(func(o *options) { o.lease = d })
}

// WithMaxWaiters bounds the number of callers of Acquire waiting for one
// key; a caller that would be one more is denied at once (a Decision, not
// an error). With n = 0 no caller ever waits: Acquire is TryAcquire. The
// default, or a negative n, is no bound (each waiter's context still
// bounds its wait).
func WithMaxWaiters(n int) Option {
	return optionFunc(func(o *options) { o.maxWaiters = n })
}

// WithMaxWait bounds how long a caller of Acquire waits for its slots; a
// caller still waiting after d leaves the queue and is denied (a Decision,
// not an error). With d = 0 no caller ever waits: Acquire is TryAcquire.
// The default, or a negative d, is no bound (the context's deadline still
// applies, and ends a wait with the context's error).
func WithMaxWait(d time.Duration) Option {
	return optionFunc(func(o *options) { o.maxWait = d })
}

// WithMaxKeys bounds the number of keys a Limiter holds state for (keys
// with slots held or callers waiting; idle keys are forgotten at once, and
// the empty key, the global limit, does not count). A request for a new key
// beyond the bound fails with an error wrapping ErrTooManyKeys, after
// expired leases have been reclaimed. The default, or n <= 0, is no bound:
// the number of keys is then bounded by the number of requests in flight
// and waiting.
func WithMaxKeys(n int) Option {
	return optionFunc(func(o *options) { o.maxKeys = n })
}

// WithMaxKeyLength bounds the length of keys, in bytes; a longer key fails
// with an error wrapping ErrKeyTooLong. With n = 0 only the empty key (the
// global limit) is accepted. The default is DefaultMaxKeyLength (1024); a
// negative n is no bound.
func WithMaxKeyLength(n int) Option {
	return optionFunc(func(o *options) { o.maxKeyLen = n })
}
