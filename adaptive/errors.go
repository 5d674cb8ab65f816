package adaptive

import "errors"

// Errors returned by this package, besides those of package admit
// (admit.ErrInvalidConfig for a Config field outside its domain,
// admit.ErrInvalidLimit for bounds that make no limit, admit.ErrInvalidCost
// for n < 0, admit.ErrExceedsBurst for a request that can never be
// admitted). They are wrapped with %w where a call has more to say, so test
// them with errors.Is.
var (
	// ErrInvalidBounds reports bounds that are not 1 <= Min <= Max (or an
	// Initial value outside them) in an AIMDConfig or a GradientConfig.
	ErrInvalidBounds = errors.New("adaptive: invalid bounds")

	// ErrQueueFull reports that a Gradient's queue holds
	// GradientConfig.MaxWaiters callers, so Acquire does not wait.
	ErrQueueFull = errors.New("adaptive: queue is full")
)
