//go:build unix

package endless

import (
	"os"
	"sync/atomic"
	"syscall"
	"testing"
)

// FIFO makes a named pipe at path (in a directory of the test), and a
// goroutine that writes zeros to it once a reader opens it, until bound
// bytes are written (then it closes it) or the reader closes it. written
// returns the number of bytes written so far: a reader that stops at a
// limit of at most bound/2 leaves it below bound, when bound is a few MiB
// (a pipe buffers 64 KiB). The writer is stopped at the end of the test,
// whether a reader came or not. On a system without FIFOs, FIFO skips the
// test.
func FIFO(t testing.TB, path string, bound int64) (written func() int64) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // waits for a reader
		if err != nil {
			return
		}
		defer f.Close()
		buf := make([]byte, 32<<10)
		for n.Load() < bound {
			m, err := f.Write(buf[:min(int64(len(buf)), bound-n.Load())])
			n.Add(int64(m))
			if err != nil {
				return // the reader closed it
			}
		}
	}()
	t.Cleanup(func() {
		// A reader that comes and goes lets a writer still waiting open
		// the FIFO, and fail its first write.
		if r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close()
		}
		<-done
	})
	return n.Load
}
