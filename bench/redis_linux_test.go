//go:build linux

package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the benchmark's redis-server die with the benchmark
// process, even when it is killed before TestMain can stop it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
