//go:build !unix

package bench

import "time"

// processCPU reports false: there is no getrusage here.
func processCPU() (time.Duration, bool) { return 0, false }
