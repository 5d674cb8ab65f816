package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/policy"
)

// Gateway is a reverse proxy that applies a policy to every request: it
// derives the request's descriptors (client address, headers, path...;
// see Config.Descriptors), decides them against one domain of the
// policy, one event per request, and forwards the admitted requests to
// its upstream. A refused request is answered by package httplimit: 429
// with Retry-After, the IETF RateLimit and RateLimit-Policy fields and
// X-RateLimit-*, and a JSON body naming the limit. The slots of
// concurrency caps are held until the upstream's response has been
// forwarded. Admitted responses carry the rate-limit fields too.
//
// Forwarding streams request and response bodies without buffering them
// (server-sent events and other unbounded responses are flushed as they
// come), keeps the request's header but its hop-by-hop fields, sets Host
// to the upstream's, and sets X-Forwarded-For, X-Forwarded-Proto and
// X-Forwarded-Host. X-Forwarded-For is the client's own header with the
// peer's address appended if the peer is a trusted proxy
// (Config.TrustedProxies), and the peer's address alone otherwise: a client
// cannot put addresses of its choice in front of the upstream, nor, by the
// same rule, a forged X-Forwarded-Proto, X-Forwarded-Host or X-Real-IP.
// An upstream that cannot be reached or fails is answered 502 with a JSON
// body {"code":"BAD_GATEWAY",...}; one that does not answer within
// Config.UpstreamTimeout, 504 ("UPSTREAM_TIMEOUT"); a body over
// Config.UpstreamMaxBodyBytes, 413 ("BODY_TOO_LARGE").
//
// Unless Config.Transport replaces it, the gateway keeps its connections to
// the upstream open between requests: up to 256 idle ones, each closed
// after 90 s unused, so that under a steady load it dials about as many
// connections as it has requests in flight, and no more. It connects
// within Config.UpstreamDialTimeout, directly (whatever HTTP_PROXY says),
// and sends the client's Accept-Encoding as it came (it adds no
// compression of its own to undo). It speaks HTTP/1.1 to an http://
// upstream and HTTP/2 to an https:// one that offers it. A request
// without a body whose method may be repeated (GET, HEAD, OPTIONS, TRACE)
// that fails on a reused connection before any byte of an answer (the
// upstream closed it while it was idle) is sent once more on a new one,
// as http.Transport does.
//
// SetEngine replaces the engine while requests are being decided (a
// policy reload). A Gateway is safe for concurrent use. It starts no
// goroutine; Close closes its idle connections to the upstream. Create
// one with NewGateway.
type Gateway struct {
	upstream *url.URL
	domain   string
	decider  *policy.HTTP
	limited  http.Handler
	proxy    *httputil.ReverseProxy
	own      *upstreamTransport // the transport NewGateway built, if any
	trusted  []netip.Prefix
	maxBody  int64
	log      *slog.Logger
	closed   atomic.Bool
}

// NewGateway returns a Gateway forwarding to cfg.Upstream the requests
// that the domain cfg.GatewayDomain of e's policy admits, configured by
// the gateway's fields of cfg (Descriptors or HTTPDescriptors,
// TrustedProxies, UpstreamDialTimeout, UpstreamTimeout,
// UpstreamMaxBodyBytes, Transport, Middleware, Logger); it ignores the
// others. Upstream and GatewayDomain are required. The error is
// cfg.Validate's (a *ConfigError), or wraps admit.ErrInvalidConfig (a
// nil engine, a domain the policy does not have).
func NewGateway(e *policy.Engine, cfg Config) (*Gateway, error) {
	if cfg.Upstream == "" {
		return nil, fieldErr("Upstream", "NewGateway needs an upstream URL")
	}
	if cfg.GatewayDomain == "" {
		return nil, fieldErr("GatewayDomain", "NewGateway needs the domain to check requests against")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.resolved()
	return newGateway(e, c.GatewayDomain, &c)
}

// newGateway builds the gateway of the resolved Config c.
func newGateway(e *policy.Engine, domain string, c *Config) (*Gateway, error) {
	upstream, err := parseUpstream(c.Upstream)
	if err != nil {
		return nil, &ConfigError{Field: "Upstream", Err: err}
	}
	clientIP, err := httplimit.NewClientIP(httplimit.ClientIPConfig{TrustedProxies: c.TrustedProxies})
	if err != nil {
		return nil, &ConfigError{Field: "TrustedProxies", Err: err}
	}
	descs := c.HTTPDescriptors
	if len(descs) == 0 {
		if descs, err = parseDescriptors(c.Descriptors, clientIP); err != nil {
			return nil, &ConfigError{Field: "Descriptors", Err: err}
		}
	}
	decider, err := policy.NewHTTP(e, domain, descs...)
	if err != nil {
		return nil, err
	}
	mw, err := httplimit.NewDecider(decider, c.Middleware)
	if err != nil {
		return nil, &ConfigError{Field: "Middleware", Err: err}
	}
	log := c.Logger
	u := *upstream
	g := &Gateway{
		upstream: &u,
		domain:   domain,
		decider:  decider,
		trusted:  masked(c.TrustedProxies),
		maxBody:  c.UpstreamMaxBodyBytes,
		log:      log,
	}
	rt := c.Transport
	if rt == nil {
		g.own = newUpstreamTransport(&u, c.UpstreamDialTimeout, c.UpstreamTimeout)
		rt = g.own
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite:      g.rewrite,
		Transport:    rt,
		ErrorHandler: g.proxyError,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BufferPool:   bufferPool{},
	}
	g.limited = mw.Handler(g.proxy)
	return g, nil
}

// masked returns the prefixes with their host bits cleared.
func masked(ps []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, len(ps))
	for i, p := range ps {
		out[i] = p.Masked()
	}
	return out
}

