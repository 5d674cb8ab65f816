package httplimit

import (
	"net/netip"
	"strings"
)

// The parsers of forwarding headers. They read a header from the right,
// one element at a time, and never look further left than the caller asks:
// the elements a client wrote itself are left of those its proxies
// appended, so whatever a client sends cannot disturb the reading of what
// trusted proxies wrote. They never allocate (but for an IPv6 zone, which
// is refused) and never panic.

type hopStatus uint8

const (
	hopOK  hopStatus = iota // an address
	hopEnd                  // no element left
	hopBad                  // an element that gives no usable address
)

// hopIter walks the elements of a forwarding header's lines from the
// right: the last line's last element first.
type hopIter struct {
	lines []string
	line  int    // the line being read; len(lines) before the first
	rest  string // the unread, left, part of lines[line]
	open  bool   // rest may hold more elements
	kind  ipHeader
}

func newHopIter(lines []string, kind ipHeader) hopIter {
	if kind == hdrXRealIP && len(lines) > 1 {
		lines = lines[len(lines)-1:]
	}
	return hopIter{lines: lines, line: len(lines), kind: kind}
}

// next returns the next address to the left, and the text it was parsed
// from.
func (it *hopIter) next() (netip.Addr, string, hopStatus) {
	for {
		if !it.open {
			if it.line--; it.line < 0 {
				it.line = -1
				return netip.Addr{}, "", hopEnd
			}
			it.rest, it.open = it.lines[it.line], true
		}
		var elem string
		switch it.kind {
		case hdrForwarded:
			var ok bool
			if elem, it.rest, it.open, ok = lastElement(it.rest); !ok {
				return netip.Addr{}, "", hopBad
			}
		case hdrXRealIP:
			elem, it.rest, it.open = it.rest, "", false
			if strings.IndexByte(elem, ',') >= 0 || trimOWS(elem) == "" {
				return netip.Addr{}, "", hopBad
			}
		default:
			if i := strings.LastIndexByte(it.rest, ','); i >= 0 {
				elem, it.rest = it.rest[i+1:], it.rest[:i]
			} else {
				elem, it.rest, it.open = it.rest, "", false
			}
		}
		elem = trimOWS(elem)
		if elem == "" {
			continue // an empty list element, as "a, , b" or a trailing comma
		}
		var (
			host string
			ok   bool
		)
		if it.kind == hdrForwarded {
			host, ok = forwardedFor(elem)
		} else {
			host, ok = splitHostPort(elem, false)
		}
		if !ok {
			return netip.Addr{}, "", hopBad
		}
		a, ok := parseHopAddr(host)
		if !ok {
			return netip.Addr{}, "", hopBad
		}
		return a, host, hopOK
	}
}

// lastElement splits the last element of a Forwarded line s from the rest:
// the text after the last comma outside a quoted string. more reports that
// before may hold more elements; ok is false for an unbalanced quote.
//
// Read from the right, a '"' preceded by an odd number of backslashes is a
// quoted-pair (escaped), and by an even number a delimiter: in a
// quoted-string the backslashes before a quote pair up from the left,
// and the character before such a run is not a backslash.
func lastElement(s string) (elem, before string, more, ok bool) {
	inQuote := false
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case '"':
			k := 0
			for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
				k++
			}
			if k%2 == 0 {
				inQuote = !inQuote
			}
			i -= k
		case ',':
			if !inQuote {
				return s[i+1:], s[:i], true, true
			}
		}
	}
	if inQuote {
		return "", "", false, false
	}
	return s, "", false, true
}

// forwardedFor returns the node of the one for= parameter of a Forwarded
// element, with its port removed; ok is false if there is none, more than
// one, or the element is malformed, or the node is "unknown" or an
// obfuscated identifier.
func forwardedFor(elem string) (string, bool) {
	var (
		node  string
		found bool
	)
	for elem != "" {
		pair, rest, ok := cutPair(elem)
		if !ok {
			return "", false
		}
		elem = rest
		if pair = trimOWS(pair); pair == "" {
			continue
		}
		name, val, ok := strings.Cut(pair, "=")
		if !ok || !isToken(name) {
			return "", false
		}
		v, quoted, ok := pairValue(val)
		if !ok {
			return "", false
		}
		if strings.EqualFold(name, "for") {
			if found || (quoted && strings.IndexByte(v, '\\') >= 0) {
				return "", false
			}
			node, found = v, true
		}
	}
	if !found {
		return "", false
	}
	return splitHostPort(node, true)
}

// cutPair splits s at its first ';' outside a quoted string.
func cutPair(s string) (pair, rest string, ok bool) {
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case c == ';' && !inQuote:
			return s[:i], s[i+1:], true
		}
	}
	if inQuote {
		return "", "", false
	}
	return s, "", true
}

// pairValue returns the value of a forwarded-pair: a quoted-string's
// content (quoted-pairs left as they are) or a token.
func pairValue(v string) (string, bool, bool) {
	if v == "" {
		return "", false, false
	}
	if v[0] != '"' {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= ' ' || c == '"' || c == '\\' || c == 0x7f {
				return "", false, false
			}
		}
		return v, false, true
	}
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			if i != len(v)-1 {
				return "", false, false
			}
			return v[1:i], true, true
		}
	}
	return "", false, false
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// splitHostPort returns the address part of a node: "192.0.2.1",
// "192.0.2.1:80", "[2001:db8::1]", "[2001:db8::1]:80", or a bare IPv6
// address. In a Forwarded node (forwarded true) the port may be obfuscated
// ("_abc"), and "unknown" and obfuscated identifiers ("_hidden") are
// refused.
func splitHostPort(s string, forwarded bool) (string, bool) {
	if s == "" {
		return "", false
	}
	if forwarded && (s[0] == '_' || strings.EqualFold(s, "unknown")) {
		return "", false
	}
	if s[0] == '[' {
		j := strings.IndexByte(s, ']')
		if j < 0 {
			return "", false
		}
		host, rest := s[1:j], s[j+1:]
		if rest != "" && (rest[0] != ':' || !validPort(rest[1:], forwarded)) {
			return "", false
		}
		return host, host != ""
	}
	i := strings.IndexByte(s, ':')
	switch {
	case i < 0:
		return s, true
	case strings.IndexByte(s[i+1:], ':') < 0: // one colon: IPv4 and a port
		return s[:i], i > 0 && validPort(s[i+1:], forwarded)
	default: // a bare IPv6 address
		return s, true
	}
}

// validPort reports whether p is a port number (1 to 5 digits, at most
// 65535) or, in a Forwarded node, an obfuscated port.
func validPort(p string, forwarded bool) bool {
	if p == "" {
		return false
	}
	if forwarded && p[0] == '_' {
		for i := 1; i < len(p); i++ {
			c := p[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
		return len(p) > 1
	}
	if len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n <= 65535
}

// parseHopAddr parses an address from a forwarding header: no zone (a
// zone means nothing off the proxy's host), IPv4-mapped addresses
// unmapped.
func parseHopAddr(host string) (netip.Addr, bool) {
	if strings.IndexByte(host, '%') >= 0 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
