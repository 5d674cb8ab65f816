package httplimit

import (
	"fmt"
	"net/http"
	"net/netip"
)

// IPHeader names the forwarding header a ClientIP reads the addresses of
// its proxies' clients from.
type IPHeader uint8

const (
	// XForwardedFor is the X-Forwarded-For header: a comma-separated list
	// of addresses, each proxy appending the address it received the
	// request from. Entries may carry a port ("192.0.2.1:4711",
	// "[2001:db8::1]:4711"). It is the default.
	XForwardedFor IPHeader = iota
	// Forwarded is the RFC 7239 Forwarded header: elements such as
	// for=192.0.2.60;proto=https, one per proxy, whose for= parameter
	// names the client ("[2001:db8::17]:4711" quoted, with brackets). An
	// element whose for= is "unknown" or an obfuscated identifier
	// ("_hidden") names no usable address.
	Forwarded
	// XRealIP is the X-Real-IP header: the one client address a proxy
	// (such as nginx) sets. Only its last line is read, and it must hold a
	// single address.
	XRealIP
)

var ipHeaderNames = [...]string{XForwardedFor: "X-Forwarded-For", Forwarded: "Forwarded", XRealIP: "X-Real-Ip"}

// String returns the header's canonical name.
func (h IPHeader) String() string {
	if int(h) < len(ipHeaderNames) {
		return ipHeaderNames[h]
	}
	return fmt.Sprintf("IPHeader(%d)", int(h))
}

// The defaults of ClientIP's options.
const (
	// DefaultIPv6Prefix is the default length of the prefix IPv6 clients
	// are grouped by: a /64 is what a single site or subscriber gets.
	DefaultIPv6Prefix = 64
	// DefaultIPv4Prefix is the default length of the prefix IPv4 clients
	// are grouped by: each address on its own.
	DefaultIPv4Prefix = 32
)

// ClientIP finds the address of a request's client and keys requests by
// it. By default it trusts nothing but the connection: the client is the
// peer, Request.RemoteAddr, and forwarding headers are ignored, since any
// client can send them.
//
// Behind reverse proxies, say which of them to trust, one way or the
// other:
//
//   - WithTrustedProxies(prefixes...): the proxies' addresses. The peer
//     and the addresses of the forwarding header (WithProxyHeader, default
//     X-Forwarded-For) are walked from the right, the last hop first: the
//     client is the first address that is not a trusted proxy's (or the
//     leftmost, if all are). A client's own forwarding header is thus
//     ignored unless the client is a trusted proxy itself, since the
//     proxy it went through appended its true address to the right.
//   - WithTrustedHops(n): n proxies stand in front of the server, each
//     appending to the header: the client is the n-th address from the
//     right of the header. A header with fewer addresses came by another
//     way, and the request has no trustworthy client address.
//
// Several header lines are one list, in order. An address that cannot be
// trusted stops the walk with ErrNoClientIP: an entry that is not an IP
// address (garbage, "unknown", an obfuscated identifier, an address with
// an IPv6 zone), or a Forwarded element without a for= parameter. Entries
// left of the client's are never read, so a client cannot disturb the walk
// with what it sends.
//
// Addresses are normalized (an IPv4-mapped IPv6 address is its IPv4
// address) and grouped: IPv6 clients by their /64 (WithIPv6Prefix), IPv4
// clients each on its own (WithIPv4Prefix), since one IPv6 subscriber
// holds a whole /64 and could otherwise take a new key per request. The
// key is the canonical text: "192.0.2.1", "2001:db8:1:2::/64".
//
// The zero ClientIP is NewClientIP(): it trusts nothing but the connection
// and groups by the default prefixes. A ClientIP is safe for concurrent
// use.
type ClientIP struct {
	trusted []netip.Prefix
	hops    int
	header  IPHeader
	name    string // the header's canonical key
	named   bool   // WithProxyHeader was given
	v4bits  int
	v6bits  int
}

// IPOption configures a ClientIP.
type IPOption interface {
	applyIP(*ClientIP, *error)
}

type ipOptionFunc func(*ClientIP, *error)

