package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// The settings of the gateway's own transport (see WithTransport).
const (
	// upstreamMaxIdle is how many idle connections to the upstream the
	// gateway keeps: more than the requests it has in flight at any
	// moment in all but the largest deployments, so that under a steady
	// load every request finds a connection open.
	upstreamMaxIdle = 256
	// upstreamIdleTimeout is how long an idle connection is kept.
	upstreamIdleTimeout = 90 * time.Second
	// upstreamKeepAlive is the TCP keep-alive period of the connections.
	upstreamKeepAlive = 30 * time.Second
	// upstreamMaxHeaderBytes caps the header of the upstream's response
	// (http.Transport's default).
	upstreamMaxHeaderBytes = 10 << 20
)

// upstreamTransport is the gateway's own RoundTripper. A request without
// a body whose method may be repeated (GET, HEAD, OPTIONS, TRACE) to an
// http:// upstream, the bulk of the traffic of most APIs, goes through a
// pool of kept-alive HTTP/1.1 connections (h1Pool) by the goroutine
// serving it; every other request (a body, an upgrade, an https://
// upstream, with HTTP/2 when the upstream offers it) goes through an
// http.Transport with the same settings.
//
// Why two: http.Transport hands each request to a goroutine of the
// connection that writes it, and takes the answer from another that
// reads it and then waits on the socket for the next one; the pool does
// the same work in the request's own goroutine. On a 2-core machine at
// 1,000 requests/s that is about a tenth less CPU per request and
// 100-200 µs less at p99 (bench/RESULTS.md, "Gateway latency against
// nginx"), and 22 fewer allocations (BenchmarkGatewayLoopback).
type upstreamTransport struct {
	std  *http.Transport
	lean *h1Pool // nil: everything goes through std
}

// newUpstreamTransport returns the gateway's own transport to upstream:
// connections dialed within dial, answers' headers awaited for respHeader
// (0: no limit).
func newUpstreamTransport(upstream *url.URL, dial, respHeader time.Duration) *upstreamTransport {
	d := &net.Dialer{Timeout: dial, KeepAlive: upstreamKeepAlive}
	t := &upstreamTransport{std: &http.Transport{
		Proxy:                 nil, // the upstream is reached directly, whatever HTTP_PROXY says
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          upstreamMaxIdle,
		MaxIdleConnsPerHost:   upstreamMaxIdle,
		IdleConnTimeout:       upstreamIdleTimeout,
		TLSHandshakeTimeout:   dial,
		ResponseHeaderTimeout: respHeader,
		ExpectContinueTimeout: time.Second,
		// A proxy forwards what the client accepts: no gzip of its own
		// on the hop, which the Transport would then undo.
		DisableCompression:     true,
		MaxResponseHeaderBytes: upstreamMaxHeaderBytes,
	}}
	if upstream.Scheme == "http" && canPeek {
		t.lean = &h1Pool{
			host:        upstream.Host,
			addr:        hostPort(upstream),
			dial:        d.DialContext,
			respTimeout: respHeader,
		}
	}
	return t
}

// hostPort returns the address to dial for an http:// URL.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// RoundTrip sends req upstream.
func (t *upstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.lean != nil && t.lean.takes(req) {
		return t.lean.roundTrip(req)
	}
	return t.std.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of both paths.
func (t *upstreamTransport) CloseIdleConnections() {
	t.std.CloseIdleConnections()
	if t.lean != nil {
		t.lean.closeIdle()
	}
}

// h1Pool sends requests to one http:// upstream over kept-alive HTTP/1.1
// connections: the goroutine of the request writes it and reads the
// answer's header, and whoever reads the body to its end (the
// ReverseProxy) gives the connection back. A connection is reused only
// if it is in a known state: the answer was read to its end, the
// upstream did not ask to close, and, when it is taken from the pool, a
// look at the socket finds nothing to read (an upstream that closed an
// idle connection or wrote on it unasked). A request sent on a reused
// connection that fails before a byte of an answer is read is sent once
// more on a new one, as http.Transport does: the requests taken have no
// body and a method that may be repeated.
type h1Pool struct {
	host        string // the upstream's URL.Host
	addr        string // and the address to dial
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	respTimeout time.Duration

	mu    sync.Mutex
	idle  []*h1Conn   // least recently used first
	sweep *time.Timer // calls closeExpired; made on the first put
	armed bool        // sweep will fire
}

// takes reports whether the pool sends req, rather than http.Transport.
func (p *h1Pool) takes(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
	default:
		return false
	}
	return req.URL.Scheme == "http" && req.URL.Host == p.host &&
		(req.Body == nil || req.Body == http.NoBody) && req.ContentLength <= 0 &&
		!req.Close && len(req.Trailer) == 0 && len(req.TransferEncoding) == 0 &&
		len(req.Header["Connection"]) == 0 && len(req.Header["Upgrade"]) == 0 && len(req.Header["Expect"]) == 0
}

