package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/admit-go/admit/internal/endless"
	"github.com/admit-go/admit/internal/policyfmt"
)

// check-config reads a file through policyfmt.MaxFileSize: one that never
// ends stops there, and is reported too large, naming the file.
func TestCheckConfigEndless(t *testing.T) {
	tooLarge := fmt.Sprintf("larger than the maximum of %d bytes", policyfmt.MaxFileSize)
	ok := t.Run("fifo", func(t *testing.T) {
		const bound = 2 * policyfmt.MaxFileSize
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

// Every problem check-config reports names its file and line, those of
// malformed YAML on the first line and of bytes that are not text
// included.
func TestCheckConfigPositions(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"a: b: c\n", ":1: malformed YAML: mapping values are not allowed in this context"},
		{"domain: x\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n  - key: \xff\n", ":5:10: malformed YAML: invalid UTF-8"},
		{"\x89PNG\r\n\x1a\n\x00\x00", ":1:1: malformed YAML: invalid UTF-8"},
		{"rules:\n\t- {name: a, match: k, rate: 1/s}\n", ":2: malformed YAML: found character that cannot start any token"},
	} {
		path := writeTemp(t, "p.yaml", tc.src)
		_, errOut, code := runCmd(t, nil, "check-config", path)
		if code != 1 || !strings.HasPrefix(errOut, path+tc.want) {
			t.Errorf("%q: %d %q, want %s%s", tc.src, code, errOut, path, tc.want)
		}
		out, _, _ := runCmd(t, nil, "check-config", "--format", "json", path)
		var rep checkReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Problems) == 0 || rep.Problems[0].File != path || rep.Problems[0].Line < 1 {
			t.Errorf("%q: JSON %s, %v", tc.src, out, err)
		}
	}
}

// serve reads its settings file (--server-config) through a limit: one
// that never ends stops there and is reported too large, naming the file,
// with exit status 2.
func TestServerConfigEndless(t *testing.T) {
	tooLarge := fmt.Sprintf("larger than the limit of %d bytes", maxSettingsFile)
	ok := t.Run("fifo", func(t *testing.T) {
		const bound = 2 * maxSettingsFile
		path := filepath.Join(t.TempDir(), "serve.yaml")
		written := endless.FIFO(t, path, bound)
		_, errOut, code := runCmd(t, nil, "serve", "--server-config", path)
		if code != exitUsage || !strings.Contains(errOut, "--server-config: "+path+": "+tooLarge) {
			t.Errorf("serve --server-config of an endless FIFO: %d %q", code, errOut)
		}
		if w := written(); w >= bound {
			t.Errorf("serve read all %d bytes the FIFO's writer wrote: it has no limit", w)
		}
	})
	if !ok || runtime.GOOS != "linux" {
		return
	}
	_, errOut, code := runCmd(t, map[string]string{"ADMIT_SERVER_CONFIG": "/dev/zero"}, "serve")
	if code != exitUsage || !strings.Contains(errOut, "/dev/zero: "+tooLarge) {
		t.Errorf("ADMIT_SERVER_CONFIG=/dev/zero: %d %q", code, errOut)
	}
}
