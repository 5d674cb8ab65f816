package admit

import (
	"context"
	"errors"
	"fmt"
)

// Errors returned by this package. They are wrapped with %w where a call has
// more to say, so test them with errors.Is.
var (
	// ErrInvalidLimit reports a Limit outside the domain documented on
	// Limit: from ParseLimit, Limit.Validate, a constructor or
	// SetLimit, and at call time from a keyed limiter given an invalid
	// Request.Limit, which is a bad request rather than a bad
	// configuration (see compose.IsFailure).
	ErrInvalidLimit = errors.New("admit: invalid limit")

	// ErrExceedsBurst reports a request of more events than the limit's
	// burst: it can never be admitted, whatever the wait.
	ErrExceedsBurst = errors.New("admit: request exceeds the limit's burst")

	// ErrInvalidCost reports a request of a negative number of events.
	ErrInvalidCost = errors.New("admit: negative cost")

	// ErrDeadline reports that a wait would end after the context's
	// deadline; the wait is refused at once. WaitN (of GCRA, TokenBucket
	// and adaptive.AIMD), Pacer and transport.Transport return errors
	// wrapping it, naming the package. It matches context.DeadlineExceeded
	// under errors.Is.
	ErrDeadline = fmt.Errorf("admit: wait would exceed the context deadline: %w", context.DeadlineExceeded)

	// ErrInvalidDelay reports a Request.MaxDelay a keyed limiter cannot
	// honour: a negative one, or any with an algorithm that cannot hold a
	// slot ahead (the window algorithms: see Request.MaxDelay). Like
	// ErrInvalidCost it is about the request: a failure policy passes it
	// through. The error wrapping it names the package.
	ErrInvalidDelay = errors.New("admit: invalid delay")

	// ErrQueueFull reports that a queue of waiters holds its maximum
	// number of them (a Pacer's PacerConfig.MaxQueue, an adaptive.Gradient's
	// GradientConfig.MaxWaiters); the caller is refused at once. The error
	// wrapping it names the package.
	ErrQueueFull = errors.New("admit: queue is full")

	// ErrWaitTooLong reports that a wait would exceed its maximum (a
	// Pacer's PacerConfig.MaxWait, a transport.Transport's Config.MaxWait);
	// the caller is refused at once, without waiting. The error wrapping
	// it names the package.
	ErrWaitTooLong = errors.New("admit: wait would exceed the maximum wait")

	// ErrInvalidConfig reports a Config (of any package of this module)
	// with a field outside its documented domain, or another argument
	// refused at construction: an unknown Algorithm (ParseAlgorithm, New),
	// Options a single-key limiter cannot honour, a number of instances
	// below 1 (Limit.Share), a nil limiter or a chain without layers
	// (package compose), a lease of more than a year (package
	// redisstore). The error wrapping it names the package and the field
	// or argument.
	ErrInvalidConfig = errors.New("admit: invalid config")

	// ErrKeyTooLong reports a key longer than a keyed limiter's maximum.
	// Every keyed limiter, quota and concurrency limiter of this module
	// (packages keyed, quota, concurrency, redisstore, and the middleware
	// of httplimit) returns an error wrapping it, naming the package, so
	// that a failure policy can tell a bad request from a failing store.
	// Nothing was consumed.
	ErrKeyTooLong = errors.New("admit: key too long")

	// ErrTooManyKeys reports that a new key could not be stored: a bounded
	// limiter (packages quota, concurrency; a transport.Transport, whose
	// keys are hosts) holds its maximum number of keys and none of them
	// can be forgotten without changing a decision, or a keyed.Limiter's
	// shard holds 4 GiB of keys. The request was refused and nothing was
	// consumed; it may succeed once other keys are idle. The error
	// wrapping it names the package.
	ErrTooManyKeys = errors.New("admit: too many keys")

	// ErrClosed reports a call on something of this module after its
	// Close (a redisstore.Store, a server.Server). The error wrapping it
	// names the package.
	ErrClosed = errors.New("admit: closed")
)
