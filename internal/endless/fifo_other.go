//go:build !unix

package endless

import "testing"

// FIFO skips the test: this system has no FIFOs.
func FIFO(t testing.TB, path string, bound int64) (written func() int64) {
	t.Skip("no FIFOs on this system")
	return nil
}
