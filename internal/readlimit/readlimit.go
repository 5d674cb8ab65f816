// Package readlimit reads input that comes from outside the process
// (policy files, certificates and keys) through a limit: at most the limit
// plus one byte is read, so that a file too large, or one that never ends
// (/dev/zero, a FIFO written forever), costs at most that much memory and
// time, and is reported as too large naming the file and the limit.
//
// Every reader of outside input in this module reads through this package
// or through a limit of its own protocol (http.MaxBytesReader for HTTP
// bodies, grpc.MaxRecvMsgSize for gRPC messages).
package readlimit

import (
	"fmt"
	"io"
	"os"
)

// TooLargeError reports an input larger than its limit. Only the first
// Limit+1 bytes of it were read.
type TooLargeError struct {
	Name  string // the file's path, or what the input is
	Limit int64  // the limit, in bytes
}

// Error returns "NAME: larger than the limit of LIMIT bytes".
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than the limit of %d bytes", e.Name, e.Limit)
}

// ReadAll reads r until EOF or an error, reading at most limit+1 bytes.
// For an input of more than limit bytes it returns the first limit bytes
// and a *TooLargeError naming name; an error of r is returned as it is.
// limit must not be negative.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return data[:limit], &TooLargeError{Name: name, Limit: limit}
	}
	return data, nil
}

// ReadFile reads the file at path as ReadAll reads its content. Any file
// may be read, not only a regular one (a pipe such as /dev/stdin, or the
// /dev/fd/N of a shell's process substitution): one that never ends, a
// device such as /dev/zero or a FIFO written forever, is cut off after
// limit+1 bytes. Opening a FIFO waits for a process to open it for
// writing, as any reader of a FIFO does. The errors are the file system's
// (*os.PathError) and ReadAll's.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}
