package httplimit

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

var fuzzHeaders = [...]IPHeader{XForwardedFor, Forwarded, XRealIP}

// FuzzForwardingHeaders sends arbitrary forwarding header lines through
// ClientIP. From an untrusted peer they are never read; from a trusted one
// the client is an address written in them (or the peer), and what is left
// of an untrusted client never changes it.
func FuzzForwardingHeaders(f *testing.F) {
	for _, s := range [][2]string{
		{"203.0.113.9", ""},
		{"6.6.6.6, 203.0.113.9", "10.0.0.5"},
		{`for=192.0.2.60;proto=http;by=203.0.113.43`, ""},
		{`for="[2001:db8:cafe::17]:4711", for=10.0.0.3`, `for=unknown`},
		{`for="_gazonk"`, `for=192.0.2.43:_x`},
		{`for="1.2.3.4, for=5.6.7.8`, `ext="a\"b,c"`},
		{`\\\"\"""",,,;;==`, `for=[::ffff:10.0.0.1]`},
		{"fe80::1%eth0, [2001:db8::1]:80", "::ffff:203.0.113.9:80"},
		{strings.Repeat("1.1.1.1,", 100), strings.Repeat(`"`, 50)},
	} {
		for h := range fuzzHeaders {
			f.Add(s[0], s[1], uint8(h))
		}
	}
	trusted := netip.MustParsePrefix("10.0.0.0/8")
	f.Fuzz(func(t *testing.T, line1, line2 string, hsel uint8) {
		h := fuzzHeaders[int(hsel)%len(fuzzHeaders)]
		c, err := NewClientIP(WithTrustedProxies(trusted), WithProxyHeader(h))
		if err != nil {
			t.Fatal(err)
		}
		req := func(remote string, lines ...string) *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = remote
			for _, l := range lines {
				r.Header.Add(h.String(), l)
			}
			return r
		}
		// An untrusted peer: the header is ignored.
		if k, err := c.Key(req("198.51.100.1:5", line1, line2)); k != "198.51.100.1" || err != nil {
			t.Fatalf("untrusted peer: key %q, %v", k, err)
		}
		// A trusted peer.
		r := req("10.0.0.2:5", line1, line2)
		a, text, err := c.client(r)
		if err != nil {
			return
		}
		if !a.IsValid() || a.Zone() != "" || a.Is4In6() {
			t.Fatalf("client %v", a)
		}
		if text != "10.0.0.2" && !strings.Contains(line1, text) && !strings.Contains(line2, text) {
			t.Fatalf("client %q is written nowhere in %q, %q", text, line1, line2)
		}
		k, err := c.Key(r)
		if err != nil || k == "" || len(k) > 64 {
			t.Fatalf("key %q, %v", k, err)
		}
		if trusted.Contains(a) || h == XRealIP {
			return
		}
		// The walk stopped at an untrusted client: a line added in front
		// (what a client sends) cannot change it.
		if k2, err := c.Key(req("10.0.0.2:5", "6.6.6.6, garbage\"", line1, line2)); k2 != k || err != nil {
			t.Fatalf("a line in front changed the key from %q to %q, %v", k, k2, err)
		}
	})
}

// FuzzClientIP tries arbitrary peers, headers and options: no panic, and a
// key is a canonical address or prefix.
func FuzzClientIP(f *testing.F) {
	f.Add("192.0.2.1:1234", "203.0.113.9", uint8(0), uint8(0), uint8(64), uint8(32))
	f.Add("[::ffff:10.0.0.2]:80", "for=\"[2001:db8::1]:80\"", uint8(1), uint8(0), uint8(48), uint8(24))
	f.Add("10.0.0.2:5", "6.6.6.6, 203.0.113.9", uint8(0), uint8(2), uint8(128), uint8(32))
	f.Add("[fe80::1%eth0]:1", "x", uint8(2), uint8(1), uint8(1), uint8(1))
	f.Add("@", "", uint8(0), uint8(0), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, remote, line string, hsel, hops, v6, v4 uint8) {
		h := fuzzHeaders[int(hsel)%len(fuzzHeaders)]
		opts := []IPOption{WithProxyHeader(h), WithIPv6Prefix(int(v6)%128 + 1), WithIPv4Prefix(int(v4)%32 + 1)}
		if hops%3 == 0 {
			opts = append(opts, WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")))
		} else {
			opts = append(opts, WithTrustedHops(1))
		}
		c, err := NewClientIP(opts...)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		r.Header.Add(h.String(), line)
		k, err := c.Key(r)
		if err != nil {
			return
		}
		if p, err := netip.ParsePrefix(k); err == nil {
			if p.Masked() != p || p.String() != k {
				t.Fatalf("key %q is not a canonical prefix", k)
			}
			return
		}
		if a, err := netip.ParseAddr(k); err != nil || a.String() != k || a.Is4In6() || a.Zone() != "" {
			t.Fatalf("key %q is not a canonical address", k)
		}
	})
}

// FuzzForwardedElement checks the Forwarded splitting: elements put back
// together give the line, and parsing never panics.
func FuzzForwardedElement(f *testing.F) {
	for _, s := range []string{
		`for=192.0.2.60;proto=http;by=203.0.113.43`,
		`for="[2001:db8:cafe::17]:4711", for=unknown`,
		`for="a\"b,c", for=1.2.3.4`,
		`"\\"\\\"", ,,`,
		`for="_x";for=1.1.1.1`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var elems []string
		rest := s
		for {
			elem, before, more, ok := lastElement(rest)
			if !ok {
				break
			}
			elems = append(elems, elem)
			if !more {
				slices.Reverse(elems)
				if got := strings.Join(elems, ","); got != s {
					t.Fatalf("elements %q join to %q, not %q", elems, got, s)
				}
				break
			}
			if len(before) >= len(rest) {
				t.Fatalf("no progress on %q", rest)
			}
			rest = before
		}
		for _, e := range elems {
			if host, ok := forwardedFor(trimOWS(e)); ok {
				if host == "" || strings.EqualFold(host, "unknown") {
					t.Fatalf("forwardedFor(%q) = %q", e, host)
				}
			}
		}
	})
}

// FuzzJoin checks that Join is injective: its output splits back into the
// keys it joined.
func FuzzJoin(f *testing.F) {
	f.Add("a|b", "c", "")
	f.Add("a", "b|c", `\`)
	f.Add(`\|`, `|\`, `\\||`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		parts := []string{a, b, c}
		s := joinStrings(parts)
		if got := splitJoined(s); !slices.Equal(got, parts) {
			t.Fatalf("Join(%q) = %q splits into %q", parts, s, got)
		}
	})
}
