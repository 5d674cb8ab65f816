//go:build unix

package redistest

import "syscall"

// pauseSignal and resumeSignal are what Pause and Resume send.
const pauseSignal, resumeSignal = syscall.SIGSTOP, syscall.SIGCONT
