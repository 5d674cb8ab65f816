//go:build !linux

package redistest

import "syscall"

// sysProcAttr returns nil: only Linux has Pdeathsig. Elsewhere a child can
// outlive a test binary that crashes before Main or t.Cleanup stops it.
func sysProcAttr() *syscall.SysProcAttr { return nil }
