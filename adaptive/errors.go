package adaptive

import "errors"

// Errors returned by this package, besides those of package admit
// (admit.ErrInvalidLimit for bounds that make no limit, admit.ErrInvalidCost
// for n < 0, admit.ErrExceedsBurst for a request that can never be
// admitted). They are wrapped with %w where a call has more to say, so test
// them with errors.Is.
var (
	// ErrInvalidBounds reports bounds that are not 1 <= min <= max (or an
	// initial value outside them) given to NewAIMD or NewGradient.
	ErrInvalidBounds = errors.New("adaptive: invalid bounds")

	// ErrInvalidOption reports an option given a value outside its domain:
	// a factor outside (0, 1), a NaN, a negative duration...
	ErrInvalidOption = errors.New("adaptive: invalid option")

	// ErrQueueFull reports that a Gradient's queue holds WithMaxWaiters
	// callers, so Acquire does not wait.
	ErrQueueFull = errors.New("adaptive: queue is full")
)
