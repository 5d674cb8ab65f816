//go:build !unix

package server

import "time"

// processCPU returns 0: the CPU time is not measured here.
func processCPU() time.Duration { return 0 }
