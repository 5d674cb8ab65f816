package quota

import "errors"

// Errors returned by this package, besides admit's: admit.ErrInvalidConfig
// for a Config field outside its domain (a Period this package does not
// define says "invalid period") and from ParsePeriod, admit.ErrInvalidCost
// for n < 0, admit.ErrKeyTooLong for a key longer than
// Config.MaxKeyLength, and admit.ErrTooManyKeys for a new key beyond
// Config.MaxKeys when none of the keys held is from an ended period. They
// are wrapped with %w where a call has more to say, so test them with
// errors.Is.
var (
	// ErrInvalidQuota reports a quota size below 1, given to New
	// (Config.Limit, where the error wraps admit.ErrInvalidConfig too) or
	// per call (Request.Limit.Rate). The per-call error wraps nothing
	// else, so that a failure policy (compose.IsFailure) classifies it as
	// it always has.
	ErrInvalidQuota = errors.New("quota: invalid quota size")
)
