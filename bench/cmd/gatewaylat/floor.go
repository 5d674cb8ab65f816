package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
)

// The floor targets: the least a Go program does to proxy the load's
// bodiless GETs, with no limiting at all, to measure what Go itself
// costs on this machine.
//
//   - floor-http is a net/http server whose handler writes the request
//     on a kept-alive upstream connection taken from a pool and reads
//     the answer there, on its own goroutine (no http.Transport, no
//     httputil.ReverseProxy, no header rewriting), then copies the
//     answer's header and body: the floor of a gateway built on
//     net/http's server.
//   - floor-raw does without net/http: one goroutine per client
//     connection, which has its own upstream connection, reads a
//     request's header up to its blank line, writes it to the upstream
//     as it came, reads the answer's header and its Content-Length body,
//     and writes the answer back in one write. Two reads and two writes a
//     request, each a blocking call on Go's netpoller: the floor of any
//     Go proxy, whatever its HTTP code.
const (
	envFloorHTTP = "GATEWAYLAT_FLOOR_HTTP" // listen address
	envFloorRaw  = "GATEWAYLAT_FLOOR_RAW"  // listen address
)

// serveFloor runs a floor target if the environment says so.
func serveFloor() (bool, error) {
	if addr := os.Getenv(envFloorHTTP); addr != "" {
		u, err := url.Parse(os.Getenv(envProxyTo))
		if err != nil {
			return true, err
		}
		return true, (&http.Server{Addr: addr, Handler: &floorHTTP{host: u.Host}}).ListenAndServe()
	}
	if addr := os.Getenv(envFloorRaw); addr != "" {
		u, err := url.Parse(os.Getenv(envProxyTo))
		if err != nil {
			return true, err
		}
		return true, serveRaw(addr, u.Host)
	}
	return false, nil
}

// floorHTTP is the floor-http handler.
type floorHTTP struct {
	host string
	mu   sync.Mutex
	idle []*floorConn
}

type floorConn struct {
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func (f *floorHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	var c *floorConn
	if n := len(f.idle); n > 0 {
		c, f.idle = f.idle[n-1], f.idle[:n-1]
	}
	f.mu.Unlock()
	if c == nil {
		nc, err := net.Dial("tcp", f.host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		c = &floorConn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}
	}
	_, _ = c.bw.WriteString("GET " + r.URL.RequestURI() + " HTTP/1.1\r\nHost: " + f.host + "\r\n\r\n")
	if err := c.bw.Flush(); err != nil {
		_ = c.nc.Close()
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		_ = c.nc.Close()
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, err = io.Copy(w, resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.Close {
		_ = c.nc.Close()
		return
	}
	f.mu.Lock()
	f.idle = append(f.idle, c)
	f.mu.Unlock()
}

// serveRaw is the floor-raw server.
func serveRaw(addr, upstream string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				return
			}
			defer up.Close()
			_ = rawRelay(c, up)
		}()
	}
}

// rawRelay relays bodiless requests from c to up and their answers
// back, until either end closes.
func rawRelay(c, up net.Conn) error {
	cr, ur := bufio.NewReader(c), bufio.NewReader(up)
	var req, resp []byte
	for {
		var err error
		if req, _, err = rawHeader(cr, req[:0]); err != nil {
			return err
		}
		if _, err := up.Write(req); err != nil {
			return err
		}
		var n int
		if resp, n, err = rawHeader(ur, resp[:0]); err != nil {
			return err
		}
		start := len(resp)
		resp = append(resp, make([]byte, n)...)
		if _, err := io.ReadFull(ur, resp[start:]); err != nil {
			return err
		}
		if _, err := c.Write(resp); err != nil {
			return err
		}
	}
}

var errNoLength = errors.New("an answer without Content-Length")

// rawHeader appends to b the lines of a message's header read from r, up
// to and with its blank line, and returns the Content-Length it gave (0
// if none; a request's header must have none).
func rawHeader(r *bufio.Reader, b []byte) ([]byte, int, error) {
	n := 0
	for first := true; ; first = false {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return b, 0, err
		}
		b = append(b, line...)
		if len(line) <= 2 {
			return b, n, nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !first && ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if n, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil || n < 0 {
				return b, 0, errNoLength
			}
		}
	}
}
