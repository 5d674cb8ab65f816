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
	// ahead is how far after base the time line goes on (to MaxTime).
	ahead = uint64(algo.MaxTime - algo.Clamp(baseNanos))
)

// nanos converts t to the step functions' time line. It is small enough to
// be inlined on the decision paths.
func nanos(t time.Time) int64 {
	d := t.Sub(base) // saturates instead of overflowing
	if uint64(d) <= ahead && baseNanos >= 0 {
		return baseNanos + int64(d)
	}
	return nanosFar(int64(d))
}

// clockNanos reads c on the time line. For SystemClock it reads only the
// monotonic clock (time.Since(base)), which is what nanos(time.Now()) uses
// anyway, at about half the cost of time.Now.
func clockNanos(c Clock) int64 {
	if c == SystemClock {
		return nanosAfter(int64(time.Since(base)))
	}
	return nanos(c.Now())
}

// nanosAfter converts d ns after base.
func nanosAfter(d int64) int64 {
	if uint64(d) <= ahead && baseNanos >= 0 {
		return baseNanos + d
	}
	return nanosFar(d)
}

// nanosFar is nanos for an instant before base or beyond MaxTime.
func nanosFar(d int64) int64 {
	if d > 0 && baseNanos > algo.MaxTime-d {
		return algo.MaxTime
	}
	return algo.Clamp(baseNanos + d)
}

// fromNanos converts back (with a monotonic reading), for reporting instants such as a reservation's
// time to act.
func fromNanos(ns int64) time.Time {
	return base.Add(time.Duration(ns - baseNanos))
}
