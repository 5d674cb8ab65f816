// Package defaults fills in the documented defaults of the settings every
// package of the module shares (admit.Options), so that each reads them
// the same way without the root exporting helpers for it.
package defaults

import (
	"fmt"

	"github.com/admit-go/admit"
)

// Clock returns o.Clock, or admit.SystemClock when it is nil.
func Clock(o admit.Options) admit.Clock {
	if o.Clock == nil {
		return admit.SystemClock
	}
	return o.Clock
}

// JitterProblem returns what is wrong with j as a setting ("" if nothing):
// a Fraction outside [0, 1] (NaN included) or a negative Max, which
// admit.Jitter.Apply would otherwise clamp silently.
func JitterProblem(j admit.Jitter) string {
	switch {
	case !(j.Fraction >= 0 && j.Fraction <= 1):
		return fmt.Sprintf("Fraction %v: want a fraction in [0, 1] (0: off)", j.Fraction)
	case j.Max < 0:
		return fmt.Sprintf("Max %v: want a duration >= 0 (0: no cap)", j.Max)
	}
	return ""
}
