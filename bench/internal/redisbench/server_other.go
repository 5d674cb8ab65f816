//go:build !linux

package redisbench

import "os/exec"

// dieWithParent does nothing where the kernel cannot do it.
func dieWithParent(*exec.Cmd) {}
