//go:build linux

package redistest

import "syscall"

// sysProcAttr makes the kernel send SIGKILL to a child when the thread that
// started it dies, so that no redis-server outlives a crashed test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
