package quota

import (
	"errors"

	"github.com/admit-go/admit/internal/calendar"
)

// Errors returned by this package, besides admit's (ErrInvalidCost,
// admit.ErrKeyTooLong for a key longer than Config.MaxKeyLength, admit.ErrTooManyKeys
// for a new key beyond Config.MaxKeys when none of the keys held is from
// an ended period). They are wrapped with %w where a call has more to
// say, so test them with errors.Is.
var (
	// ErrInvalidQuota reports a quota size below 1, given to New
	// (Config.Limit) or per call (Request.Limit.Rate).
	ErrInvalidQuota = errors.New("quota: invalid quota size")

	// ErrInvalidPeriod reports a Period this package does not define.
	ErrInvalidPeriod = calendar.ErrInvalidPeriod
)
