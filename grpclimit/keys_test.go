package grpclimit

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/admit-go/admit"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

type strAddr string

func (a strAddr) Network() string { return "test" }
func (a strAddr) String() string  { return string(a) }

func mustAddrPort(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

func withPeer(a net.Addr) context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{Addr: a})
}

func TestPeerKey(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(mustAddrPort(t, s)) }
	for _, tc := range []struct {
		name string
		ctx  context.Context
		key  Key
		want string // "" for no key
	}{
		{"ipv4", withPeer(tcp("203.0.113.7:5000")), PeerKey(), "ip:203.0.113.7"},
		{"ipv6 by /64", withPeer(tcp("[2001:db8:1:2:3:4:5:6]:443")), PeerKey(), "ip:2001:db8:1:2::/64"},
		{"same /64", withPeer(tcp("[2001:db8:1:2:ffff::1]:1")), PeerKey(), "ip:2001:db8:1:2::/64"},
		{"ipv4-mapped", withPeer(tcp("[::ffff:198.51.100.1]:80")), PeerKey(), "ip:198.51.100.1"},
		{"zone", withPeer(&net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0", Port: 1}), PeerKey(), "ip:fe80::/64"},
		{"udp", withPeer(&net.UDPAddr{IP: net.ParseIP("192.0.2.1"), Port: 53}), PeerKey(), "ip:192.0.2.1"},
		{"string address", withPeer(strAddr("192.0.2.9:1234")), PeerKey(), "ip:192.0.2.9"},
		{"ipv4 /24", withPeer(tcp("203.0.113.7:5000")), PeerPrefixKey(24, 48), "ip:203.0.113.0/24"},
		{"ipv6 /48", withPeer(tcp("[2001:db8:1:2::1]:5")), PeerPrefixKey(24, 48), "ip:2001:db8:1::/48"},
		{"ipv6 whole", withPeer(tcp("[2001:db8::1]:5")), PeerPrefixKey(32, 128), "ip:2001:db8::1"},
		{"unix socket", withPeer(&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}), PeerKey(), ""},
		{"bufconn", withPeer(strAddr("bufconn")), PeerKey(), ""},
		{"nil address", withPeer(nil), PeerKey(), ""},
		{"nil TCP IP", withPeer(&net.TCPAddr{}), PeerKey(), ""},
		{"no peer", context.Background(), PeerKey(), ""},
		{"first: metadata", metadata.NewIncomingContext(withPeer(tcp("192.0.2.1:1")), metadata.Pairs("x-api-key", "k")),
			FirstKey(MetadataKey("x-api-key"), PeerKey()), "md:x-api-key:k"},
		{"first: peer", withPeer(tcp("192.0.2.1:1")), FirstKey(MetadataKey("x-api-key"), PeerKey()), "ip:192.0.2.1"},
		{"first: none", context.Background(), FirstKey(MetadataKey("x-api-key"), PeerKey()), ""},
		{"func", context.Background(), FuncKey(func(_ context.Context, m string) (string, bool) { return "user:" + m, true }), "user:/s/m"},
		{"zero key", withPeer(tcp("192.0.2.1:1")), Key{}, ""},
	} {
		got, ok := tc.key.Of(tc.ctx, "/s/m")
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}

func TestMetadataKey(t *testing.T) {
	md := metadata.MD{
		"x-api-key":   {"", "second"}, // empty first value: missing
		"x-token-bin": {"\x00\x01\xff"},
		"tenant":      {"acme", "other"},
	}
	ctx := metadata.NewIncomingContext(context.Background(), md)
	for _, tc := range []struct {
		name, want string
	}{
		{"x-api-key", ""},
		{"X-Token-Bin", "md:x-token-bin:\x00\x01\xff"},
		{"tenant", "md:tenant:acme"},
		{"absent", ""},
	} {
		got, ok := MetadataKey(tc.name).Of(ctx, "/s/m")
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
	// Metadata built by hand may hold upper-case names.
	ctx = metadata.NewIncomingContext(context.Background(), metadata.MD{"X-Api-Key": {"k"}})
	if got, _ := MetadataKey("x-api-key").Of(ctx, ""); got != "md:x-api-key:k" {
		t.Errorf("upper-case name: %q", got)
	}
	// No key of one source can be another's.
	if got, _ := MetadataKey("ip").Of(metadata.NewIncomingContext(context.Background(), metadata.Pairs("ip", "192.0.2.1")), ""); strings.HasPrefix(got, "ip:") {
		t.Errorf("metadata key %q looks like a peer key", got)
	}
}

// FuzzKey feeds garbage metadata and addresses to the keys and a Server:
// nothing panics, a key found is the first non-empty value under its
// prefix, and the key a limiter sees is never longer than the maximum.
func FuzzKey(f *testing.F) {
	f.Add("x-api-key", "alice", "bob", "192.0.2.1:80")
	f.Add("x-token-bin", "\x00\xff\xfe", "", "[2001:db8::1%eth0]:1")
	f.Add("x-api-key", "", "second", "bufconn")
	f.Add("x-api-key", strings.Repeat("k", 5000), "", "[::ffff:1.2.3.4]:0")
	f.Add("X-Weird.Name_1", "v", "w", "not an address")
	f.Add("", "v", "", "")
	f.Add("a b", "v", "", ":")
	f.Fuzz(func(t *testing.T, name, v1, v2, addr string) {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: strAddr(addr)})
		ctx = metadata.NewIncomingContext(ctx, metadata.MD{strings.ToLower(name): {v1, v2}})
		k := MetadataKey(name)
		key, ok := k.Of(ctx, "/s/m")
		if k.Err() != nil {
			if ok {
				t.Fatalf("an invalid key found %q", key)
			}
		} else if want := "md:" + strings.ToLower(name) + ":" + v1; ok != (v1 != "") || (ok && key != want) {
			t.Fatalf("key %q, %v; want %q", key, ok, want)
		}
		if pk, ok := PeerKey().Of(ctx, "/s/m"); ok && (!strings.HasPrefix(pk, "ip:") || !utf8.ValidString(pk)) {
			t.Fatalf("peer key %q", pk)
		}

		lim := &scripted{}
		s, err := NewServer(lim, FirstKey(MetadataKey("x-api-key"), PeerKey()), Config{MaxKeyLength: 100})
		if err != nil {
			t.Fatal(err)
		}
		ctx = metadata.NewIncomingContext(ctx, metadata.MD{"x-api-key": {v1, v2}})
		d, err := s.Decide(ctx, "/s/m", nil)
		if err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
		seen := lim.seen()
		if len(seen) != 1 || len(seen[0]) > 100 {
			t.Fatalf("keys %q", seen)
		}
	})
}

