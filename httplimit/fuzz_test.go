package httplimit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/admit-go/admit"
)

var fuzzHeaders = [...]string{"X-Forwarded-For", "Forwarded", "X-Real-IP"}

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
		c, err := NewClientIP(ClientIPConfig{TrustedProxies: []netip.Prefix{trusted}, ProxyHeader: h})
		if err != nil {
			t.Fatal(err)
		}
		req := func(remote string, lines ...string) *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = remote
			for _, l := range lines {
				r.Header.Add(h, l)
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
		if trusted.Contains(a) || h == "X-Real-IP" {
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
		cfg := ClientIPConfig{ProxyHeader: h, IPv6Prefix: int(v6)%128 + 1, IPv4Prefix: int(v4)%32 + 1}
		if hops%3 == 0 {
			cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}
		} else {
			cfg.TrustedHops = 1
		}
		c, err := NewClientIP(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		r.Header.Add(h, line)
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

// fuzzShared are the middlewares FuzzAnswers answers through, one per set
// of options, kept across its inputs so that their caches hold the
// answers of earlier inputs; their limiters answer what the input says.
var fuzzShared [8]struct {
	st *stub
	m  *Middleware
}

// fuzzConfig is the Config of the middlewares of FuzzAnswers, by index.
func fuzzConfig(i int) Config {
	return Config{Fields: [...]Fields{IETFFields | LegacyFields, IETFFields, LegacyFields, NoFields}[i%4], ProblemJSON: i >= 4}
}

// FuzzAnswers: a decision is answered by a middleware whose cache holds
// the answers of other decisions (and whose memo holds other numbers)
// exactly as by a new middleware, and a refusal's body is JSON naming the
// Rule and the wait.
func FuzzAnswers(f *testing.F) {
	f.Add("api", int64(100), int64(60e9), int64(0), int64(0), int64(1500e6), int64(30e9), uint8(0), uint8(0), false)
	f.Add("api", int64(100), int64(60e9), int64(0), int64(0), int64(2500e6), int64(30e9), uint8(0), uint8(0), false)
	f.Add("", int64(3), int64(0), int64(3), int64(1), int64(0), int64(0), uint8(1), uint8(5), false)
	f.Add("w\"ird\\\xff", int64(1<<62), int64(1), int64(-1), int64(-5), int64(-1), int64(1<<62), uint8(2), uint8(6), true)
	f.Add("fail-closed", int64(0), int64(0), int64(0), int64(0), int64(1e9), int64(0), uint8(0), uint8(7), false)
	f.Fuzz(func(t *testing.T, rule string, rate, period, burst, remaining, retry, reset int64, kind, opt uint8, allowed bool) {
		d := admit.Decision{
			Allowed:    allowed,
			Limit:      admit.Limit{Rate: rate, Period: time.Duration(period), Burst: burst},
			Remaining:  remaining,
			RetryAfter: time.Duration(retry),
			ResetAfter: time.Duration(reset),
			Rule:       rule,
			Kind:       admit.Kind(kind % 3),
		}
		i := int(opt) % len(fuzzShared)
		s := &fuzzShared[i]
		if s.m == nil {
			s.st = &stub{}
			s.m = mustNew(t, s.st, RemoteIP, fuzzConfig(i))
		}
		s.st.d, s.st.keys, s.st.costs = d, nil, nil
		got := do(s.m.Handler(&okHandler{}), "/", "")
		want := do(mustNew(t, &stub{d: d}, RemoteIP, fuzzConfig(i)).Handler(&okHandler{}), "/", "")
		if got.Code != want.Code || !reflect.DeepEqual(got.Result().Header, want.Result().Header) || got.Body.String() != want.Body.String() {
			t.Fatalf("%+v: cached %d %v %q, new %d %v %q", d, got.Code, got.Result().Header, got.Body, want.Code, want.Result().Header, want.Body)
		}
		if allowed {
			return
		}
		var body struct {
			Code       string  `json:"code"`
			LimitDim   string  `json:"limit_dim"`
			RetryAfter float64 `json:"retry_after_ms"`
		}
		if err := json.Unmarshal(got.Body.Bytes(), &body); err != nil {
			t.Fatalf("%+v: body %q: %v", d, got.Body, err)
		}
		ms := retryAfter(d.RetryAfter).Milliseconds()
		if retryAfter(d.RetryAfter)%time.Millisecond != 0 {
			ms++
		}
		if body.Code != "RATE_LIMIT" || (utf8.ValidString(rule) && body.LimitDim != policyName(rule)) || body.RetryAfter != float64(ms) {
			t.Fatalf("%+v: body %+v, want retry_after_ms %d", d, body, ms)
		}
	})
}
