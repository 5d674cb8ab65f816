package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// The machine's monotonic clock (CLOCK_MONOTONIC), which every process on
// it shares, read through Go's own monotonic clock (the same clock, read
// without a system call) from one reading of both taken at start-up.
var monoBase, goBase = func() (int64, time.Time) {
	var ts unix.Timespec
	before := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("hotkey: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	after := time.Now()
	return ts.Nano(), before.Add(after.Sub(before) / 2)
}()

// mono returns the machine's monotonic clock, in ns.
func mono() int64 { return monoBase + int64(time.Since(goBase)) }
