package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admit-go/admit/internal/endless"
	"github.com/admit-go/admit/policy"
)

// The policy files, at start and on a reload, are read through
// policy.MaxFileSize: one that never ends stops there.
func TestPolicyFilesEndless(t *testing.T) {
	const bound = 2 * policy.MaxFileSize
	tooLarge := func(t *testing.T, err error, path string, written func() int64) {
		t.Helper()
		if !errors.Is(err, policy.ErrInvalidPolicy) || !strings.HasPrefix(err.Error(), path+":") || !strings.Contains(err.Error(), "larger than the maximum") {
			t.Errorf("an endless policy file: %v", err)
		}
		if w := written(); w >= bound {
			t.Errorf("read all %d bytes the FIFO's writer wrote: no limit", w)
		}
	}
	t.Run("start", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "policy.yaml")
		written := endless.FIFO(t, fifo, bound)
		_, err := New(WithPolicyFiles(fifo), WithLogger(quietLogger(t)))
		tooLarge(t, err, fifo, written)
	})
	t.Run("reload", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		writeFile(t, path, reloadPolicy)
		s := startServer(t, WithPolicyFiles(path), WithReloadInterval(0))
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		written := endless.FIFO(t, path, bound)
		tooLarge(t, s.Reload(), path, written)
	})
}
