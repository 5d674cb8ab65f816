package admit

import (
	"time"

	"github.com/admit-go/admit/internal/algo"
)

// The limiters count time in nanoseconds on the Unix time line. An instant
// read from time.Now carries a monotonic reading; converting it relative to
// base (read once at start-up) uses that reading, so a step of the wall clock
// (NTP, a manual change) neither refills nor drains a limit. Instants without
// one (time.Unix, time.Date, or after Round(0)) convert exactly to their Unix
// nanoseconds. Instants before 1970 count as 1970, after 2116 as 2116.
var (
	base      = time.Now()
	baseNanos = base.UnixNano()
)

// nanos converts t to the step functions' time line.
func nanos(t time.Time) int64 {
	d := int64(t.Sub(base)) // saturates instead of overflowing
	if d > 0 && baseNanos > algo.MaxTime-d {
		return algo.MaxTime
	}
	return algo.Clamp(baseNanos + d)
}

// fromNanos converts back, for reporting instants such as a reservation's
// time to act.
func fromNanos(ns int64) time.Time {
	return base.Add(time.Duration(ns - baseNanos))
}
