package concurrency

import (
	"fmt"
	"time"

	"github.com/admit-go/admit"
)

// Config configures a Limiter. Every field's zero value is its default,
// but for Max, which New requires.
type Config struct {
	// Options are the clock, name and observer (see admit.Options). The
	// clock is the one lease deadlines are read from and whose timers
	// bound waits (MaxWait) and wake waiters when a lease expires;
	// admittest.ManualClock drives a Limiter in tests without sleeping.
	// The observer is told about each decision (Decided, after every call
	// that returns a Decision without an error, and for requests that
	// exceed the limit) and about the number of keys held (Tracked): 0 by
	// New, then whenever it has moved by an eighth (and by 16 at least)
	// since the last report, or after 4096 keys added or forgotten. The
	// Limiter calls it synchronously, outside its locks.
	admit.Options

	// Max is the number of slots in flight per key for the calls that do
	// not give one (Request.Limit.Rate). Required: it must be positive (an
	// error wrapping admit.ErrInvalidLimit).
	Max int64

	// Lease bounds how long a Permit holds its slots: Lease after it was
	// granted, if it has not been released, its slots are reclaimed and go
	// to the next callers, and its Release does nothing. A holder that
	// crashed, hangs or forgets to release then cannot leak capacity for
	// longer than Lease. Set it well above the longest legitimate hold: a
	// slot reclaimed from a holder that is still working lets one more
	// request in flight than the limit.
	//
	// Leases cost no goroutine: expired ones are reclaimed by the next call
	// (Acquire, Release, InFlight...) for any key of the same shard (a
	// Limiter's keys are spread over 32 shards), by Stats, by a request for
	// a new key that finds MaxKeys reached, and, while callers wait for a
	// key, by the first of them, woken at the deadline of the key's
	// earliest lease by a timer of the Limiter's Clock. With leases, a
	// denial's RetryAfter and ResetAfter are upper bounds drawn from the
	// lease deadlines (see Limiter). 0 means no lease: slots are held until
	// released. A negative value is an error.
	Lease time.Duration

	// MaxWaiters bounds the number of callers of Acquire waiting for one
	// key; a caller that would be one more is denied at once (a Decision,
	// not an error). 0 means no bound (each waiter's context still bounds
	// its wait); a negative value means that no caller ever waits: Acquire
	// is TryAcquire.
	MaxWaiters int

	// MaxWait bounds how long a caller of Acquire waits for its slots; a
	// caller still waiting after MaxWait leaves the queue and is denied (a
	// Decision, not an error). 0 means no bound (the context's deadline
	// still applies, and ends a wait with the context's error); a negative
	// value means that no caller ever waits: Acquire is TryAcquire.
	MaxWait time.Duration

	// MaxKeys bounds the number of keys a Limiter holds state for (keys
	// with slots held or callers waiting; idle keys are forgotten at once,
	// and the empty key, the global limit, does not count). A request for
	// a new key beyond the bound fails with an error wrapping
	// admit.ErrTooManyKeys, after expired leases have been reclaimed. 0 means no
	// bound: the number of keys is then bounded by the number of requests
	// in flight and waiting. A negative value is an error.
	MaxKeys int

	// MaxKeyLength bounds the length of keys, in bytes; a longer key fails
	// with an error wrapping admit.ErrKeyTooLong. 0 means 1024; a negative value
	// means no bound.
	MaxKeyLength int
}

// defaultMaxKeyLength is Config.MaxKeyLength's default.
const defaultMaxKeyLength = 1024

// check checks cfg; the error wraps admit.ErrInvalidConfig.
func (cfg *Config) check() error {
	switch {
	case cfg.Max <= 0:
		return fmt.Errorf("%w: concurrency: Max %d: %w: want > 0", admit.ErrInvalidConfig, cfg.Max, admit.ErrInvalidLimit)
	case cfg.Lease < 0:
		return fmt.Errorf("%w: concurrency: Lease %v: want >= 0", admit.ErrInvalidConfig, cfg.Lease)
	case cfg.MaxKeys < 0:
		return fmt.Errorf("%w: concurrency: MaxKeys %d: want >= 0", admit.ErrInvalidConfig, cfg.MaxKeys)
	}
	return nil
}
