// Package endless makes inputs that do not end, for the tests of the
// readers of outside input: a Reader, and a FIFO fed without end. Each
// stops after a bound given by the test, so that a reader without a limit
// fails its test (it reads to the bound) instead of running out of memory.
package endless

import (
	"errors"
	"sync/atomic"
)

// ErrReadTooFar is the error of a Reader read to its bound: whoever read
// it had no limit below the bound.
var ErrReadTooFar = errors.New("endless: read to the test's bound: the reader has no limit below it")

// Reader reads as bytes Fill (zero by default) without end, up to Bound
// bytes, after which it fails with ErrReadTooFar. It is safe for
// concurrent use.
type Reader struct {
	Bound int64
	Fill  byte
	read  atomic.Int64
}

// NewReader returns a Reader of bound bytes.
func NewReader(bound int64) *Reader { return &Reader{Bound: bound} }

// Read fills p with Fill.
func (r *Reader) Read(p []byte) (int, error) {
	left := r.Bound - r.read.Load()
	if left <= 0 {
		return 0, ErrReadTooFar
	}
	n := min(int64(len(p)), left)
	for i := range p[:n] {
		p[i] = r.Fill
	}
	r.read.Add(n)
	return int(n), nil
}

// N returns the number of bytes read so far.
func (r *Reader) N() int64 { return r.read.Load() }
