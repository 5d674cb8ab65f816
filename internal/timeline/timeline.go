// Package timeline converts instants to the step functions' time line:
// int64 nanoseconds since the Unix epoch, clamped to [0, algo.MaxTime].
//
// An instant read from time.Now carries a monotonic reading; converting it
// relative to Base (read once at start-up) uses that reading, so a step of
// the wall clock (NTP, a manual change) neither refills nor drains a limit.
// Instants without one (time.Unix, time.Date, or after Round(0)) convert
// exactly to their Unix nanoseconds. Every limiter of the module converts
// through this package, so they all agree on every instant.
package timeline

import (
	"time"

	"github.com/admit-go/admit/internal/algo"
)

var (
	// Base is the instant instants are converted relative to.
	Base = time.Now()
	// BaseNanos is Base on the time line.
	BaseNanos = Base.UnixNano()
	// ahead is how far after Base the time line goes on (to MaxTime).
	ahead = uint64(algo.MaxTime - algo.Clamp(BaseNanos))
)

// Nanos converts t to the time line.
func Nanos(t time.Time) int64 {
	d := t.Sub(Base) // saturates instead of overflowing
	if uint64(d) <= ahead && BaseNanos >= 0 {
		return BaseNanos + int64(d)
	}
	return far(int64(d))
}

// Now reads the system clock on the time line: Nanos(time.Now()), reading
// only the monotonic clock (time.Since(Base)), at about half the cost of
// time.Now.
func Now() int64 {
	return After(int64(time.Since(Base)))
}

// After converts d ns after Base.
func After(d int64) int64 {
	if uint64(d) <= ahead && BaseNanos >= 0 {
		return BaseNanos + d
	}
	return far(d)
}

// far converts an instant d ns after Base that lies before Base or beyond
// MaxTime.
func far(d int64) int64 {
	if d > 0 && BaseNanos > algo.MaxTime-d {
		return algo.MaxTime
	}
	return algo.Clamp(BaseNanos + d)
}

// Time converts back (with a monotonic reading), for reporting instants
// such as a reservation's time to act.
func Time(ns int64) time.Time {
	return Base.Add(time.Duration(ns - BaseNanos))
}

// Wall converts t by its wall clock alone, ignoring any monotonic reading:
// its Unix nanoseconds, clamped to [0, algo.MaxTime]. Calendar quotas read
// instants this way, since their periods follow the wall clock.
func Wall(t time.Time) int64 {
	s := t.Unix()
	switch {
	case s < 0:
		return 0
	case s > algo.MaxTime/1e9:
		return algo.MaxTime
	}
	return min(s*1e9+int64(t.Nanosecond()), algo.MaxTime)
}
