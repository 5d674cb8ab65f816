package readlimit_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/admit-go/admit/internal/endless"
	"github.com/admit-go/admit/internal/readlimit"
)

func TestReadAll(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int64
		want  string
		large bool
	}{
		{"", 0, "", false},
		{"", 3, "", false},
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"a", 0, "", true},
	} {
		got, err := readlimit.ReadAll(strings.NewReader(tc.in), "in", tc.limit)
		var tl *readlimit.TooLargeError
		if string(got) != tc.want || errors.As(err, &tl) != tc.large || (!tc.large && err != nil) {
			t.Errorf("ReadAll(%q, %d) = %q, %v", tc.in, tc.limit, got, err)
		}
		if tc.large && (tl.Name != "in" || tl.Limit != tc.limit || err.Error() != fmt.Sprintf("in: larger than the limit of %d bytes", tc.limit)) {
			t.Errorf("ReadAll(%q, %d): %#v %q", tc.in, tc.limit, tl, err)
		}
	}
	boom := errors.New("boom")
	if _, err := readlimit.ReadAll(io.MultiReader(strings.NewReader("ab"), iotestErr{boom}), "in", 10); err != boom {
		t.Errorf("a failing reader: %v", err)
	}
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

// An endless reader is read to the limit and one byte more, never further.
func TestReadAllEndless(t *testing.T) {
	const limit = 1 << 20
	r := endless.NewReader(2 * limit)
	data, err := readlimit.ReadAll(r, "endless", limit)
	var tl *readlimit.TooLargeError
	if !errors.As(err, &tl) || len(data) != limit {
		t.Fatalf("ReadAll: %d bytes, %v", len(data), err)
	}
	if r.N() != limit+1 {
		t.Errorf("read %d bytes of an endless reader, want %d", r.N(), limit+1)
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readlimit.ReadFile(path, 5); string(b) != "hello" || err != nil {
		t.Errorf("ReadFile: %q, %v", b, err)
	}
	if _, err := readlimit.ReadFile(path, 4); err == nil || err.Error() != path+": larger than the limit of 4 bytes" {
		t.Errorf("ReadFile over the limit: %v", err)
	}
	if _, err := readlimit.ReadFile(filepath.Join(t.TempDir(), "missing"), 4); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// Files that never end stop at the limit: a device and a FIFO written
// forever.
func TestReadFileEndless(t *testing.T) {
	const limit = 1 << 20
	if runtime.GOOS == "linux" {
		data, err := readlimit.ReadFile("/dev/zero", limit)
		var tl *readlimit.TooLargeError
		if !errors.As(err, &tl) || tl.Name != "/dev/zero" || !bytes.Equal(data, make([]byte, limit)) {
			t.Errorf("/dev/zero: %d bytes, %v", len(data), err)
		}
	}
	path := filepath.Join(t.TempDir(), "fifo")
	written := endless.FIFO(t, path, 4*limit)
	data, err := readlimit.ReadFile(path, limit)
	var tl *readlimit.TooLargeError
	if !errors.As(err, &tl) || len(data) != limit {
		t.Errorf("FIFO: %d bytes, %v", len(data), err)
	}
	if w := written(); w >= 4*limit {
		t.Errorf("the FIFO's writer wrote %d bytes: the reader did not stop", w)
	}
}
