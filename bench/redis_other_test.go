//go:build !linux

package bench

import (
	"errors"
	"os/exec"
	"time"
)

// dieWithParent does nothing where the kernel cannot do it.
func dieWithParent(*exec.Cmd) {}

// childCPU is not measured where there is no /proc.
func childCPU(int) (time.Duration, error) {
	return 0, errors.New("no /proc here")
}
