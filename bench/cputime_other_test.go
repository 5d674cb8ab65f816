//go:build !unix

package bench

import "time"

// processCPU returns 0 where getrusage is not available: cpu-ns/op is then
// not reported.
func processCPU() time.Duration { return 0 }