// roundTrip sends req and returns the upstream's answer.
func (p *h1Pool) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for mayRetry := true; ; mayRetry = false {
		pc, err := p.get(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := pc.roundTrip(req)
		if err == nil {
			return resp, nil
		}
		pc.close()
		var ne net.Error
		if !mayRetry || !pc.reused || pc.r.got > 0 || ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
			return nil, err
		}
	}
}

// get returns an idle connection, or a new one.
func (p *h1Pool) get(ctx context.Context) (*h1Conn, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		pc := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if pc.usable() {
			pc.reused = true
			return pc, nil
		}
		pc.close()
	}
	nc, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	pc := &h1Conn{pool: p, nc: nc}
	pc.r.pc = pc
	pc.br = bufio.NewReader(&pc.r)
	pc.bw = bufio.NewWriter(nc)
	if sc, ok := nc.(syscall.Conn); ok {
		pc.raw, _ = sc.SyscallConn()
	}
	pc.peekFn = pc.peek
	return pc, nil
}

// put returns pc, whose last answer was read to its end, to the pool.
func (p *h1Pool) put(pc *h1Conn) {
	if pc.br.Buffered() > 0 { // bytes beyond the answer: not an HTTP/1.1 upstream we can trust
		pc.close()
		return
	}
	pc.idleSince = time.Now()
	p.mu.Lock()
	if len(p.idle) >= upstreamMaxIdle {
		p.mu.Unlock()
		pc.close()
		return
	}
	p.idle = append(p.idle, pc)
	if !p.armed {
		p.armed = true
		if p.sweep == nil {
			p.sweep = time.AfterFunc(upstreamIdleTimeout, p.closeExpired)
		} else {
			p.sweep.Reset(upstreamIdleTimeout)
		}
	}
	p.mu.Unlock()
}

// closeExpired closes the connections idle for upstreamIdleTimeout, and
// comes back when the next one will be.
func (p *h1Pool) closeExpired() {
	var expired []*h1Conn
	p.mu.Lock()
	now := time.Now()
	i := 0
	for i < len(p.idle) && now.Sub(p.idle[i].idleSince) >= upstreamIdleTimeout {
		i++
	}
	expired = append(expired, p.idle[:i]...)
	p.idle = append(p.idle[:0], p.idle[i:]...)
	clear(p.idle[len(p.idle):cap(p.idle)])
	p.armed = len(p.idle) > 0
	if p.armed {
		p.sweep.Reset(upstreamIdleTimeout - now.Sub(p.idle[0].idleSince))
	}
	p.mu.Unlock()
	for _, pc := range expired {
		pc.close()
	}
}

// closeIdle closes the idle connections.
func (p *h1Pool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	if p.armed {
		p.sweep.Stop()
		p.armed = false
	}
	p.mu.Unlock()
	for _, pc := range idle {
		pc.close()
	}
}

// h1Conn is a connection of an h1Pool. One request at a time uses it.
type h1Conn struct {
	pool      *h1Pool
	nc        net.Conn
	raw       syscall.RawConn // nil if nc has none: then it is not reused
	r         connReader      // between nc and br
	br        *bufio.Reader
	bw        *bufio.Writer
	reused    bool      // it has carried a request before this one
	idleSince time.Time // when it was last put in the pool

	peekFn   func(fd uintptr) bool // pc.peek, made once
	peekOpen bool                  // peek's answer
}

// connReader reads the connection under the answer's bufio.Reader,
// counting the bytes of each answer and capping its header.
type connReader struct {
	pc   *h1Conn
	left int64 // bytes that may still be read; < 0: no limit
	got  int64 // bytes read since the request was sent
}