// SetEngine makes e decide the requests from now on; requests being
// decided finish with the engine they started with. e's policy must have
// the gateway's domain: otherwise SetEngine fails (wrapping
// admit.ErrInvalidConfig) and the engine is not replaced.
func (g *Gateway) SetEngine(e *policy.Engine) error { return g.decider.SetEngine(e) }

// Close closes the idle connections of the gateway's own transport (the
// default one). Requests in flight are not interrupted, and the Gateway
// keeps working (it opens connections again). Close is idempotent.
func (g *Gateway) Close() error {
	if g.closed.CompareAndSwap(false, true) && g.own != nil {
		g.own.CloseIdleConnections()
	}
	return nil
}

// ServeHTTP decides r and forwards it if admitted.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.maxBody > 0 && r.Body != nil && r.Body != http.NoBody {
		if r.ContentLength > g.maxBody {
			writeJSONError(w, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE",
				fmt.Sprintf("the request body is larger than the gateway's limit of %d bytes", g.maxBody))
			return
		}
		cb := &cappedBody{ReadCloser: http.MaxBytesReader(w, r.Body, g.maxBody)}
		r = r.WithContext(context.WithValue(r.Context(), cappedKey{}, cb))
		r.Body = cb
	}
	// Let the upstream's response flow while the request's body is still
	// coming (HTTP/1 servers drain the body first by default).
	_ = http.NewResponseController(w).EnableFullDuplex()
	g.limited.ServeHTTP(w, r)
}

// cappedKey is the context key of a request's cappedBody (the error
// handler gets the outbound request, whose body the transport wraps).
type cappedKey struct{}

// rewrite builds the outbound request (ReverseProxy.Rewrite): the
// upstream's URL and Host, and the forwarding header fields, which
// ReverseProxy has removed from the outbound request.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.upstream)
	in, out := pr.In, pr.Out
	peer, ok := peerAddr(in.RemoteAddr)
	trusted := ok && g.isTrusted(peer)
	var peerText string
	if ok {
		peerText = peer.String()
	}
	prior := in.Header.Values("X-Forwarded-For")
	switch {
	case trusted && len(prior) > 0:
		out.Header.Set("X-Forwarded-For", strings.Join(prior, ", ")+", "+peerText)
	case peerText != "":
		out.Header.Set("X-Forwarded-For", peerText)
	}
	proto := "http"
	if in.TLS != nil {
		proto = "https"
	}
	if v := in.Header.Get("X-Forwarded-Proto"); trusted && (v == "http" || v == "https") {
		proto = v
	}
	out.Header.Set("X-Forwarded-Proto", proto)
	host := in.Host
	if v := in.Header.Get("X-Forwarded-Host"); trusted && v != "" {
		host = v
	}
	if host != "" {
		out.Header.Set("X-Forwarded-Host", host)
	}
	if !trusted {
		out.Header.Del("X-Real-Ip")
	}
}

// isTrusted reports whether a is the address of a trusted proxy.
func (g *Gateway) isTrusted(a netip.Addr) bool {
	for _, p := range g.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr parses a Request.RemoteAddr ("ip:port", or an address alone).
func peerAddr(remote string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap(), true
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// proxyError answers a request the upstream did not answer.
func (g *Gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	var mbe *http.MaxBytesError
	if cb, ok := r.Context().Value(cappedKey{}).(*cappedBody); (ok && cb.tooLarge.Load()) || errors.As(err, &mbe) {
		writeJSONError(w, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE",
			fmt.Sprintf("the request body is larger than the gateway's limit of %d bytes", g.maxBody))
		return
	}
	if r.Context().Err() != nil {
		// The client went away (or the server is cutting requests off
		// at the end of a shutdown): nobody reads the answer.
		g.log.Debug("gateway: request ended before the upstream answered", "method", r.Method, "path", r.URL.Path, "err", err)
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		g.log.Warn("gateway: upstream timeout", "method", r.Method, "path", r.URL.Path, "err", err)
		writeJSONError(w, http.StatusGatewayTimeout, "UPSTREAM_TIMEOUT", "the upstream did not answer in time")
		return
	}
	g.log.Warn("gateway: upstream failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeJSONError(w, http.StatusBadGateway, "BAD_GATEWAY", "the upstream could not be reached or failed")
}

// cappedBody is a request body under http.MaxBytesReader that remembers
// whether the cap was hit, so that the error handler can answer 413.
type cappedBody struct {
	io.ReadCloser
	tooLarge atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			b.tooLarge.Store(true)
		}
	}
	return n, err
}

// writeJSONError writes an error answer of the gateway: status and a JSON
// body {"code":code,"message":msg}.
func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	b, _ := json.Marshal(jsonError{Code: code, Message: msg}) // cannot fail
	_, _ = w.Write(append(b, '\n'))
}

type jsonError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// bufferPool is ReverseProxy's pool of copy buffers (32 KiB each).
type bufferPool struct{}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte { return *(copyBuffers.Get().(*[]byte)) }
func (bufferPool) Put(b []byte) {
	if cap(b) == 32<<10 {
		b = b[:cap(b)]
		copyBuffers.Put(&b)
	}
}
