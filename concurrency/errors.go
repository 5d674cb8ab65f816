package concurrency

import "errors"

// Errors returned by this package, besides those of package admit
// (admit.ErrInvalidLimit, admit.ErrInvalidCost, admit.ErrExceedsBurst). They
// are wrapped with %w where a call has more to say, so test them with
// errors.Is.
var (
	// ErrTooManyKeys reports that a Limiter holds state for its maximum
	// number of keys (see Config.MaxKeys), none of them idle, so a request
	// for a new key cannot be decided. Keys in use cannot be forgotten
	// (their holders would be lost), so the request is refused instead;
	// it may succeed once other keys' slots are released.
	ErrTooManyKeys = errors.New("concurrency: too many keys")

	// ErrKeyTooLong reports a key longer than the Limiter's maximum (see
	// Config.MaxKeyLength).
	ErrKeyTooLong = errors.New("concurrency: key too long")
)
