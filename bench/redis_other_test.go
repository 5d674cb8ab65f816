//go:build !linux

package bench

import "os/exec"

// dieWithParent does nothing where the kernel cannot do it.
func dieWithParent(*exec.Cmd) {}
