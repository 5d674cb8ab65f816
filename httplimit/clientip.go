package httplimit

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/admit-go/admit"
)

// ipHeader is the forwarding header a ClientIP reads the addresses of its
// proxies' clients from (ClientIPConfig.ProxyHeader).
type ipHeader uint8

const (
	hdrXForwardedFor ipHeader = iota // X-Forwarded-For, the default
	hdrForwarded                     // RFC 7239 Forwarded
	hdrXRealIP                       // X-Real-IP
)

// ipHeaderNames are the headers' canonical keys, as in http.Header.
var ipHeaderNames = [...]string{hdrXForwardedFor: "X-Forwarded-For", hdrForwarded: "Forwarded", hdrXRealIP: "X-Real-Ip"}

// parseIPHeader returns the header named name (ClientIPConfig.ProxyHeader):
// X-Forwarded-For for "", else the one whose name equals name, compared
// case-insensitively, as HTTP header names are.
func parseIPHeader(name string) (ipHeader, bool) {
	if name == "" {
		return hdrXForwardedFor, true
	}
	for h, n := range ipHeaderNames {
		if strings.EqualFold(name, n) {
			return ipHeader(h), true
		}
	}
	return 0, false
}

// The default prefix lengths clients are grouped by (ClientIPConfig).
const (
	defaultIPv6Prefix = 64 // what a single site or subscriber gets
	defaultIPv4Prefix = 32 // each address on its own
)

// ClientIP finds the address of a request's client and keys requests by
// it. By default it trusts nothing but the connection: the client is the
// peer, Request.RemoteAddr, and forwarding headers are ignored, since any
// client can send them.
//
// Behind reverse proxies, say which of them to trust, one way or the
// other:
//
//   - ClientIPConfig.TrustedProxies: the proxies' addresses. The peer
//     and the addresses of the forwarding header (ProxyHeader, default
//     X-Forwarded-For) are walked from the right, the last hop first: the
//     client is the first address that is not a trusted proxy's (or the
//     leftmost, if all are). A client's own forwarding header is thus
//     ignored unless the client is a trusted proxy itself, since the
//     proxy it went through appended its true address to the right.
//   - ClientIPConfig.TrustedHops, n: n proxies stand in front of the server, each
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
// address) and grouped: IPv6 clients by their /64 (IPv6Prefix), IPv4
// clients each on its own (IPv4Prefix), since one IPv6 subscriber
// holds a whole /64 and could otherwise take a new key per request. The
// key is the canonical text: "192.0.2.1", "2001:db8:1:2::/64".
//
// The zero ClientIP is NewClientIP(ClientIPConfig{}): it trusts nothing
// but the connection and groups by the default prefixes. A ClientIP is safe for concurrent
// use.
type ClientIP struct {
	trusted []netip.Prefix
	hops    int
	header  ipHeader
	name    string // the header's canonical key
	v4bits  int
	v6bits  int
}

