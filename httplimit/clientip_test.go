package httplimit

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestClientIP(t *testing.T) {
	ten := WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8"))
	mapped := WithTrustedProxies(netip.MustParsePrefix("::ffff:10.0.0.0/104"))
	xff := "X-Forwarded-For"
	fwd := "Forwarded"
	big := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name   string
		opts   []IPOption
		remote string
		header []string // name, value pairs: one line each
		want   string   // "" for an error
	}{
		// The default trusts only the connection.
		{"v4", nil, "192.0.2.1:1234", nil, "192.0.2.1"},
		{"v4 no port", nil, "192.0.2.1", nil, "192.0.2.1"},
		{"v6 grouped", nil, "[2001:db8:1:2:3:4:5:6]:80", nil, "2001:db8:1:2::/64"},
		{"v6 bare", nil, "2001:db8::1", nil, "2001:db8::/64"},
		{"v6 no port", nil, "[2001:db8::1]", nil, "2001:db8::/64"},
		{"v4-mapped", nil, "[::ffff:192.0.2.1]:80", nil, "192.0.2.1"},
		{"zone dropped", nil, "[fe80::1%eth0]:80", nil, "fe80::/64"},
		{"spoofed xff ignored", nil, "192.0.2.1:1", []string{xff, "6.6.6.6"}, "192.0.2.1"},
		{"spoofed forwarded ignored", nil, "192.0.2.1:1", []string{fwd, "for=6.6.6.6"}, "192.0.2.1"},
		{"unix socket", nil, "@", nil, ""},
		{"empty", nil, "", nil, ""},
		{"leading zeros", nil, "010.0.0.1:80", nil, ""},
		{"bad port", nil, "192.0.2.1:99999", nil, ""},
		{"garbage", nil, "not an address", nil, ""},
		{"unclosed bracket", nil, "[2001:db8::1:80", nil, ""},

		// Trusted proxies, X-Forwarded-For.
		{"one proxy", []IPOption{ten}, "10.0.0.2:5", []string{xff, "203.0.113.9"}, "203.0.113.9"},
		{"spoof left of client", []IPOption{ten}, "10.0.0.2:5", []string{xff, "6.6.6.6, 203.0.113.9"}, "203.0.113.9"},
		{"proxy chain", []IPOption{ten}, "10.0.0.2:5", []string{xff, "6.6.6.6, 10.1.1.1"}, "6.6.6.6"},
		{"untrusted peer", []IPOption{ten}, "198.51.100.1:5", []string{xff, "6.6.6.6"}, "198.51.100.1"},
		{"internal request", []IPOption{ten}, "10.0.0.2:5", nil, "10.0.0.2"},
		{"all trusted", []IPOption{ten}, "10.0.0.2:5", []string{xff, "10.9.9.9"}, "10.9.9.9"},
		{"garbage from proxy", []IPOption{ten}, "10.0.0.2:5", []string{xff, "garbage"}, ""},
		{"unknown from proxy", []IPOption{ten}, "10.0.0.2:5", []string{xff, "unknown"}, ""},
		{"garbage left of client", []IPOption{ten}, "10.0.0.2:5", []string{xff, "garbage, 203.0.113.9"}, "203.0.113.9"},
		{"1 MB left of client", []IPOption{ten}, "10.0.0.2:5", []string{xff, big + ", 203.0.113.9"}, "203.0.113.9"},
		{"1 MB from proxy", []IPOption{ten}, "10.0.0.2:5", []string{xff, big}, ""},
		{"lines", []IPOption{ten}, "10.0.0.2:5", []string{xff, "6.6.6.6, 10.0.0.5", xff, "10.0.0.9"}, "6.6.6.6"},
		{"lines spoof", []IPOption{ten}, "10.0.0.2:5", []string{xff, "6.6.6.6", xff, "203.0.113.9"}, "203.0.113.9"},
		{"empty elements", []IPOption{ten}, "10.0.0.2:5", []string{xff, "203.0.113.9, ,", xff, ""}, "203.0.113.9"},
		{"port", []IPOption{ten}, "10.0.0.2:5", []string{xff, "203.0.113.9:4711"}, "203.0.113.9"},
		{"bad port", []IPOption{ten}, "10.0.0.2:5", []string{xff, "203.0.113.9:x"}, ""},
		{"v6 port", []IPOption{ten}, "10.0.0.2:5", []string{xff, "[2001:db8::9]:4711"}, "2001:db8::/64"},
		{"v6", []IPOption{ten}, "10.0.0.2:5", []string{xff, " 2001:db8::9\t"}, "2001:db8::/64"},
		{"v4-mapped entry", []IPOption{ten}, "10.0.0.2:5", []string{xff, "::ffff:203.0.113.9"}, "203.0.113.9"},
		{"zone entry", []IPOption{ten}, "10.0.0.2:5", []string{xff, "fe80::1%eth0"}, ""},
		{"v4-mapped peer", []IPOption{ten}, "[::ffff:10.0.0.2]:5", []string{xff, "203.0.113.9"}, "203.0.113.9"},
		{"v4-mapped prefix", []IPOption{mapped}, "10.0.0.2:5", []string{xff, "203.0.113.9"}, "203.0.113.9"},
		{"v6 proxies", []IPOption{WithTrustedProxies(netip.MustParsePrefix("2001:db8:ffff::/48"))}, "[2001:db8:ffff::1]:5", []string{xff, "203.0.113.9, 2001:db8:ffff::2"}, "203.0.113.9"},

		// Trusted hops.
		{"2 hops", []IPOption{WithTrustedHops(2)}, "198.51.100.1:5", []string{xff, "6.6.6.6, 203.0.113.9, 10.0.0.1"}, "203.0.113.9"},
		{"2 hops lines", []IPOption{WithTrustedHops(2)}, "198.51.100.1:5", []string{xff, "6.6.6.6, 203.0.113.9", xff, "10.0.0.1"}, "203.0.113.9"},
		{"too few hops", []IPOption{WithTrustedHops(2)}, "198.51.100.1:5", []string{xff, "10.0.0.1"}, ""},
		{"no header", []IPOption{WithTrustedHops(1)}, "198.51.100.1:5", nil, ""},
		{"bad hop", []IPOption{WithTrustedHops(2)}, "198.51.100.1:5", []string{xff, "x, 10.0.0.1"}, ""},
		{"bad hop left", []IPOption{WithTrustedHops(1)}, "198.51.100.1:5", []string{xff, "x, 203.0.113.9"}, "203.0.113.9"},

		// Forwarded.
		{"fwd", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for=192.0.2.60;proto=http;by=203.0.113.43"}, "192.0.2.60"},
		{"fwd v6", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::/64"},
		{"fwd case", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `For="192.0.2.43:47011"`}, "192.0.2.43"},
		{"fwd list", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for=192.0.2.43, for=198.51.100.17"}, "198.51.100.17"},
		{"fwd chain", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for=192.0.2.43, for=10.0.0.3;by=10.0.0.2"}, "192.0.2.43"},
		{"fwd unknown", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for=unknown"}, ""},
		{"fwd obfuscated", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for=_hidden"}, ""},
		{"fwd obfuscated quoted", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="_gazonk"`}, ""},
		{"fwd obfuscated port", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="192.0.2.43:_abc"`}, "192.0.2.43"},
		{"fwd bad obfuscated port", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="192.0.2.43:_a/c"`}, ""},
		{"fwd no for", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "proto=https"}, ""},
		{"fwd two for", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for=192.0.2.1;for=192.0.2.2"}, ""},
		{"fwd quoted comma", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="1.2.3.4, for=5.6.7.8"`}, ""},
		{"fwd unbalanced", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="[::1`}, ""},
		{"fwd client garbage", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="6.6.6.6, for=203.0.113.9`}, "203.0.113.9"},
		{"fwd lines", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for=6.6.6.6", fwd, "for=203.0.113.9;by=10.0.0.1"}, "203.0.113.9"},
		{"fwd escaped ext", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for=203.0.113.9;ext="a\"b,c;d"`}, "203.0.113.9"},
		{"fwd escaped ext before", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for=6.6.6.6;ext="x\\", for=203.0.113.9`}, "203.0.113.9"},
		{"fwd escaped for", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="203.0.113\.9"`}, ""},
		{"fwd zone", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="[fe80::1%25eth0]"`}, ""},
		{"fwd ows", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "  for=203.0.113.9 ; proto=https  "}, "203.0.113.9"},
		{"fwd empty pair", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for=203.0.113.9;;"}, "203.0.113.9"},
		{"fwd bad name", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "f(r=203.0.113.9"}, ""},
		{"fwd no value", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for="}, ""},
		{"fwd no equals", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, "for"}, ""},
		{"fwd junk after quote", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="203.0.113.9"x`}, ""},
		{"fwd untrusted", []IPOption{ten, WithProxyHeader(Forwarded)}, "198.51.100.1:5", []string{fwd, "for=6.6.6.6"}, "198.51.100.1"},
		{"fwd hops", []IPOption{WithTrustedHops(1), WithProxyHeader(Forwarded)}, "198.51.100.1:5", []string{fwd, "for=6.6.6.6, for=203.0.113.9"}, "203.0.113.9"},
		{"fwd 1 MB", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, `for="` + big + `", for=203.0.113.9`}, "203.0.113.9"},
		{"fwd 1 MB backslashes", []IPOption{ten, WithProxyHeader(Forwarded)}, "10.0.0.2:5", []string{fwd, strings.Repeat(`\"`, 1<<19) + ", for=10.0.0.7"}, ""},

		// X-Real-IP.
		{"real ip", []IPOption{ten, WithProxyHeader(XRealIP)}, "10.0.0.2:5", []string{"X-Real-IP", "203.0.113.9"}, "203.0.113.9"},
		{"real ip untrusted", []IPOption{ten, WithProxyHeader(XRealIP)}, "198.51.100.1:5", []string{"X-Real-IP", "203.0.113.9"}, "198.51.100.1"},
		{"real ip last line", []IPOption{ten, WithProxyHeader(XRealIP)}, "10.0.0.2:5", []string{"X-Real-IP", "6.6.6.6", "X-Real-IP", "203.0.113.9"}, "203.0.113.9"},
		{"real ip list", []IPOption{ten, WithProxyHeader(XRealIP)}, "10.0.0.2:5", []string{"X-Real-IP", "6.6.6.6, 203.0.113.9"}, ""},
		{"real ip empty", []IPOption{ten, WithProxyHeader(XRealIP)}, "10.0.0.2:5", []string{"X-Real-IP", " "}, ""},
		{"real ip hop", []IPOption{WithTrustedHops(1), WithProxyHeader(XRealIP)}, "198.51.100.1:5", []string{"X-Real-IP", "203.0.113.9"}, "203.0.113.9"},
		{"real ip missing", []IPOption{ten, WithProxyHeader(XRealIP)}, "10.0.0.2:5", nil, "10.0.0.2"},

		// Grouping.
		{"v6 /48", []IPOption{WithIPv6Prefix(48)}, "[2001:db8:1:2::1]:80", nil, "2001:db8:1::/48"},
		{"v6 /128", []IPOption{WithIPv6Prefix(128)}, "[2001:DB8:1:2::1]:80", nil, "2001:db8:1:2::1"},
		{"v4 /24", []IPOption{WithIPv4Prefix(24)}, "192.0.2.77:80", nil, "192.0.2.0/24"},
		{"v4 /32 mapped", []IPOption{WithIPv4Prefix(32)}, "[::ffff:c000:0201]:80", nil, "192.0.2.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClientIP(tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.remote
			for i := 0; i+1 < len(tc.header); i += 2 {
				r.Header.Add(tc.header[i], tc.header[i+1])
			}
			got, err := c.Key(r)
			if tc.want == "" {
				if err == nil || !errors.Is(err, ErrNoClientIP) || !errors.Is(err, ErrNoKey) {
					t.Errorf("Key = %q, %v; want an error wrapping ErrNoClientIP", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Key = %q, %v; want %q", got, err, tc.want)
			}
			a, err := c.Addr(r)
			if err != nil || (a.Is4() && a.Unmap() != a) || a.Zone() != "" {
				t.Errorf("Addr = %v, %v", a, err)
			}
		})
	}
}

func TestZeroClientIP(t *testing.T) {
	var c ClientIP
	for remote, want := range map[string]string{"192.0.2.1:1": "192.0.2.1", "[2001:db8:1:2::1]:1": "2001:db8:1:2::/64"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", "6.6.6.6")
		if k, err := c.Key(r); k != want || err != nil {
			t.Errorf("zero ClientIP: %q, %v; want %q", k, err, want)
		}
	}
}

func TestNewClientIPErrors(t *testing.T) {
	ten := WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8"))
	for name, opts := range map[string][]IPOption{
		"hops 0":            {WithTrustedHops(0)},
		"hops and proxies":  {WithTrustedHops(1), ten},
		"real ip 2 hops":    {WithTrustedHops(2), WithProxyHeader(XRealIP)},
		"header alone":      {WithProxyHeader(Forwarded)},
		"header unknown":    {ten, WithProxyHeader(9)},
		"invalid prefix":    {WithTrustedProxies(netip.Prefix{})},
		"short mapped":      {WithTrustedProxies(netip.MustParsePrefix("::ffff:0:0/90"))},
		"v6 bits 0":         {WithIPv6Prefix(0)},
		"v6 bits 129":       {WithIPv6Prefix(129)},
		"v4 bits 0":         {WithIPv4Prefix(0)},
		"v4 bits 33":        {WithIPv4Prefix(33)},
		"header xff alone":  {WithProxyHeader(XForwardedFor)},
		"second bad option": {ten, WithIPv4Prefix(40), WithIPv6Prefix(0)},
	} {
		c, err := NewClientIP(opts...)
		if c != nil || !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: %v, %v", name, c, err)
		}
	}
	if _, err := NewClientIP(nil, ten); err != nil {
		t.Errorf("a nil option: %v", err)
	}
	for h, want := range map[IPHeader]string{XForwardedFor: "X-Forwarded-For", Forwarded: "Forwarded", XRealIP: "X-Real-Ip", 7: "IPHeader(7)"} {
		if h.String() != want {
			t.Errorf("%d.String() = %q", h, h.String())
		}
	}
}

// TestClientIPAllocs: a canonical IPv4 client costs no allocation, also
// through a trusted proxy.
func TestClientIPAllocs(t *testing.T) {
	c, err := NewClientIP(WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8")))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.2:5"
	r.Header.Set("X-Forwarded-For", "6.6.6.6, 203.0.113.9, 10.0.0.3")
	if n := testing.AllocsPerRun(100, func() {
		if k, err := c.Key(r); k != "203.0.113.9" || err != nil {
			t.Fatal(k, err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per key", n)
	}
	r.RemoteAddr = "192.0.2.1:5"
	if n := testing.AllocsPerRun(100, func() { _, _ = RemoteIP(r) }); n != 0 {
		t.Errorf("RemoteIP: %v allocations per key", n)
	}
}

func TestSplitHostPort(t *testing.T) {
	for _, tc := range []struct {
		in        string
		forwarded bool
		host      string
		ok        bool
	}{
		{"1.2.3.4", false, "1.2.3.4", true},
		{"1.2.3.4:80", false, "1.2.3.4", true},
		{"1.2.3.4:65535", false, "1.2.3.4", true},
		{"1.2.3.4:65536", false, "", false},
		{"1.2.3.4:", false, "", false},
		{":80", false, "", false},
		{"1.2.3.4:_x", false, "", false},
		{"1.2.3.4:_x", true, "1.2.3.4", true},
		{"1.2.3.4:_", true, "", false},
		{"[::1]", false, "::1", true},
		{"[::1]:80", false, "::1", true},
		{"[::1]80", false, "", false},
		{"[]:80", false, "", false},
		{"[::1", false, "", false},
		{"::1", false, "::1", true},
		{"unknown", true, "", false},
		{"UNKNOWN", true, "", false},
		{"_x", true, "", false},
		{"", false, "", false},
	} {
		host, ok := splitHostPort(tc.in, tc.forwarded)
		if ok != tc.ok || (ok && host != tc.host) {
			t.Errorf("splitHostPort(%q, %v) = %q, %v; want %q, %v", tc.in, tc.forwarded, host, ok, tc.host, tc.ok)
		}
	}
}
