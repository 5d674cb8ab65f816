package httplimit

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/admit-go/admit"
)

func TestClientIP(t *testing.T) {
	ten := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	mapped := []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}
	xff := "X-Forwarded-For"
	fwd := "Forwarded"
	big := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name   string
		cfg    ClientIPConfig
		remote string
		header []string // name, value pairs: one line each
		want   string   // "" for an error
	}{
		// The default trusts only the connection.
		{"v4", ClientIPConfig{}, "192.0.2.1:1234", nil, "192.0.2.1"},
		{"v4 no port", ClientIPConfig{}, "192.0.2.1", nil, "192.0.2.1"},
		{"v6 grouped", ClientIPConfig{}, "[2001:db8:1:2:3:4:5:6]:80", nil, "2001:db8:1:2::/64"},
		{"v6 bare", ClientIPConfig{}, "2001:db8::1", nil, "2001:db8::/64"},
		{"v6 no port", ClientIPConfig{}, "[2001:db8::1]", nil, "2001:db8::/64"},
		{"v4-mapped", ClientIPConfig{}, "[::ffff:192.0.2.1]:80", nil, "192.0.2.1"},
		{"zone dropped", ClientIPConfig{}, "[fe80::1%eth0]:80", nil, "fe80::/64"},
		{"spoofed xff ignored", ClientIPConfig{}, "192.0.2.1:1", []string{xff, "6.6.6.6"}, "192.0.2.1"},
		{"spoofed forwarded ignored", ClientIPConfig{}, "192.0.2.1:1", []string{fwd, "for=6.6.6.6"}, "192.0.2.1"},
		{"unix socket", ClientIPConfig{}, "@", nil, ""},
		{"empty", ClientIPConfig{}, "", nil, ""},
		{"leading zeros", ClientIPConfig{}, "010.0.0.1:80", nil, ""},
		{"bad port", ClientIPConfig{}, "192.0.2.1:99999", nil, ""},
		{"garbage", ClientIPConfig{}, "not an address", nil, ""},
		{"unclosed bracket", ClientIPConfig{}, "[2001:db8::1:80", nil, ""},

		// Trusted proxies, X-Forwarded-For.
		{"one proxy", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "203.0.113.9"}, "203.0.113.9"},
		{"spoof left of client", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "6.6.6.6, 203.0.113.9"}, "203.0.113.9"},
		{"proxy chain", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "6.6.6.6, 10.1.1.1"}, "6.6.6.6"},
		{"untrusted peer", ClientIPConfig{TrustedProxies: ten}, "198.51.100.1:5", []string{xff, "6.6.6.6"}, "198.51.100.1"},
		{"internal request", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", nil, "10.0.0.2"},
		{"all trusted", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "10.9.9.9"}, "10.9.9.9"},
		{"garbage from proxy", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "garbage"}, ""},
		{"unknown from proxy", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "unknown"}, ""},
		{"garbage left of client", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "garbage, 203.0.113.9"}, "203.0.113.9"},
		{"1 MB left of client", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, big + ", 203.0.113.9"}, "203.0.113.9"},
		{"1 MB from proxy", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, big}, ""},
		{"lines", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "6.6.6.6, 10.0.0.5", xff, "10.0.0.9"}, "6.6.6.6"},
		{"lines spoof", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "6.6.6.6", xff, "203.0.113.9"}, "203.0.113.9"},
		{"empty elements", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "203.0.113.9, ,", xff, ""}, "203.0.113.9"},
		{"port", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "203.0.113.9:4711"}, "203.0.113.9"},
		{"bad port", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "203.0.113.9:x"}, ""},
		{"v6 port", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "[2001:db8::9]:4711"}, "2001:db8::/64"},
		{"v6", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, " 2001:db8::9\t"}, "2001:db8::/64"},
		{"v4-mapped entry", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "::ffff:203.0.113.9"}, "203.0.113.9"},
		{"zone entry", ClientIPConfig{TrustedProxies: ten}, "10.0.0.2:5", []string{xff, "fe80::1%eth0"}, ""},
		{"v4-mapped peer", ClientIPConfig{TrustedProxies: ten}, "[::ffff:10.0.0.2]:5", []string{xff, "203.0.113.9"}, "203.0.113.9"},
		{"v4-mapped prefix", ClientIPConfig{TrustedProxies: mapped}, "10.0.0.2:5", []string{xff, "203.0.113.9"}, "203.0.113.9"},
		{"v6 proxies", ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("2001:db8:ffff::/48")}}, "[2001:db8:ffff::1]:5", []string{xff, "203.0.113.9, 2001:db8:ffff::2"}, "203.0.113.9"},

		// Trusted hops.
		{"2 hops", ClientIPConfig{TrustedHops: 2}, "198.51.100.1:5", []string{xff, "6.6.6.6, 203.0.113.9, 10.0.0.1"}, "203.0.113.9"},
		{"2 hops lines", ClientIPConfig{TrustedHops: 2}, "198.51.100.1:5", []string{xff, "6.6.6.6, 203.0.113.9", xff, "10.0.0.1"}, "203.0.113.9"},
		{"too few hops", ClientIPConfig{TrustedHops: 2}, "198.51.100.1:5", []string{xff, "10.0.0.1"}, ""},
		{"no header", ClientIPConfig{TrustedHops: 1}, "198.51.100.1:5", nil, ""},
		{"bad hop", ClientIPConfig{TrustedHops: 2}, "198.51.100.1:5", []string{xff, "x, 10.0.0.1"}, ""},
		{"bad hop left", ClientIPConfig{TrustedHops: 1}, "198.51.100.1:5", []string{xff, "x, 203.0.113.9"}, "203.0.113.9"},

		// Forwarded.
		{"fwd", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for=192.0.2.60;proto=http;by=203.0.113.43"}, "192.0.2.60"},
		{"fwd v6", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::/64"},
		{"fwd case", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `For="192.0.2.43:47011"`}, "192.0.2.43"},
		{"fwd list", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for=192.0.2.43, for=198.51.100.17"}, "198.51.100.17"},
		{"fwd chain", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for=192.0.2.43, for=10.0.0.3;by=10.0.0.2"}, "192.0.2.43"},
		{"fwd unknown", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for=unknown"}, ""},
		{"fwd obfuscated", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for=_hidden"}, ""},
		{"fwd obfuscated quoted", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="_gazonk"`}, ""},
		{"fwd obfuscated port", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="192.0.2.43:_abc"`}, "192.0.2.43"},
		{"fwd bad obfuscated port", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="192.0.2.43:_a/c"`}, ""},
		{"fwd no for", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "proto=https"}, ""},
		{"fwd two for", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for=192.0.2.1;for=192.0.2.2"}, ""},
		{"fwd quoted comma", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="1.2.3.4, for=5.6.7.8"`}, ""},
		{"fwd unbalanced", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="[::1`}, ""},
		{"fwd client garbage", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="6.6.6.6, for=203.0.113.9`}, "203.0.113.9"},
		{"fwd lines", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for=6.6.6.6", fwd, "for=203.0.113.9;by=10.0.0.1"}, "203.0.113.9"},
		{"fwd escaped ext", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for=203.0.113.9;ext="a\"b,c;d"`}, "203.0.113.9"},
		{"fwd escaped ext before", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for=6.6.6.6;ext="x\\", for=203.0.113.9`}, "203.0.113.9"},
		{"fwd escaped for", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="203.0.113\.9"`}, ""},
		{"fwd zone", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="[fe80::1%25eth0]"`}, ""},
		{"fwd ows", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "  for=203.0.113.9 ; proto=https  "}, "203.0.113.9"},
		{"fwd empty pair", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for=203.0.113.9;;"}, "203.0.113.9"},
		{"fwd bad name", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "f(r=203.0.113.9"}, ""},
		{"fwd no value", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for="}, ""},
		{"fwd no equals", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, "for"}, ""},
		{"fwd junk after quote", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="203.0.113.9"x`}, ""},
		{"fwd untrusted", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "198.51.100.1:5", []string{fwd, "for=6.6.6.6"}, "198.51.100.1"},
		{"fwd hops", ClientIPConfig{TrustedHops: 1, ProxyHeader: "Forwarded"}, "198.51.100.1:5", []string{fwd, "for=6.6.6.6, for=203.0.113.9"}, "203.0.113.9"},
		{"fwd 1 MB", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, `for="` + big + `", for=203.0.113.9`}, "203.0.113.9"},
		{"fwd 1 MB backslashes", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "Forwarded"}, "10.0.0.2:5", []string{fwd, strings.Repeat(`\"`, 1<<19) + ", for=10.0.0.7"}, ""},

		// X-Real-IP.
		{"real ip", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "X-Real-IP"}, "10.0.0.2:5", []string{"X-Real-IP", "203.0.113.9"}, "203.0.113.9"},
		{"real ip untrusted", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "X-Real-IP"}, "198.51.100.1:5", []string{"X-Real-IP", "203.0.113.9"}, "198.51.100.1"},
		{"real ip last line", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "X-Real-IP"}, "10.0.0.2:5", []string{"X-Real-IP", "6.6.6.6", "X-Real-IP", "203.0.113.9"}, "203.0.113.9"},
		{"real ip list", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "X-Real-IP"}, "10.0.0.2:5", []string{"X-Real-IP", "6.6.6.6, 203.0.113.9"}, ""},
		{"real ip empty", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "X-Real-IP"}, "10.0.0.2:5", []string{"X-Real-IP", " "}, ""},
		{"real ip hop", ClientIPConfig{TrustedHops: 1, ProxyHeader: "X-Real-IP"}, "198.51.100.1:5", []string{"X-Real-IP", "203.0.113.9"}, "203.0.113.9"},
		{"real ip missing", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "X-Real-IP"}, "10.0.0.2:5", nil, "10.0.0.2"},

		// Header names are matched case-insensitively, as HTTP's are.
		{"xff named", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "x-forwarded-FOR"}, "10.0.0.2:5", []string{xff, "6.6.6.6, 203.0.113.9"}, "203.0.113.9"},
		{"fwd named lower", ClientIPConfig{TrustedProxies: ten, ProxyHeader: "forwarded"}, "10.0.0.2:5", []string{fwd, "for=203.0.113.9", xff, "6.6.6.6"}, "203.0.113.9"},
		{"real ip named lower", ClientIPConfig{TrustedHops: 1, ProxyHeader: "x-real-ip"}, "198.51.100.1:5", []string{"X-Real-IP", "203.0.113.9", xff, "6.6.6.6"}, "203.0.113.9"},

		// Grouping.
		{"v6 /48", ClientIPConfig{IPv6Prefix: 48}, "[2001:db8:1:2::1]:80", nil, "2001:db8:1::/48"},
		{"v6 /128", ClientIPConfig{IPv6Prefix: 128}, "[2001:DB8:1:2::1]:80", nil, "2001:db8:1:2::1"},
		{"v4 /24", ClientIPConfig{IPv4Prefix: 24}, "192.0.2.77:80", nil, "192.0.2.0/24"},
		{"v4 /32 mapped", ClientIPConfig{IPv4Prefix: 32}, "[::ffff:c000:0201]:80", nil, "192.0.2.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClientIP(tc.cfg)
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
	ten := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for name, cfg := range map[string]ClientIPConfig{
		"hops -1":          {TrustedHops: -1},
		"hops and proxies": {TrustedHops: 1, TrustedProxies: ten},
		"real ip 2 hops":   {TrustedHops: 2, ProxyHeader: "X-Real-IP"},
		"header alone":     {ProxyHeader: "Forwarded"},
		"header unknown":   {TrustedProxies: ten, ProxyHeader: "X-Client-IP"},
		"invalid prefix":   {TrustedProxies: []netip.Prefix{{}}},
		"short mapped":     {TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::ffff:0:0/90")}},
		"v6 bits -1":       {IPv6Prefix: -1},
		"v6 bits 129":      {IPv6Prefix: 129},
		"v4 bits -1":       {IPv4Prefix: -1},
		"v4 bits 33":       {IPv4Prefix: 33},
		"two bad fields":   {TrustedProxies: ten, IPv4Prefix: 40, IPv6Prefix: -1},
	} {
		c, err := NewClientIP(cfg)
		if c != nil || !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "httplimit: ") {
			t.Errorf("%s: %v, %v", name, c, err)
		}
	}
	// The zero fields are the defaults: no proxy, X-Forwarded-For, /64
	// and /32.
	c, err := NewClientIP(ClientIPConfig{TrustedProxies: ten})
	if err != nil || c.header != hdrXForwardedFor || c.name != "X-Forwarded-For" || c.v6bits != 64 || c.v4bits != 32 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	// ProxyHeader names one of three headers, in any case; the header is
	// then read under its canonical key.
	for name, want := range map[string]ipHeader{
		"X-Forwarded-For": hdrXForwardedFor, "x-forwarded-for": hdrXForwardedFor,
		"Forwarded": hdrForwarded, "FORWARDED": hdrForwarded,
		"X-Real-IP": hdrXRealIP, "x-real-ip": hdrXRealIP, "X-Real-Ip": hdrXRealIP,
	} {
		c, err := NewClientIP(ClientIPConfig{TrustedProxies: ten, ProxyHeader: name})
		if err != nil || c.header != want || c.name != http.CanonicalHeaderKey(name) {
			t.Errorf("ProxyHeader %q: %+v, %v", name, c, err)
		}
	}
}

