package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/admit-go/admit/internal/endless"
	"github.com/admit-go/admit/policy"
)

// check-config reads a file through policy.MaxFileSize: one that never
// ends stops there, and is reported too large, naming the file.
func TestCheckConfigEndless(t *testing.T) {
	tooLarge := fmt.Sprintf("larger than the maximum of %d bytes", policy.MaxFileSize)
	ok := t.Run("fifo", func(t *testing.T) {
		const bound = 2 * policy.MaxFileSize
		path := filepath.Join(t.TempDir(), "policy.yaml")
		written := endless.FIFO(t, path, bound)
		_, errOut, code := runCmd(t, nil, "check-config", path)
		if code != 1 || !strings.HasPrefix(errOut, path+":") || !strings.Contains(errOut, tooLarge) {
			t.Errorf("check-config of an endless FIFO: %d %q", code, errOut)
		}
		if w := written(); w >= bound {
			t.Errorf("check-config read all %d bytes the FIFO's writer wrote: it has no limit", w)
		}
	})
	// Without a limit, /dev/zero would take all the memory there is: try
	// it only once the limit is known to hold.
	if !ok || runtime.GOOS != "linux" {
		return
	}
	_, errOut, code := runCmd(t, nil, "check-config", "/dev/zero")
	if code != 1 || !strings.HasPrefix(errOut, "/dev/zero:") || !strings.Contains(errOut, tooLarge) {
		t.Errorf("check-config /dev/zero: %d %q", code, errOut)
	}
}
