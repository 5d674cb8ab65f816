package promlimit

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// other is the label value of the series that count what has no series of
// its own: label values beyond the cap (Config.MaxSeries) or too long.
const other = "other"

// maxLabelLength is the longest label value, in bytes, that gets a series
// of its own. A longer one (a key or a rule built from request data) is
// counted under "other", so that the table never holds more than
// maxSeries × (its labels) × maxLabelLength bytes of label values.
const maxLabelLength = 256

// seriesKey is the key of a table: the label values of a set of series.
// Its hierarchical labels (limiter, then rule or op, then key) are folded
// into "other" from the most specific one when there is no room for a
// series of its own; its other labels (kind, outcome) are kept.
type seriesKey[K any] interface {
	comparable
	// fold returns the key with its hierarchical labels from the level'th
	// on (counting from 0) replaced by "other": fold(0) has every one of
	// them "other".
	fold(level int) K
	// group returns fold(level) with the labels that are not hierarchical
	// zeroed: the set of series that share the first level labels.
	group(level int) K
	// fits reports whether every label value is short enough for a
	// series of its own.
	fits() bool
	// clone returns the key with its strings copied, so that a table
	// never keeps the memory its callers' strings point into.
	clone() K
	// quick returns a digest of the key that costs a few instructions
	// (the lengths and a few bytes of the strings), which the table
	// hashes to choose a slot of table.recent.
	quick() uint64
}

// recentSlots is the number of slots of table.recent.
const (
	recentBits  = 8
	recentSlots = 1 << recentBits
)

// entry is a key and its metrics. A table's maps point to entries, which
// never change: an entry found under a key other than its own (a folded
// key) is the entry of that folded key.
type entry[K any, V any] struct {
	k K
	v V
}

// table maps label values to the metrics resolved for them (the result of
// WithLabelValues), so that the hot path makes no call of WithLabelValues:
// a lookup is a few atomic loads and key comparisons, or a map read,
// without a lock or an allocation.
//
// It holds at most max keys with a series of their own ("own" keys); a key
// beyond that, or one whose values are too long, is counted under its
// folded form: the most specific fold whose group has an own key, or
// fold(0). So a table holds at most max own keys plus, for each group of
// an own key and each value of the other labels, one folded key.
//
// Reads go first to recent, a two-way set-associative cache of the entries
// looked up lately: a cheap hash of the key chooses a pair of slots, whose
// entries are checked by comparing the keys (hashing the strings of a key
// for a map costs more than comparing them with the entry's). An entry
// found under a folded key is not put there. Then reads go to an immutable
// snapshot. Writes go, under mu, to a dirty copy, which becomes the
// snapshot once the lookups that missed the snapshot amount to an eighth
// of its size (so that copying a snapshot costs O(1) per miss, amortized),
// as sync.Map does.
type table[K seriesKey[K], V any] struct {
	recent [recentSlots]atomic.Pointer[entry[K, V]]
	snap   atomic.Pointer[snapshot[K, V]]
	levels int             // the number of hierarchical labels of K
	max    int             // the most own keys
	create func(k K) V     // resolves the metrics of a new key; called under mu
	mu     sync.Mutex      // guards dirty and misses
	dirty  *snapshot[K, V] // nil: the snapshot is current
	misses int
}

// snapshot is a table's content. Once published (table.snap) it never
// changes.
type snapshot[K seriesKey[K], V any] struct {
	m     map[K]*entry[K, V]
	known map[K]struct{} // the groups (group(1..levels-1)) of the own keys
	own   int            // the keys of m with a series of their own
	// full is own >= max: no own key will be added, so m holds every own
	// key and known is final, and a missing key can be folded from the
	// snapshot alone.
	full bool
}

func newTable[K seriesKey[K], V any](levels, max int, create func(K) V) *table[K, V] {
	t := &table[K, V]{levels: levels, max: max, create: create}
	t.snap.Store(&snapshot[K, V]{m: map[K]*entry[K, V]{}, known: map[K]struct{}{}})
	return t
}