func (f ipOptionFunc) applyIP(c *ClientIP, err *error) { f(c, err) }

func ipFail(err *error, format string, args ...any) {
	if *err == nil {
		*err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithTrustedProxies trusts the proxies whose addresses are in prefixes
// (see ClientIP). IPv4-mapped IPv6 prefixes are taken as their IPv4
// prefixes. The default trusts none; the option adds to the prefixes of
// earlier ones. An invalid prefix is an error, and so is using this option
// with WithTrustedHops.
func WithTrustedProxies(prefixes ...netip.Prefix) IPOption {
	return ipOptionFunc(func(c *ClientIP, err *error) {
		for _, p := range prefixes {
			if !p.IsValid() {
				ipFail(err, "WithTrustedProxies(%v): invalid prefix", p)
				return
			}
			if a := p.Addr(); a.Is4In6() {
				if p.Bits() < 96 {
					ipFail(err, "WithTrustedProxies(%v): an IPv4-mapped prefix must be at least /96", p)
					return
				}
				p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
			}
			c.trusted = append(c.trusted, p.Masked())
		}
	})
}

// WithTrustedHops says that n proxies stand in front of the server, each
// appending the address it received the request from to the forwarding
// header: the client is the n-th address from the right of the header (see
// ClientIP). The default is 0: no proxy is trusted. n must be at least 1,
// and at most 1 with XRealIP.
func WithTrustedHops(n int) IPOption {
	return ipOptionFunc(func(c *ClientIP, err *error) {
		if n < 1 {
			ipFail(err, "WithTrustedHops(%d): want at least 1 hop", n)
			return
		}
		c.hops = n
	})
}

// WithProxyHeader sets the forwarding header read from trusted proxies.
// The default is XForwardedFor. It takes effect only with
// WithTrustedProxies or WithTrustedHops; without either, it is an error,
// since the header would be ignored.
func WithProxyHeader(h IPHeader) IPOption {
	return ipOptionFunc(func(c *ClientIP, err *error) {
		if h > XRealIP {
			ipFail(err, "WithProxyHeader(%v): unknown header", h)
			return
		}
		c.header, c.name, c.named = h, ipHeaderNames[h], true
	})
}

// WithIPv6Prefix sets the length of the prefix IPv6 clients are grouped by.
// The default is DefaultIPv6Prefix (64); bits must be in 1-128 (128: each
// address on its own).
func WithIPv6Prefix(bits int) IPOption {
	return ipOptionFunc(func(c *ClientIP, err *error) {
		if bits < 1 || bits > 128 {
			ipFail(err, "WithIPv6Prefix(%d): want 1 to 128 bits", bits)
			return
		}
		c.v6bits = bits
	})
}

// WithIPv4Prefix sets the length of the prefix IPv4 clients are grouped by.
// The default is DefaultIPv4Prefix (32: each address on its own); bits
// must be in 1-32.
func WithIPv4Prefix(bits int) IPOption {
	return ipOptionFunc(func(c *ClientIP, err *error) {
		if bits < 1 || bits > 32 {
			ipFail(err, "WithIPv4Prefix(%d): want 1 to 32 bits", bits)
			return
		}
		c.v4bits = bits
	})
}

// NewClientIP returns a ClientIP configured by opts. Invalid options are
// errors wrapping ErrInvalidOption.
func NewClientIP(opts ...IPOption) (*ClientIP, error) {
	c := &ClientIP{name: ipHeaderNames[XForwardedFor], v4bits: DefaultIPv4Prefix, v6bits: DefaultIPv6Prefix}
	var err error
	for _, o := range opts {
		if o != nil {
			o.applyIP(c, &err)
		}
	}
	switch {
	case err != nil:
	case c.hops > 0 && len(c.trusted) > 0:
		ipFail(&err, "WithTrustedHops and WithTrustedProxies are exclusive")
	case c.header == XRealIP && c.hops > 1:
		ipFail(&err, "WithTrustedHops(%d): X-Real-IP holds one address, so at most 1 hop", c.hops)
	case c.named && c.hops == 0 && len(c.trusted) == 0:
		ipFail(&err, "WithProxyHeader(%v) without trusted proxies: the header would be ignored", c.header)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

var defaultClientIP = new(ClientIP)

// RemoteIP keys a request by its peer's address, RemoteAddr, trusting no
// forwarding header: it is the Key of NewClientIP().
func RemoteIP(r *http.Request) (string, error) { return defaultClientIP.Key(r) }

// Errors of ClientIP, all wrapping ErrNoClientIP; those about the
// forwarding header, which a client that bypassed the proxies may have
// written, wrap ErrBadKey too, so that they never lift the limit.
var (
	errRemoteAddr = fmt.Errorf("%w: RemoteAddr is not an IP address", ErrNoClientIP)
	errBadHop     = &kindsOf{ErrNoClientIP.Error() + ": a forwarding header entry from a trusted proxy is not an IP address", []error{ErrNoClientIP, ErrBadKey}}
	errFewHops    = &kindsOf{ErrNoClientIP.Error() + ": the forwarding header has fewer entries than trusted hops", []error{ErrNoClientIP, ErrBadKey}}
)

// Addr returns the address of r's client (see ClientIP), normalized but
// not grouped. The error wraps ErrNoClientIP.
func (c *ClientIP) Addr(r *http.Request) (netip.Addr, error) {
	a, _, err := c.client(r)
	return a, err
}

// Key returns the key of r's client: the canonical text of its address,
// or of the prefix it is grouped by ("192.0.2.1", "2001:db8::/64"). The
// error wraps ErrNoClientIP (and so ErrNoKey). Key is a KeyFunc; it does
// not allocate for an IPv4 client written canonically.
func (c *ClientIP) Key(r *http.Request) (string, error) {
	a, text, err := c.client(r)
	if err != nil {
		return "", err
	}
	return c.format(a, text), nil
}

// client finds r's client: its address and the text it was parsed from.
func (c *ClientIP) client(r *http.Request) (netip.Addr, string, error) {
	peer, text, ok := parseRemote(r.RemoteAddr)
	if !ok {
		return netip.Addr{}, "", errRemoteAddr
	}
	if c.hops == 0 && len(c.trusted) == 0 {
		return peer, text, nil
	}
	it := newHopIter(r.Header[c.name], c.header)
	if c.hops > 0 {
		var (
			a netip.Addr
			t string
		)
		for range c.hops {
			var st hopStatus
			if a, t, st = it.next(); st != hopOK {
				if st == hopEnd {
					return netip.Addr{}, "", errFewHops
				}
				return netip.Addr{}, "", errBadHop
			}
		}
		return a, t, nil
	}
	cur, curText := peer, text
	for c.trusts(cur) {
		a, t, st := it.next()
		switch st {
		case hopEnd:
			return cur, curText, nil
		case hopBad:
			return netip.Addr{}, "", errBadHop
		}
		cur, curText = a, t
	}
	return cur, curText, nil
}

func (c *ClientIP) trusts(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// format returns the key of a: text itself when it is a's canonical form
// and a is not grouped, else a new string.
func (c *ClientIP) format(a netip.Addr, text string) string {
	bits, full := c.v6bits, 128
	if a.Is4() {
		bits, full = c.v4bits, 32
	}
	if bits == 0 { // the zero ClientIP
		bits = DefaultIPv6Prefix
		if a.Is4() {
			bits = DefaultIPv4Prefix
		}
	}
	var stack [64]byte
	if bits >= full {
		b := a.AppendTo(stack[:0])
		if string(b) == text {
			return text
		}
		return string(b)
	}
	p, _ := a.Prefix(bits)
	return string(p.AppendTo(stack[:0]))
}

// parseRemote parses a RemoteAddr: "ip:port", "[ipv6]:port" (with or
// without a zone, which is dropped), or an address without a port.
func parseRemote(s string) (netip.Addr, string, bool) {
	host, ok := splitHostPort(s, false)
	if !ok {
		return netip.Addr{}, "", false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, "", false
	}
	if a.Zone() != "" {
		a = a.WithZone("")
	}
	return a.Unmap(), host, true
}