// TestNewClientIPUnknownHeader: a ProxyHeader that names none of the three
// headers, a blank one or one with anything around the name included, is
// refused at construction, with an error wrapping admit.ErrInvalidConfig
// that names it, rather than read or ignored. (The empty name is the
// zero value, X-Forwarded-For.)
func TestNewClientIPUnknownHeader(t *testing.T) {
	ten := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, name := range []string{
		" ", "\t", "X-Client-IP", "X-Forwarded", "X-Forwarded-For ", " Forwarded", "X-Real-IP:",
		"X-Forwarded-For, X-Real-IP", "True-Client-IP", "X_Forwarded_For", "X-Forwarded-For\x00",
	} {
		for _, cfg := range []ClientIPConfig{
			{TrustedProxies: ten, ProxyHeader: name},
			{TrustedHops: 1, ProxyHeader: name},
			{ProxyHeader: name},
		} {
			c, err := NewClientIP(cfg)
			if c != nil || !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "httplimit: ProxyHeader "+strconv.Quote(name)+": unknown header") {
				t.Errorf("ProxyHeader %q: %v, %v; want an unknown header", name, c, err)
			}
		}
	}
	if _, err := NewClientIP(ClientIPConfig{TrustedProxies: ten, ProxyHeader: ""}); err != nil {
		t.Errorf("the empty ProxyHeader (X-Forwarded-For): %v", err)
	}
}

// TestClientIPAllocs: a canonical IPv4 client costs no allocation, also
// through a trusted proxy.
func TestClientIPAllocs(t *testing.T) {
	c, err := NewClientIP(ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
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
