package admit

import "time"

// Clock is the source of time for blocking calls (WaitN, Pacer). The
// decision methods take the instant as a parameter instead. The default is
// the system clock; admittest.ManualClock is one for tests.
type Clock interface {
	// Now returns the current instant.
	Now() time.Time
	// NewTimer returns a timer that sends the instant on its channel once
	// d has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is a Clock's one-shot timer, as time.Timer.
type Timer interface {
	// C returns the channel on which the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did so.
	Stop() bool
}

// SystemClock is the Clock of the operating system. The limiters'
// shorthands (Allow, Decide, Pacer.Take) read only its monotonic clock, as
// time.Since of an instant taken at start-up: the reading they would use of
// time.Now (whose wall clock they ignore), at about half its cost.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop() bool          { return t.t.Stop() }
