package admit

import (
	"context"
	"errors"
	"fmt"
)

// Errors returned by this package. They are wrapped with %w where a call has
// more to say, so test them with errors.Is.
var (
	// ErrInvalidLimit reports a Limit outside the domain documented on Limit.
	ErrInvalidLimit = errors.New("admit: invalid limit")

	// ErrExceedsBurst reports a request of more events than the limit's
	// burst: it can never be admitted, whatever the wait.
	ErrExceedsBurst = errors.New("admit: request exceeds the limit's burst")

	// ErrInvalidCost reports a request of a negative number of events.
	ErrInvalidCost = errors.New("admit: negative cost")

	// ErrDeadline reports that a wait would end after the context's
	// deadline; the wait is refused at once. It matches
	// context.DeadlineExceeded under errors.Is.
	ErrDeadline = fmt.Errorf("admit: wait would exceed the context deadline: %w", context.DeadlineExceeded)

	// ErrQueueFull reports that a Pacer's queue holds its maximum number of
	// waiters.
	ErrQueueFull = errors.New("admit: pacer queue is full")

	// ErrWaitTooLong reports that a Pacer's wait would exceed its maximum.
	ErrWaitTooLong = errors.New("admit: wait would exceed the pacer's maximum wait")

	// ErrInvalidConfig reports a Config (of any package of this module)
	// with a field outside its documented domain, or an argument that sets
	// something up outside its domain (a nil limiter given to a
	// constructor, a chain without layers, a lease of more than a year);
	// the error wrapping it names the package and what is wrong.
	ErrInvalidConfig = errors.New("admit: invalid config")

	// ErrKeyTooLong reports a key longer than a keyed limiter's maximum.
	// Every keyed limiter, quota and concurrency limiter of this module
	// (packages keyed, quota, concurrency, redisstore, and the middleware
	// of httplimit) returns an error wrapping it, naming the package, so
	// that a failure policy can tell a bad request from a failing store.
	// Nothing was consumed.
	ErrKeyTooLong = errors.New("admit: key too long")

	// ErrTooManyKeys reports that a new key could not be stored: a bounded
	// limiter (packages quota, concurrency) holds its maximum number of
	// keys and none of them can be forgotten without changing a decision.
	// The request was refused and nothing was consumed; it may succeed
	// once other keys are idle. The error wrapping it names the package.
	ErrTooManyKeys = errors.New("admit: too many keys")

	// ErrClosed reports a call on something of this module after its
	// Close (a redisstore.Store, a server.Server). The error wrapping it
	// names the package.
	ErrClosed = errors.New("admit: closed")

	// ErrInvalidInstances reports a number of instances below 1 given to
	// Limit.Share (or to keyed.LocalShare, keyed.LiveShare).
	ErrInvalidInstances = errors.New("admit: invalid number of instances")

	// ErrUnknownAlgorithm reports an Algorithm name or value this package
	// does not define.
	ErrUnknownAlgorithm = errors.New("admit: unknown algorithm")
)