// FuzzRefusal builds refusals of any decision: never a panic, always
// ResourceExhausted, RetryInfo exactly when the delay is known, and the
// memo of refusals gives the refusal built anew for any decision of the
// same shape.
func FuzzRefusal(f *testing.F) {
	f.Add(int64(1), int64(1e9), int64(1), int64(0), int64(1e9), uint8(0), "api")
	f.Add(int64(-1), int64(-5), int64(-7), int64(-3), int64(-1), uint8(9), "\x00\"\\é")
	f.Add(admit.Inf, int64(0), int64(0), int64(0), int64(admit.InfDuration), uint8(1), "")
	f.Add(int64(1<<62), int64(1<<62), int64(1<<62), int64(1<<62), int64(1<<62), uint8(2), "q")
	m := newMemo()
	f.Fuzz(func(t *testing.T, rate, period, burst, remaining, retry int64, kind uint8, name string) {
		d := admit.Decision{
			Limit:      admit.Limit{Rate: rate, Period: time.Duration(period), Burst: burst},
			Remaining:  remaining,
			RetryAfter: time.Duration(retry),
			Kind:       admit.Kind(kind % 4),
			Rule:       name,
		}
		st, md := refusal(d, name, nil)
		if st.Code() != 8 { // codes.ResourceExhausted
			t.Fatalf("code %v", st.Code())
		}
		delay, ok := RetryDelay(st.Err())
		if want := retry > 0 && d.RetryAfter <= maxDelay; ok != want || (ok && (delay < d.RetryAfter || delay-d.RetryAfter >= 1e6)) {
			t.Fatalf("RetryInfo %v, %v for RetryAfter %v", delay, ok, d.RetryAfter)
		}
		for k, vs := range md {
			for _, v := range vs {
				for i := 0; i < len(v); i++ {
					if v[i] < 0x20 || v[i] > 0x7e {
						t.Fatalf("metadata %s=%q is not printable ASCII", k, v)
					}
				}
			}
		}

		// The memo (one for all inputs, so that they meet in its slots)
		// gives the same refusal, and gives it again for a decision of
		// the same shape, whose refusal built anew is equal.
		gotMD, gotErr := m.refusal(&d, name, nil)
		sameRefusal(t, gotErr, gotMD, st, md)
		d2 := sameShape(d)
		md2, err2 := m.refusal(&d2, name, nil)
		if err2 != gotErr || !sameMD(md2, gotMD) {
			t.Fatalf("%+v and %+v: not one refusal", d, d2)
		}
		st2, wantMD2 := refusal(d2, name, nil)
		sameRefusal(t, err2, md2, st2, wantMD2)
	})
}

// sameShape returns a decision other than d whose refusal must be d's:
// another RetryAfter with the same delay sent (in the same millisecond,
// or also never), another Remaining sent as the same, another ResetAfter.
func sameShape(d admit.Decision) admit.Decision {
	d2 := d
	d2.ResetAfter = d.ResetAfter ^ 12345
	switch ra := d.RetryAfter; {
	case ra > maxDelay:
		d2.RetryAfter = maxDelay + 1
		if ra == maxDelay+1 {
			d2.RetryAfter = admit.InfDuration
		}
	case ra > 0:
		for _, c := range []time.Duration{ceilMillis(ra), ra - 1, ra + 1} {
			if c != ra && c > 0 && c <= maxDelay && ceilMillis(c) == ceilMillis(ra) {
				d2.RetryAfter = c
				break
			}
		}
	case ra == 0:
		d2.RetryAfter = -1
	default:
		d2.RetryAfter = 0
	}
	switch {
	case d.Remaining < 0:
		d2.Remaining = 0
	case d.Remaining == 0:
		d2.Remaining = -1
	}
	return d2
}

func TestPartCache(t *testing.T) {
	var c partCache
	d := admit.Decision{Limit: admit.PerSecond(1)}
	for i := range maxCachedParts + 100 {
		name := "rule-" + strconv.Itoa(i)
		p := c.parts(d, name)
		if p.name != `"`+name+`"` || p.policy != p.name+";q=1;w=1" {
			t.Fatalf("parts of %s: %+v", name, p)
		}
	}
	if len(c.m) != maxCachedParts {
		t.Errorf("%d parts cached, want %d", len(c.m), maxCachedParts)
	}
	if p1, p2 := c.parts(d, "rule-1"), c.parts(d, "rule-1"); p1 != p2 {
		t.Error("cached parts not reused")
	}
	if (*partCache)(nil).parts(d, "x").name != `"x"` {
		t.Error("nil cache")
	}
}
