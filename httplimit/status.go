package httplimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
)

// statusWriter is the ResponseWriter of a handler whose outcome the
// middleware reports: it records the status the handler writes. It
// delegates Flush, Hijack and ReadFrom to the ResponseWriter it wraps, and
// Unwrap gives that one to http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
}

var statusPool = sync.Pool{New: func() any { return new(statusWriter) }}

// Status returns the status written: the first final (2xx-5xx) status of
// WriteHeader, 200 if the handler wrote a body or flushed first, or 200 if
// it wrote nothing at all (as net/http answers then).
func (s *statusWriter) Status() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush flushes the wrapped ResponseWriter, if it can.
func (s *statusWriter) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Hijack hijacks the wrapped ResponseWriter's connection, if it can (else
// it fails with http.ErrNotSupported). The status stays what was written
// (200 if nothing was).
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

// ReadFrom copies r to the wrapped ResponseWriter, through its own
// ReadFrom if it has one (net/http's uses sendfile).
func (s *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return io.Copy(s.ResponseWriter, r)
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
