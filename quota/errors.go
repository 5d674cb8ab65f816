package quota

import "errors"

// Errors returned by this package, besides admit's ErrInvalidCost. They are
// wrapped with %w where a call has more to say, so test them with
// errors.Is.
var (
	// ErrInvalidQuota reports a quota size below 1, given to New or per
	// call (Request.Limit.Rate).
	ErrInvalidQuota = errors.New("quota: invalid quota size")

	// ErrInvalidPeriod reports a Period this package does not define.
	ErrInvalidPeriod = errors.New("quota: invalid period")

	// ErrInvalidOption reports an option given an invalid value, such as a
	// nil location or a negative key cap.
	ErrInvalidOption = errors.New("quota: invalid option")

	// ErrKeyTooLong reports a key longer than the quota's maximum (see
	// WithMaxKeyLength). Nothing was consumed.
	ErrKeyTooLong = errors.New("quota: key too long")

	// ErrTooManyKeys reports that a new key could not be stored: the quota
	// holds its maximum number of keys (see WithMaxKeys) and none of them
	// is from an ended period. The request was refused and nothing was
	// consumed.
	ErrTooManyKeys = errors.New("quota: too many keys")
)
