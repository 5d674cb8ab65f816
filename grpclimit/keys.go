package grpclimit

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// Key says where the key of a call comes from: a metadata entry
// (MetadataKey), the client's address (PeerKey, PeerPrefixKey), a function
// (FuncKey), or the first of several that finds one (FirstKey). Keys of
// different sources never collide: a metadata key is "md:" + name + ":" +
// value, a peer key "ip:" + address, so a client cannot pass for an address
// by sending it as an API key.
//
// The zero Key is invalid: NewServer refuses it with an error wrapping
// admit.ErrInvalidConfig that says "grpclimit: invalid key". A Key
// is an immutable value, safe for concurrent use.
type Key struct {
	kind   keyKind
	name   string // metadata name; prefix "md:name:"
	prefix string
	v4, v6 int
	fn     func(ctx context.Context, fullMethod string) (string, bool)
	first  []Key
	err    error
}

type keyKind uint8

const (
	keyInvalid keyKind = iota
	keyMetadata
	keyPeer
	keyFunc
	keyFirst
)

// MetadataKey returns the Key that reads the incoming metadata entry name
// (case-insensitive, as gRPC's metadata is), such as "x-api-key" or
// "authorization". A binary entry (a name ending in "-bin") is keyed by
// its decoded bytes. An entry sent more than once is keyed by its first
// value, as most authentication code reads it; an empty value counts as
// missing. The key is "md:" + name + ":" + value.
//
// A name holding characters gRPC does not allow in metadata names (only
// 0-9 a-z - _ .) makes the Key invalid.
func MetadataKey(name string) Key {
	name = strings.ToLower(name)
	if name == "" {
		return Key{err: badKey("MetadataKey with an empty name")}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || c == '-' || c == '_' || c == '.') {
			return Key{err: badKey("MetadataKey(%q): want only 0-9 a-z - _ . in metadata names", name)}
		}
	}
	return Key{kind: keyMetadata, name: name, prefix: "md:" + name + ":"}
}

// PeerKey returns the Key of the client's IP address: an IPv4 address
// whole, an IPv6 address by its /64 prefix (one host or one subscriber's
// network usually holds a whole /64, so finer keys would let it multiply
// its limit). It is PeerPrefixKey(32, 64). An IPv4-mapped IPv6 address
// counts as IPv4. A peer without an IP address (a Unix socket, an
// in-process connection) has no key.
//
// Behind a proxy or load balancer the peer is the proxy: key by a
// metadata entry the proxy sets instead, or by the authenticated caller.
func PeerKey() Key { return PeerPrefixKey(32, 64) }

// PeerPrefixKey returns the Key of the client's IP address masked to its
// first v4 bits (IPv4) or v6 bits (IPv6): the key is "ip:" + the address
// for whole addresses, "ip:" + the prefix (such as "ip:2001:db8:1:2::/64")
// otherwise. v4 must be in [1, 32] and v6 in [1, 128].
func PeerPrefixKey(v4, v6 int) Key {
	if v4 < 1 || v4 > 32 || v6 < 1 || v6 > 128 {
		return Key{err: badKey("PeerPrefixKey(%d, %d): want IPv4 bits in [1, 32] and IPv6 bits in [1, 128]", v4, v6)}
	}
	return Key{kind: keyPeer, v4: v4, v6: v6}
}

// FuncKey returns the Key found by f, for keys from the call's context (an
// authenticated user or tenant set by an earlier interceptor) or its
// method. f reports false when the call has none. Its keys are used as
// they are, so give them a prefix of their own if they are combined with
// other Keys in FirstKey.
func FuncKey(f func(ctx context.Context, fullMethod string) (key string, ok bool)) Key {
	if f == nil {
		return Key{err: badKey("FuncKey(nil)")}
	}
	return Key{kind: keyFunc, fn: f}
}

// FirstKey returns the Key found by the first of keys that finds one: for
// example FirstKey(MetadataKey("x-api-key"), PeerKey()) keys callers with
// an API key by it and the others by their address. It is invalid without
// keys or if one of them is.
func FirstKey(keys ...Key) Key {
	if len(keys) == 0 {
		return Key{err: badKey("FirstKey()")}
	}
	for _, k := range keys {
		if err := k.Err(); err != nil {
			return Key{err: err}
		}
	}
	return Key{kind: keyFirst, first: append([]Key(nil), keys...)}
}

// Err reports why k is invalid (an error wrapping admit.ErrInvalidConfig
// that says "grpclimit: invalid key"), or nil if it is valid.
func (k Key) Err() error {
	if k.err != nil {
		return k.err
	}
	if k.kind == keyInvalid {
		return badKey("the zero Key")
	}
	return nil
}

// Of returns the key of a call to fullMethod with context ctx, and false
// if the call has none (or k is invalid). Its keys are not limited in
// length: a Server hashes long ones (see Config.MaxKeyLength).
func (k Key) Of(ctx context.Context, fullMethod string) (string, bool) {
	switch k.kind {
	case keyMetadata:
		vs := metadata.ValueFromIncomingContext(ctx, k.name)
		if len(vs) == 0 || vs[0] == "" {
			return "", false
		}
		return k.prefix + vs[0], true
	case keyPeer:
		return peerKey(ctx, k.v4, k.v6)
	case keyFunc:
		return k.fn(ctx, fullMethod)
	case keyFirst:
		for _, f := range k.first {
			if key, ok := f.Of(ctx, fullMethod); ok {
				return key, true
			}
		}
	}
	return "", false
}

// peerKey returns "ip:" + the peer's address masked to v4 or v6 bits.
func peerKey(ctx context.Context, v4, v6 int) (string, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "", false
	}
	var ip netip.Addr
	switch a := p.Addr.(type) {
	case *net.TCPAddr:
		ip = a.AddrPort().Addr()
	case *net.UDPAddr:
		ip = a.AddrPort().Addr()
	default:
		ap, err := netip.ParseAddrPort(p.Addr.String())
		if err != nil {
			return "", false
		}
		ip = ap.Addr()
	}
	return ipKey(ip, v4, v6)
}

// ipKey returns "ip:" + ip masked to v4 or v6 bits, without its zone.
func ipKey(ip netip.Addr, v4, v6 int) (string, bool) {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return "", false
	}
	bits := v6
	if ip.Is4() {
		bits = v4
	}
	if bits >= ip.BitLen() {
		return "ip:" + ip.String(), true
	}
	pfx, err := ip.Prefix(bits)
	if err != nil {
		return "", false
	}
	return "ip:" + pfx.String(), true
}
