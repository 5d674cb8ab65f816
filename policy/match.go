package policy

// Matching a descriptor to its rule, and the key it is limited under.

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
)

// maxStoredKey is the longest key the engine gives its limiters as it is
// (keyed's and redisstore's default maximum); a longer one is stored by
// its digest (see shortenKey).
const maxStoredKey = 4096

// shortenKey replaces the key b[off:] by its digest if it is longer than
// maxStoredKey, so that any descriptor the APIs take (every value up to
// their maximum length) has a key the limiters take.
func shortenKey(b []byte, off int) []byte {
	if len(b)-off <= maxStoredKey {
		return b
	}
	return hashKey(b, off)
}

// hashKey replaces b[off:] by '#' and the hexadecimal SHA-256 of it. A
// key of values starts with a digit (a length) and a digest with '#', so
// the two never meet, and SHA-256 keeps digests apart.
func hashKey(b []byte, off int) []byte {
	sum := sha256.Sum256(b[off:])
	b = append(b[:off], '#')
	return hex.AppendEncode(b, sum[:])
}

// appendValue appends s to a key, length-prefixed ("5:hello"), so that
// keys made of several values are injective.
func appendValue(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// lookup returns the rule matching a descriptor, as envoyproxy/ratelimit
// walks its tree: at each level the exact value, then the first prefix
// that matches, then the key alone; a descriptor of N entries matches
// only a rule of N entries.
func (cd *cdomain) lookup(es []Entry) *crule {
	n := cd.root
	last := len(es) - 1
	for i := range es {
		en := &es[i]
		next := n.exact[entryKey{en.Key, en.Value}]
		if next == nil {
			for j := range n.prefix {
				p := &n.prefix[j]
				if p.key == en.Key && strings.HasPrefix(en.Value, p.prefix) {
					next = p.node
					break
				}
			}
		}
		if next == nil {
			next = n.any[en.Key]
		}
		switch {
		case next == nil:
			return nil
		case i == last:
			return next.rule
		case !next.children:
			return nil
		}
		n = next
	}
	return nil
}

// exempted reports whether a descriptor has one of the rule's exempt
// values.
func (r *crule) exempted(es []Entry) bool {
	for i := range r.exempt {
		x := &r.exempt[i]
		v := es[x.idx].Value
		if _, ok := x.values[v]; ok {
			return true
		}
		if len(x.prefixes) > 0 && strings.ContainsAny(v, ".:") {
			if a, err := netip.ParseAddr(v); err == nil {
				a = a.Unmap()
				for _, p := range x.prefixes {
					if p.Contains(a) {
						return true
					}
				}
			}
		}
	}
	return false
}

// pick returns the tier of value v.
func (t *ctable) pick(v string) *cset {
	if s := t.assign[v]; s != nil {
		return s
	}
	return t.def
}
