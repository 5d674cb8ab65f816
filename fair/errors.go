package fair

import "errors"

// Errors returned by this package, besides those of package admit
// (admit.ErrInvalidConfig, admit.ErrInvalidLimit, admit.ErrInvalidCost,
// admit.ErrExceedsBurst).
// They are wrapped with %w where a call has more to say, so test them with
// errors.Is.
var (
	// ErrInvalidLanes reports a list of lanes NewRateLanes or NewSlotLanes
	// cannot use: none, more than MaxLanes, a name that is empty or
	// repeated, a share outside [1, MaxShare], or a budget too small to
	// give every lane at least one event (or slot) of its own.
	ErrInvalidLanes = errors.New("fair: invalid lanes")

	// ErrUnknownLane reports a key that names no lane, when no default
	// lane was set (DefaultLane of RateLanesConfig or SlotLanesConfig).
	ErrUnknownLane = errors.New("fair: unknown lane")

	// ErrInvalidWeight reports a weight function (QueueConfig.Weight) that
	// returned a weight that is not a positive finite number.
	ErrInvalidWeight = errors.New("fair: invalid weight")
)
