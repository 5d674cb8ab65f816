package httplimit

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/admit-go/admit"
)

// oddKey is a request that sends its key oddly.
type oddKey struct {
	name   string
	key    KeyFunc
	target string
	remote string
	header []string
}

// oddKeys are requests whose key source is present but repeated, empty or
// malformed, for every KeyFunc of the package that reads what a client
// sends.
func oddKeys() []oddKey {
	hops, _ := NewClientIP(ClientIPConfig{TrustedHops: 1})
	proxies, _ := NewClientIP(ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	fwd, _ := NewClientIP(ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, ProxyHeader: "Forwarded"})
	return []oddKey{
		{"header repeated", Header("X-Api-Key"), "/", "", []string{"X-Api-Key", "a", "X-Api-Key", "a"}},
		{"header repeated, other value", Header("X-Api-Key"), "/", "", []string{"X-Api-Key", "a", "X-Api-Key", "b"}},
		{"header empty", Header("X-Api-Key"), "/", "", []string{"X-Api-Key", ""}},
		{"api key header repeated", Header("X-Api-Key"), "/", "", []string{"X-Api-Key", "a", "X-Api-Key", "a"}},
		{"api key header empty", Header("X-Api-Key"), "/", "", []string{"X-Api-Key", ""}},
		{"api key header empty, query set", First(Header("X-Api-Key"), Query("k")), "/?k=a", "", []string{"X-Api-Key", ""}},
		{"api key query repeated", Query("k"), "/?k=a&k=a", "", nil},
		{"api key query empty", Query("k"), "/?k=", "", nil},
		{"api key query bare", Query("k"), "/?k", "", nil},
		{"api key query badly escaped", Query("k"), "/?k=%zz", "", nil},
		{"bearer empty", Bearer(), "/", "", []string{"Authorization", "Bearer "}},
		{"bearer two tokens", Bearer(), "/", "", []string{"Authorization", "Bearer a b"}},
		{"bearer repeated", Bearer(), "/", "", []string{"Authorization", "Bearer a", "Authorization", "Bearer a"}},
		{"authorization repeated, one bearer", Bearer(), "/", "", []string{"Authorization", "Basic eA==", "Authorization", "Bearer a"}},
		{"hops: no header", hops.Key, "/", "10.0.0.1:1", nil},
		{"hops: empty header", hops.Key, "/", "10.0.0.1:1", []string{"X-Forwarded-For", ""}},
		{"hops: garbage", hops.Key, "/", "10.0.0.1:1", []string{"X-Forwarded-For", "garbage"}},
		{"proxies: garbage", proxies.Key, "/", "10.0.0.1:1", []string{"X-Forwarded-For", "garbage"}},
		{"proxies: unknown", proxies.Key, "/", "10.0.0.1:1", []string{"X-Forwarded-For", "unknown"}},
		{"proxies: zone", proxies.Key, "/", "10.0.0.1:1", []string{"X-Forwarded-For", "fe80::1%eth0"}},
		{"forwarded: obfuscated", fwd.Key, "/", "10.0.0.1:1", []string{"Forwarded", "for=_hidden"}},
		{"forwarded: no for", fwd.Key, "/", "10.0.0.1:1", []string{"Forwarded", "proto=https"}},
		{"first: repeated key before the address", First(Bearer(), RemoteIP), "/", "", []string{"Authorization", "Bearer a", "Authorization", "Bearer b"}},
		{"join: one part repeated", Join(RemoteIP, Header("X-User")), "/", "", []string{"X-User", "a", "X-User", "a"}},
	}
}

