package admit

import (
	"time"

	"github.com/admit-go/admit/internal/timeline"
)

// The limiters count time in nanoseconds on the Unix time line (see package
// internal/timeline): instants with a monotonic reading convert by it, so
// wall-clock steps neither refill nor drain a limit; wall-only instants
// convert to their Unix nanoseconds; instants before 1970 count as 1970,
// after 2116 as 2116.
var (
	base      = timeline.Base
	baseNanos = timeline.BaseNanos
)

// nanos converts t to the step functions' time line.
func nanos(t time.Time) int64 { return timeline.Nanos(t) }

// clockNanos reads c on the time line. For SystemClock it reads only the
// monotonic clock (time.Since(base)), which is what nanos(time.Now()) uses
// anyway, at about half the cost of time.Now.
func clockNanos(c Clock) int64 {
	if isSystem(c) {
		return timeline.Now()
	}
	return nanos(c.Now())
}

// isSystem reports whether c is SystemClock: a type assertion, cheaper than
// comparing interfaces.
func isSystem(c Clock) bool {
	_, ok := c.(systemClock)
	return ok
}

// fromNanos converts back (with a monotonic reading), for reporting
// instants such as a reservation's time to act.
func fromNanos(ns int64) time.Time { return timeline.Time(ns) }