// get returns the metrics of k, creating them on first use.
func (t *table[K, V]) get(k K) V {
	q := k.quick()
	i := ((q ^ q>>32) * 0x9E3779B97F4A7C15) >> (64 - recentBits)
	first, second := &t.recent[i], &t.recent[i^1]
	e := first.Load()
	if e != nil && e.k == k {
		return e.v
	}
	if e2 := second.Load(); e2 != nil && e2.k == k {
		return e2.v
	}
	found := t.lookup(k)
	if found.k == k {
		// Most recent first: two keys of one pair of slots both stay.
		if e != nil {
			second.Store(e)
		}
		first.Store(found)
	}
	return found.v
}

// lookup returns the entry k is counted under, creating it on first use.
func (t *table[K, V]) lookup(k K) *entry[K, V] {
	s := t.snap.Load()
	fits := k.fits()
	if fits { // a key too long is never in the map, so do not hash it
		if e, ok := s.m[k]; ok {
			return e
		}
	}
	if s.full || !fits {
		if e, ok := s.m[s.fold(k, t.levels)]; ok {
			return e
		}
	}
	return t.slow(k)
}

// fold returns the key k is counted under when it has no series of its
// own: its most specific fold whose group has an own key, or fold(0).
func (s *snapshot[K, V]) fold(k K, levels int) K {
	for l := levels - 1; l > 0; l-- {
		if g := k.group(l); g.fits() { // else no own key has its labels
			if _, ok := s.known[g]; ok {
				return k.fold(l)
			}
		}
	}
	return k.fold(0)
}

func (t *table[K, V]) slow(k K) *entry[K, V] {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.dirty
	if d == nil {
		cur := t.snap.Load()
		d = &snapshot[K, V]{m: maps.Clone(cur.m), known: maps.Clone(cur.known), own: cur.own, full: cur.full}
		t.dirty = d
	}
	fits := k.fits()
	var e *entry[K, V]
	var ok bool
	if fits {
		e, ok = d.m[k]
	}
	switch {
	case ok:
	case fits && d.own < t.max:
		k = k.clone()
		e = &entry[K, V]{k, t.create(k)}
		d.m[k] = e
		d.own++
		d.full = d.own >= t.max
		for l := 1; l < t.levels; l++ {
			d.known[k.group(l)] = struct{}{}
		}
	default:
		f := d.fold(k, t.levels)
		if e, ok = d.m[f]; !ok {
			f = f.clone()
			e = &entry[K, V]{f, t.create(f)}
			d.m[f] = e
		}
	}
	t.misses++
	if t.misses >= 1+len(d.m)/8 {
		t.snap.Store(d)
		t.dirty = nil
		t.misses = 0
	}
	return e
}

// size returns the number of keys of the table and how many of them have
// a series of their own.
func (t *table[K, V]) size() (keys, own int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.dirty
	if s == nil {
		s = t.snap.Load()
	}
	return len(s.m), s.own
}

// fits reports whether s is short enough to be a label value of its own.
func fits(s string) bool { return len(s) <= maxLabelLength }

// quick digests the length of s and a few of its bytes (the first, the
// middle one and the last four, where names that differ usually do), for
// seriesKey.quick.
func quick(s string) uint64 {
	n := len(s)
	if n == 0 {
		return 0
	}
	tail := uint64(0)
	for i := max(n-4, 0); i < n; i++ {
		tail = tail<<8 | uint64(s[i])
	}
	return uint64(n) ^ uint64(s[0])<<8 ^ uint64(s[n/2])<<16 ^ tail<<24
}

// mix combines the digests of a key's labels (see quick) into one.
func mix(a, b, c uint64) uint64 {
	return a*0xC2B2AE3D27D4EB4F ^ b*0x165667B19E3779F9 ^ c*0x9E3779B97F4A7C15
}

// labelValue returns s as a valid label value: Prometheus requires UTF-8,
// and a limiter's name, a rule or a key may be any bytes.
func labelValue(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
