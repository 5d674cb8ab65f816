package adaptive

import (
	"fmt"

	"github.com/admit-go/admit"
)

// This package has no error values of its own: it returns those of package
// admit, wrapped with %w and a message naming the problem, so test them
// with errors.Is: admit.ErrInvalidConfig for a Config field outside its
// domain or bounds that are not 1 <= Min <= Initial <= Max,
// admit.ErrInvalidLimit for bounds that make no limit, admit.ErrInvalidCost
// for n < 0, admit.ErrExceedsBurst for a request that can never be
// admitted, and admit.ErrQueueFull for a Gradient whose queue holds
// GradientConfig.MaxWaiters callers.

// badBounds returns an error wrapping admit.ErrInvalidConfig for bounds
// that are not 1 <= Min <= Initial <= Max in an AIMDConfig or a
// GradientConfig.
func badBounds(format string, args ...any) error {
	return fmt.Errorf("adaptive: invalid bounds: "+format+": %w", append(args, admit.ErrInvalidConfig)...)
}
