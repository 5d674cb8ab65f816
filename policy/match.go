package policy

// Matching a request's descriptors to their rules, and laying out the calls of their limits with their keys (plan).

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"unsafe"

	"github.com/admit-go/admit"
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

// plan matches the descriptors of req in dom and lays out the calls of
// the limits that apply, with their keys, in sc.calls (none: out decided,
// all allowed). Its error is that of an inline limit it could not build.
func (e *Engine) plan(dom *cdomain, req *Request, out *Result, sc *scratch) error {
	nd := len(req.Descriptors)
	if cap(sc.rules) < nd {
		sc.rules = make([]*crule, nd)
	} else {
		sc.rules = sc.rules[:nd]
	}
	// Match the descriptors; inline limits need no match.
	for i := range req.Descriptors {
		d := &req.Descriptors[i]
		st := &out.Statuses[i]
		if d.Limit != nil {
			l, err := dom.ov.get(*d.Limit)
			if err != nil {
				out.Decision = refusal
				return err
			}
			st.Override, st.Rule, st.Shadow = true, l.label, dom.shadow
			koff := len(sc.buf)
			for _, en := range d.Entries {
				sc.buf = appendValue(appendValue(sc.buf, en.Key), en.Value)
			}
			sc.calls = append(sc.calls, call{l: l, n: hitsOf(req, d), desc: i, shadow: dom.shadow, koff: koff, kend: len(sc.buf)})
			continue
		}
		r := dom.lookup(d.Entries)
		sc.rules[i] = r
		if r != nil {
			st.Rule, st.Shadow = r.name, r.shadow || dom.shadow
		}
	}
	if dom.replaces {
		sc.dropReplaced(out)
	}
	sc.ruleCalls(dom, req, out)
	if len(sc.calls) == 0 {
		out.Decision = allowAll
		return nil
	}
	e.setKeys(sc)
	return nil
}

// dropReplaced drops the matched rules that another matched rule replaces
// (see Rule.Replaces), marking their descriptors' statuses.
func (sc *scratch) dropReplaced(out *Result) {
	for _, r := range sc.rules {
		if r != nil {
			sc.names = append(sc.names, r.replaces...)
		}
	}
	for i, r := range sc.rules {
		if r != nil && contains(sc.names, r.alias) {
			sc.rules[i] = nil
			out.Statuses[i].Replaced = true
		}
	}
}

// ruleCalls lays out the calls of the matched rules (sc.rules) for their
// descriptors of req: one per layer of a rule's limits (its own or its
// tier's), under the rule's key; none for an exempt descriptor or an
// unlimited rule.
func (sc *scratch) ruleCalls(dom *cdomain, req *Request, out *Result) {
	for i, r := range sc.rules {
		if r == nil {
			continue
		}
		d := &req.Descriptors[i]
		st := &out.Statuses[i]
		if r.exempted(d.Entries) {
			st.Exempt = true
			continue
		}
		set := r.own
		if r.table != nil {
			set = r.table.pick(d.Entries[r.tierIdx].Value)
			st.Tier = set.tier
		}
		if set.unlimited {
			st.Unlimited, st.Decision.Limit, st.Decision.Remaining = true, admit.Unlimited, math.MaxInt64
			continue
		}
		if len(set.layers) == 0 {
			continue
		}
		c := call{n: hitsOf(req, d), desc: i, shadow: r.shadow || dom.shadow, koff: -1, key: r.key}
		if !r.constKey {
			c.koff = len(sc.buf)
			for j := range r.depth {
				sc.buf = appendValue(sc.buf, d.Entries[j].Value)
			}
			sc.buf = shortenKey(sc.buf, c.koff)
			c.kend = len(sc.buf)
		}
		for _, l := range set.layers {
			c.l = l
			if l.lanes {
				sc.laneCall(c, r, d)
				continue
			}
			sc.calls = append(sc.calls, c)
		}
	}
}

// laneCall lays out call c of a layer of lanes (c.l) for descriptor d of
// rule r: its key is the lane, then the budget's key (see splitLane).
func (sc *scratch) laneCall(c call, r *crule, d *Descriptor) {
	l := c.l
	c.koff = len(sc.buf)
	sc.buf = appendValue(sc.buf, d.Entries[l.lane].Value)
	if !l.laneOnly {
		boff := len(sc.buf)
		for j := range r.depth {
			if j != l.lane {
				sc.buf = appendValue(sc.buf, d.Entries[j].Value)
			}
		}
		if len(sc.buf)-c.koff > maxStoredKey {
			sc.buf = hashKey(sc.buf, boff)
		}
	}
	c.kend = len(sc.buf)
	sc.calls = append(sc.calls, c)
}

// setKeys sets the keys of the calls laid out in sc from their offsets in
// its buffer, now that the buffer no longer moves.
func (e *Engine) setKeys(sc *scratch) {
	for j := range sc.calls {
		c := &sc.calls[j]
		if c.koff < 0 {
			continue
		}
		switch {
		case c.kend == c.koff:
			c.key = ""
		case !c.l.shortKey && (c.l.slots != nil || c.l.pf != nil || e.o.obs != nil):
			// Stored by the limiter (slots, prefetch's keys), or seen by
			// the observer.
			c.key = string(sc.buf[c.koff:c.kend])
		default:
			// The in-memory limiters copy the keys they keep; the
			// buffer outlives the check.
			c.key = unsafe.String(&sc.buf[c.koff], c.kend-c.koff)
		}
	}
}
