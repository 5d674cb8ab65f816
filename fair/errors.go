package fair

import (
	"errors"
	"fmt"

	"github.com/admit-go/admit"
)

// Errors returned by this package, besides those of package admit:
// admit.ErrInvalidConfig for a Config field outside its domain, for a list
// of lanes NewRateLanes or NewSlotLanes cannot use (none, more than
// 64, a name that is empty or repeated, a share outside
// [1, 2^20], or a budget too small to give every lane at least one
// event or slot of its own: the message says "fair: invalid lanes"), and
// for a weight that QueueConfig.Weight returned that is not a positive
// finite number ("fair: invalid weight"); admit.ErrInvalidLimit,
// admit.ErrInvalidCost and admit.ErrExceedsBurst. They are wrapped with %w
// where a call has more to say, so test them with errors.Is.
var (
	// ErrUnknownLane reports a key that names no lane, when no default
	// lane was set (DefaultLane of RateLanesConfig or SlotLanesConfig).
	ErrUnknownLane = errors.New("fair: unknown lane")
)

// badLanes returns an error wrapping admit.ErrInvalidConfig for a list of
// lanes that cannot be used.
func badLanes(format string, args ...any) error {
	return fmt.Errorf("%w: fair: invalid lanes: "+format, append([]any{admit.ErrInvalidConfig}, args...)...)
}
