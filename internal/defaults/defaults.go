// Package defaults fills in the documented defaults of the settings every
// package of the module shares (admit.Options), so that each reads them
// the same way without the root exporting helpers for it.
package defaults

import "github.com/admit-go/admit"

// Clock returns o.Clock, or admit.SystemClock when it is nil.
func Clock(o admit.Options) admit.Clock {
	if o.Clock == nil {
		return admit.SystemClock
	}
	return o.Clock
}
