package quota

import (
	"errors"

	"github.com/admit-go/admit/internal/calendar"
)

// Errors returned by this package, besides admit's ErrInvalidCost. They are
// wrapped with %w where a call has more to say, so test them with
// errors.Is.
var (
	// ErrInvalidQuota reports a quota size below 1, given to New
	// (Config.Limit) or per call (Request.Limit.Rate).
	ErrInvalidQuota = errors.New("quota: invalid quota size")

	// ErrInvalidPeriod reports a Period this package does not define.
	ErrInvalidPeriod = calendar.ErrInvalidPeriod

	// ErrKeyTooLong reports a key longer than the quota's maximum (see
	// Config.MaxKeyLength). Nothing was consumed.
	ErrKeyTooLong = errors.New("quota: key too long")

	// ErrTooManyKeys reports that a new key could not be stored: the quota
	// holds its maximum number of keys (see Config.MaxKeys) and none of them
	// is from an ended period. The request was refused and nothing was
	// consumed.
	ErrTooManyKeys = errors.New("quota: too many keys")
)
