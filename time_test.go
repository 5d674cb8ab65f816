package admit

import (
	"testing"
	"time"
)

// The shorthands read the system clock through clockNanos, which skips the
// wall clock: it must agree with converting time.Now, to the nanosecond.
func TestSystemClockNanos(t *testing.T) {
	for range 10000 {
		before := nanos(time.Now())
		got := clockNanos(SystemClock)
		after := nanos(time.Now())
		if got < before || got > after {
			t.Fatalf("clockNanos = %d, not within [%d, %d] read by time.Now", got, before, after)
		}
	}
	// A Clock other than SystemClock is read through Now.
	c := &stepClock{now: epoch}
	if got, want := clockNanos(c), epoch.Add(time.Second).UnixNano(); got != want {
		t.Fatalf("clockNanos(stepClock) = %d, want %d", got, want)
	}
	// Instants far from base convert by the slow path, clamped.
	for _, c := range []struct {
		t    time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(-5, 0), 0},
		{time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), 1 << 62},
		{base.Add(-time.Hour), baseNanos - int64(time.Hour)},
		{base.Add(time.Hour), baseNanos + int64(time.Hour)},
	} {
		if got := nanos(c.t); got != c.want {
			t.Errorf("nanos(%v) = %d, want %d", c.t, got, c.want)
		}
	}
}
