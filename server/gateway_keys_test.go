package server

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// TestGatewayOddKeysNeverEscape: a client that sends the value a rule is
// keyed by oddly (repeated, empty, badly escaped, a malformed forwarding
// header) never gets more than a client sending it once: such a request is
// refused with 400 KEY_INVALID, and never reaches the upstream unlimited.
// (Before, each of these left the descriptor out, so the rule did not
// apply: 15 of 15 were admitted.)
func TestGatewayOddKeysNeverEscape(t *testing.T) {
	cases := []struct {
		name    string
		spec    string
		trusted bool
		path    string
		header  []string // name, value pairs, added in order
	}{
		{"header repeated, same value", "k=header:X-Api-Key", false, "/", []string{"X-Api-Key", "a", "X-Api-Key", "a"}},
		{"header repeated, other value", "k=header:X-Api-Key", false, "/", []string{"X-Api-Key", "a", "X-Api-Key", "b"}},
		{"header empty", "k=header:X-Api-Key", false, "/", []string{"X-Api-Key", ""}},
		{"header empty then set", "k=header:X-Api-Key", false, "/", []string{"X-Api-Key", "", "X-Api-Key", "a"}},
		{"required header repeated", "k=!header:X-Api-Key", false, "/", []string{"X-Api-Key", "a", "X-Api-Key", "a"}},
		{"query repeated", "k=query:tenant", false, "/?tenant=a&tenant=a", nil},
		{"query empty", "k=query:tenant", false, "/?tenant=", nil},
		{"query badly escaped", "k=query:tenant", false, "/?tenant=%zz", nil},
		{"query key badly escaped", "k=query:tenant", false, "/?tenant=a&%zz=1", nil},
		{"forwarded garbage", "k=client_ip", true, "/", []string{"X-Forwarded-For", "not-an-address"}},
		{"forwarded unknown", "k=client_ip", true, "/", []string{"X-Forwarded-For", "unknown"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			served, calls := sendFifteen(t, c.spec, c.trusted, c.path, "KEY_INVALID", c.header...)
			if served != 0 || calls != 0 {
				t.Errorf("%d of 15 served (upstream called %d times), want none: the limit is 5 for one key", served, calls)
			}
		})
	}
}

// perKeyPolicy limits the descriptor k to 5 an hour per value.
const perKeyPolicy = `
domain: api
rules:
  - name: per-k
    match: k
    rate: 5/hour
`

// sendFifteen sends 15 requests for path with header through a gateway
// of perKeyPolicy deriving one descriptor, spec (trusting the loopback's
// proxies if trusted); it returns how many were served and how often the
// upstream was called. A refusal other than 429 must carry code.
func sendFifteen(t *testing.T, spec string, trusted bool, path, code string, header ...string) (int, int64) {
	t.Helper()
	up := &echoUpstream{}
	opts := []option{withDescriptorSpecs(spec)}
	if trusted {
		opts = append(opts, withTrustedProxies(netip.MustParsePrefix("127.0.0.0/8")))
	}
	_, front, _ := newTestGateway(t, up, testEngine(t, perKeyPolicy), opts...)
	served := 0
	for range 15 {
		resp, body := get(t, front+path, header...)
		switch {
		case resp.StatusCode == http.StatusOK:
			served++
		case resp.StatusCode == http.StatusTooManyRequests:
		case resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"`+code+`"`):
			t.Fatalf("status %d: %s, want 400 %s", resp.StatusCode, body, code)
		}
	}
	return served, up.calls.Load()
}

// TestGatewayKeySources: each source, sent properly, is limited to its
// key's 5; a missing optional one leaves its rule out (Envoy's
// semantics), a missing required one is 400 KEY_MISSING.
func TestGatewayKeySources(t *testing.T) {
	cases := []struct {
		name    string
		spec    string
		trusted bool
		path    string
		header  []string
		want    int // requests of 15 served
		code    string
	}{
		{"header", "k=header:X-Api-Key", false, "/", []string{"X-Api-Key", "a"}, 5, ""},
		{"header missing", "k=header:X-Api-Key", false, "/", nil, 15, ""},
		{"required header missing", "k=!header:X-Api-Key", false, "/", nil, 0, "KEY_MISSING"},
		{"query", "k=query:tenant", false, "/?tenant=a", nil, 5, ""},
		{"query escaped", "k=query:tenant", false, "/?tenant=%61", nil, 5, ""},
		{"query missing", "k=query:tenant", false, "/?other=a", nil, 15, ""},
		{"client_ip", "k=client_ip", false, "/", []string{"X-Forwarded-For", "203.0.113.9"}, 5, ""},
		{"client_ip forwarded", "k=client_ip", true, "/", []string{"X-Forwarded-For", "203.0.113.9"}, 5, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if served, _ := sendFifteen(t, c.spec, c.trusted, c.path, c.code, c.header...); served != c.want {
				t.Errorf("%d of 15 served, want %d", served, c.want)
			}
		})
	}
}
