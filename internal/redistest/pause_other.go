//go:build !unix

package redistest

import "os"

// pauseSignal and resumeSignal are not there to send on this system: Pause
// and Resume fail.
var pauseSignal, resumeSignal os.Signal