var errHeaderTooLarge = errors.New("the upstream's response header is too large")

func (r *connReader) Read(b []byte) (int, error) {
	if r.left == 0 {
		return 0, errHeaderTooLarge
	}
	if r.left > 0 && int64(len(b)) > r.left {
		b = b[:r.left]
	}
	n, err := r.pc.nc.Read(b)
	r.got += int64(n)
	if r.left > 0 {
		r.left -= int64(n)
	}
	return n, err
}

// usable reports whether pc, idle in the pool, may carry a request: it
// has not been idle too long, and the socket has nothing to read (an
// upstream that closed it would have sent its end; one that wrote on it
// unasked cannot be trusted with the next answer).
func (pc *h1Conn) usable() bool {
	if pc.raw == nil || time.Since(pc.idleSince) >= upstreamIdleTimeout {
		return false
	}
	pc.peekOpen = false
	if err := pc.raw.Read(pc.peekFn); err != nil {
		return false
	}
	return pc.peekOpen
}

// aLongTimeAgo is a deadline that has passed: setting it makes the
// connection's blocked reads and writes return at once.
var aLongTimeAgo = time.Unix(1, 0)

// roundTrip writes req and reads the answer's header.
func (pc *h1Conn) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if t := pc.pool.respTimeout; t > 0 {
		_ = pc.nc.SetDeadline(time.Now().Add(t))
	}
	stop := context.AfterFunc(ctx, func() { _ = pc.nc.SetDeadline(aLongTimeAgo) })
	pc.r.left, pc.r.got = upstreamMaxHeaderBytes, 0
	resp, err := pc.exchange(req)
	if err != nil {
		stop()
		return nil, err
	}
	pc.r.left = -1
	if pc.pool.respTimeout > 0 {
		_ = pc.nc.SetDeadline(time.Time{})
		if ctx.Err() != nil {
			// The request ended before the deadline was lifted (the
			// AfterFunc may have run before): end the body's reads too.
			_ = pc.nc.SetDeadline(aLongTimeAgo)
		}
	}
	body := &h1Body{ReadCloser: resp.Body, pc: pc, stop: stop, keep: !resp.Close}
	body.eof = resp.Body == http.NoBody
	resp.Body = body
	return resp, nil
}

// exchange writes req and reads the answer's header, passing 1xx
// answers to the request's httptrace.ClientTrace (the ReverseProxy
// forwards 103 Early Hints that way).
func (pc *h1Conn) exchange(req *http.Request) (*http.Response, error) {
	if err := req.Write(pc.bw); err != nil {
		return nil, err
	}
	if err := pc.bw.Flush(); err != nil {
		return nil, err
	}
	for n1xx := 0; ; n1xx++ {
		resp, err := http.ReadResponse(pc.br, req)
		if err != nil {
			return nil, err
		}
		code := resp.StatusCode
		if code >= 200 {
			return resp, nil
		}
		if code == http.StatusSwitchingProtocols || n1xx == 5 {
			// It was not asked to switch (upgrades go through
			// http.Transport), and 5 informational answers are enough.
			return nil, fmt.Errorf("unexpected %s from the upstream", resp.Status)
		}
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

// release gives pc back to the pool if its answer was read to its end
// and it may be reused, and closes it otherwise.
func (pc *h1Conn) release(reusable bool) {
	if reusable {
		pc.pool.put(pc)
	} else {
		pc.close()
	}
}

func (pc *h1Conn) close() { _ = pc.nc.Close() }

// h1Body is the body of an answer on an h1Conn: once read to its end
// and closed, the connection goes back to the pool.
type h1Body struct {
	io.ReadCloser
	pc     *h1Conn
	stop   func() bool // stops the request's context.AfterFunc
	keep   bool        // the upstream did not ask to close
	eof    bool
	closed bool
}

var errBodyClosed = errors.New("read on a closed response body")

func (b *h1Body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errBodyClosed
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close gives the connection back if the body was read to its end, and
// closes it otherwise (the rest is not drained: it may never end).
func (b *h1Body) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	// stop fails if the request's context ended and the AfterFunc set a
	// past deadline on the connection.
	b.pc.release(b.stop() && b.eof && b.keep)
	return nil
}
