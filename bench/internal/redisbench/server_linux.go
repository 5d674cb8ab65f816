package redisbench

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the redis-server die with the process that started
// it, even when that process is killed before it can stop it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