// ClientIPConfig configures a ClientIP (see NewClientIP). The zero
// ClientIPConfig trusts nothing but the connection and groups IPv6
// clients by /64, IPv4 clients each on its own.
type ClientIPConfig struct {
	// TrustedProxies are the addresses of the proxies to trust (see
	// ClientIP). IPv4-mapped IPv6 prefixes are taken as their IPv4
	// prefixes (they must be at least /96). Nil trusts none. Each prefix
	// must be valid; TrustedProxies and TrustedHops are exclusive.
	TrustedProxies []netip.Prefix

	// TrustedHops says that that many proxies stand in front of the
	// server, each appending the address it received the request from to
	// the forwarding header: the client is the n-th address from the
	// right of the header (see ClientIP). 0 trusts no proxy; it must not
	// be negative, and at most 1 with X-Real-IP.
	TrustedHops int

	// ProxyHeader is the name of the forwarding header read from trusted
	// proxies, matched case-insensitively as HTTP header names are:
	//
	//   - "X-Forwarded-For" (the default, for ""): a comma-separated list
	//     of addresses, each proxy appending the address it received the
	//     request from. Entries may carry a port ("192.0.2.1:4711",
	//     "[2001:db8::1]:4711").
	//   - "Forwarded": the RFC 7239 header, elements such as
	//     for=192.0.2.60;proto=https, one per proxy, whose for= parameter
	//     names the client ("[2001:db8::17]:4711" quoted, with brackets).
	//     An element whose for= is "unknown" or an obfuscated identifier
	//     ("_hidden") names no usable address.
	//   - "X-Real-IP": the one client address a proxy (such as nginx)
	//     sets. Only its last line is read, and it must hold a single
	//     address.
	//
	// Another name is an error, and so is a header other than
	// X-Forwarded-For without TrustedProxies or TrustedHops, since it
	// would be ignored.
	ProxyHeader string

	// IPv6Prefix is the length of the prefix IPv6 clients are grouped by.
	// 0 means 64 (what a single site or subscriber gets); otherwise it
	// must be in 1-128 (128: each address on its own).
	IPv6Prefix int

	// IPv4Prefix is the length of the prefix IPv4 clients are grouped by.
	// 0 means 32 (each address on its own); otherwise it must be in 1-32.
	IPv4Prefix int
}

func ipInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: httplimit: "+format, append([]any{admit.ErrInvalidConfig}, args...)...)
}

// NewClientIP returns a ClientIP configured by cfg. A field of cfg out of
// its domain is an error wrapping admit.ErrInvalidConfig.
func NewClientIP(cfg ClientIPConfig) (*ClientIP, error) {
	c := &ClientIP{hops: cfg.TrustedHops, v4bits: cfg.IPv4Prefix, v6bits: cfg.IPv6Prefix}
	h, known := parseIPHeader(cfg.ProxyHeader)
	c.header, c.name = h, ipHeaderNames[h]
	for _, p := range cfg.TrustedProxies {
		if !p.IsValid() {
			return nil, ipInvalid("TrustedProxies: %v: invalid prefix", p)
		}
		if a := p.Addr(); a.Is4In6() {
			if p.Bits() < 96 {
				return nil, ipInvalid("TrustedProxies: %v: an IPv4-mapped prefix must be at least /96", p)
			}
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		c.trusted = append(c.trusted, p.Masked())
	}
	switch {
	case c.hops < 0:
		return nil, ipInvalid("TrustedHops %d: want >= 0", c.hops)
	case !known:
		return nil, ipInvalid("ProxyHeader %.64q: unknown header: want X-Forwarded-For (the default), Forwarded or X-Real-IP", cfg.ProxyHeader)
	case c.v6bits < 0 || c.v6bits > 128:
		return nil, ipInvalid("IPv6Prefix %d: want 1 to 128 bits", c.v6bits)
	case c.v4bits < 0 || c.v4bits > 32:
		return nil, ipInvalid("IPv4Prefix %d: want 1 to 32 bits", c.v4bits)
	case c.hops > 0 && len(c.trusted) > 0:
		return nil, ipInvalid("TrustedHops and TrustedProxies are exclusive")
	case c.header == hdrXRealIP && c.hops > 1:
		return nil, ipInvalid("TrustedHops %d: X-Real-IP holds one address, so at most 1 hop", c.hops)
	case c.header != hdrXForwardedFor && c.hops == 0 && len(c.trusted) == 0:
		return nil, ipInvalid("ProxyHeader %s without TrustedProxies or TrustedHops: the header would be ignored", c.name)
	}
	if c.v4bits == 0 {
		c.v4bits = defaultIPv4Prefix
	}
	if c.v6bits == 0 {
		c.v6bits = defaultIPv6Prefix
	}
	return c, nil
}

var defaultClientIP = new(ClientIP)

// RemoteIP keys a request by its peer's address, RemoteAddr, trusting no
// forwarding header: it is the Key of NewClientIP(ClientIPConfig{}).
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
		bits = defaultIPv6Prefix
		if a.Is4() {
			bits = defaultIPv4Prefix
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
