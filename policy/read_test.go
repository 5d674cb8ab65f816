package policy

import (
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/admit-go/admit/internal/endless"
)

// parseFile reads through maxFileSize: a file that never ends stops there,
// an Errors naming the file and the limit.
func TestParseFileEndless(t *testing.T) {
	const bound = 2 * maxFileSize
	tooLarge := func(t *testing.T, err error, path string) {
		t.Helper()
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 || es[0].File != path || !strings.Contains(es[0].Msg, "larger than the maximum of 4194304 bytes") {
			t.Errorf("an endless file: %v", err)
		}
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	written := endless.FIFO(t, path, bound)
	_, err := parseFile(path)
	tooLarge(t, err, path)
	if w := written(); w >= bound {
		t.Errorf("read all %d bytes the FIFO's writer wrote: no limit", w)
	}
	if runtime.GOOS == "linux" {
		_, err := parseFile("/dev/zero")
		tooLarge(t, err, "/dev/zero")
	}
}