// TestOddKeysNeverLiftTheLimit: whatever the options, a request that
// sends its key oddly is refused with 400 KEY_INVALID, so it never gets
// more than a request sending it once (5 of 15, the limit): not under
// Config.SkipUnkeyed, which serves requests without a key unlimited.
func TestOddKeysNeverLiftTheLimit(t *testing.T) {
	for _, c := range oddKeys() {
		for _, skip := range []bool{false, true} {
			lim, _ := gcra(t, admit.Limit{Rate: 5, Period: 3600e9}, "k")
			next := &okHandler{}
			h := mustNew(t, lim, c.key, Config{SkipUnkeyed: skip}).Handler(next)
			for range 15 {
				w := do(h, c.target, c.remote, c.header...)
				if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"KEY_INVALID"`) {
					t.Errorf("%s (skip unkeyed %v): %d %s, want 400 KEY_INVALID", c.name, skip, w.Code, w.Body)
					break
				}
			}
			if n := next.calls.Load(); n != 0 {
				t.Errorf("%s (skip unkeyed %v): served %d of 15, want none", c.name, skip, n)
			}
			// The KeyFunc says why.
			r := newRequest(c.target, c.remote, c.header...)
			if _, err := c.key(r); !errors.Is(err, ErrBadKey) || !errors.Is(err, ErrNoKey) {
				t.Errorf("%s: error %v, want ErrBadKey (and ErrNoKey)", c.name, err)
			}
		}
	}
}

// TestMissingKeysAreNotBad: a key source a request does not send at all
// is missing (ErrNoKey, not ErrBadKey): the request is refused with 400
// KEY_MISSING, or served unlimited under Config.SkipUnkeyed, as documented.
func TestMissingKeysAreNotBad(t *testing.T) {
	cases := []oddKey{
		{"header", Header("X-Api-Key"), "/", "", nil},
		{"api key", First(Header("X-Api-Key"), Query("k"), Bearer()), "/?other=1", "", []string{"Authorization", "Basic eA=="}},
		{"unix socket", RemoteIP, "/", "@", nil},
	}
	for _, c := range cases {
		r := newRequest(c.target, c.remote, c.header...)
		_, err := c.key(r)
		if !errors.Is(err, ErrNoKey) || errors.Is(err, ErrBadKey) {
			t.Errorf("%s: error %v, want ErrNoKey and not ErrBadKey", c.name, err)
		}
		lim, _ := gcra(t, admit.Limit{Rate: 5, Period: 3600e9}, "k")
		w := do(mustNew(t, lim, c.key, Config{}).Handler(&okHandler{}), c.target, c.remote, c.header...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"KEY_MISSING"`) {
			t.Errorf("%s: %d %s, want 400 KEY_MISSING", c.name, w.Code, w.Body)
		}
	}
	// Sent properly, each source gives a key.
	for _, c := range []oddKey{
		{"api key query escaped", Query("k"), "/?k=%61", "", nil},
		{"bearer", Bearer(), "/", "", []string{"Authorization", "bearer  a "}},
		{"header", Header("X-Api-Key"), "/", "", []string{"X-Api-Key", "a"}},
	} {
		if k, err := c.key(newRequest(c.target, c.remote, c.header...)); k != "a" || err != nil {
			t.Errorf("%s: %q, %v, want \"a\"", c.name, k, err)
		}
	}
}

func newRequest(target, remote string, header ...string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://h"+target, nil)
	r.RemoteAddr = "192.0.2.1:1"
	if remote != "" {
		r.RemoteAddr = remote
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

// FuzzKeySources sends any header lines and query to every KeyFunc that
// reads what a client sends: a source the request carries in any form
// either gives a key or fails with ErrBadKey, never with a bare ErrNoKey
// (which Config.SkipUnkeyed and policy.HTTP take as "no such source"); and
// the same request always gives the same answer.
func FuzzKeySources(f *testing.F) {
	f.Add("a", "", uint8(1), "k=a")
	f.Add("", "b", uint8(2), "k=&k=")
	f.Add("Bearer x", "Bearer y", uint8(2), "k=%zz")
	f.Add("bearer  ", "", uint8(1), "%6b=a")
	f.Add("\x00", "\xff", uint8(3), "k")
	f.Fuzz(func(t *testing.T, v1, v2 string, lines uint8, query string) {
		vals := []string{v1, v2, v1}[:min(int(lines), 3)]
		r, err := http.NewRequest(http.MethodGet, "http://h/", nil)
		if err != nil {
			t.Skip()
		}
		r.URL.RawQuery = query
		r.RemoteAddr = "10.0.0.1:1"
		for _, v := range vals {
			r.Header.Add("X-Api-Key", v)
			r.Header.Add("Authorization", v)
			r.Header.Add("X-Forwarded-For", v)
		}
		hops, _ := NewClientIP(ClientIPConfig{TrustedHops: 1})
		proxies, _ := NewClientIP(ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
		present := len(vals) > 0
		for _, c := range []struct {
			name    string
			key     KeyFunc
			present bool // the request carries the source
		}{
			{"header", Header("X-Api-Key"), present},
			{"api key header", Header("X-Api-Key"), present},
			{"api key query", Query("k"), queryHas(query, "k")},
			{"hops", hops.Key, true},
			{"proxies", proxies.Key, true},
		} {
			k, err := c.key(r)
			if c.present && err != nil && !errors.Is(err, ErrBadKey) {
				t.Fatalf("%s: carried, but %v (not ErrBadKey)", c.name, err)
			}
			if err == nil && k == "" && c.name != "proxies" {
				t.Fatalf("%s: an empty key", c.name)
			}
			if k2, err2 := c.key(r); k2 != k || (err == nil) != (err2 == nil) {
				t.Fatalf("%s: %q %v, then %q %v", c.name, k, err, k2, err2)
			}
		}
		// A Bearer Authorization is a key or a bad one.
		if _, err := Bearer()(r); err != nil && !errors.Is(err, ErrBadKey) {
			for _, v := range vals {
				if s, _, _ := strings.Cut(strings.TrimLeft(v, " \t"), " "); strings.EqualFold(s, "Bearer") && len(vals) == 1 {
					t.Fatalf("bearer %q: %v", v, err)
				}
			}
		}
	})
}

// queryHas reports whether a raw query names param (escaped or not).
func queryHas(raw, param string) bool {
	for _, kv := range strings.Split(raw, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if u, err := url.QueryUnescape(k); err == nil && u == param {
			return true
		}
	}
	return false
}
