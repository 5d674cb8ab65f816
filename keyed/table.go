package keyed

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// A shard is one lock's worth of keys: an open-addressing hash table with
// linear probing and backward-shift deletion (no tombstones), whose keys
// live in one byte arena. A slot is a meta word and the algorithm's state:
//
//	meta bit 63     occupied
//	meta bit 62     referenced (the CLOCK bit of approximate LRU)
//	meta bits 32-61 30 bits of the key's hash (they give the home slot)
//	meta bits 0-31  the key's offset in the arena
//
// In the arena a key is its length as a uvarint followed by its bytes. The
// arena holds no pointers, so the garbage collector never scans the keys,
// and a key is stored once. Deleted keys leave dead bytes, reclaimed by
// compacting the arena when they are more than half of it.
type shard[S any] struct {
	mu    sync.Mutex
	slots []slot[S]
	n     int    // keys held
	limit int    // grow when n reaches it (load factor 4/5)
	arena []byte // keys
	dead  int    // bytes of deleted keys in arena
	hand  uint64 // CLOCK hand, for eviction at the cap (see evictOne)
	sweep uint64 // cursor of the incremental sweep of idle keys
	// scratch holds the state of a key not stored while a decision on it
	// is made: the step functions take a pointer, which would make a local
	// variable escape.
	scratch S
	// trackAt is the number of keys at which an insertion next reports
	// the limiter's keys to its Observer (see grew).
	trackAt int
	count   atomic.Int64
	_       [64]byte // keep shards on separate cache lines
}

type slot[S any] struct {
	meta uint64
	st   S
}

const (
	occupied   = 1 << 63
	referenced = 1 << 62
	hashShift  = 32
	hashMask   = 1<<30 - 1
	minSlots   = 8
)

func (s *slot[S]) ref() uint32 { return uint32(s.meta) }

// home returns the slot a hash belongs in, for a table of size n: the hash
// scaled to [0, n) (so n need not be a power of two).
func home(h uint32, n int) int { return int(uint64(h) * uint64(n) >> 30) }

// keyAt returns the key stored at offset off.
func (sh *shard[S]) keyAt(off uint32) []byte {
	l, k := binary.Uvarint(sh.arena[off:])
	start := int(off) + k
	return sh.arena[start : start+int(l)]
}

func (sh *shard[S]) keyEqual(off uint32, key string) bool {
	return string(sh.keyAt(off)) == key
}

// find returns the index of key's slot, or -1.
func (sh *shard[S]) find(h uint32, key string) int {
	n := len(sh.slots)
	if n == 0 {
		return -1
	}
	want := occupied | uint64(h)<<hashShift
	for i := home(h, n); ; {
		m := sh.slots[i].meta
		if m == 0 {
			return -1
		}
		if m&^(referenced|(1<<32-1)) == want && sh.keyEqual(uint32(m), key) {
			return i
		}
		if i++; i == n {
			i = 0
		}
	}
}

// insert adds key, which must not be present, with the zero state, and
// returns its slot. The table must have room (see reserve).
func (sh *shard[S]) insert(h uint32, key string) int {
	off := len(sh.arena)
	sh.arena = binary.AppendUvarint(sh.arena, uint64(len(key)))
	sh.arena = append(sh.arena, key...)
	i := sh.place(occupied | uint64(h)<<hashShift | uint64(off))
	sh.n++
	sh.count.Store(int64(sh.n))
	return i
}

// grew reports whether the number of keys is worth reporting to the
// Observer after an insertion: the shard evicted keys (ev), or its keys
// have grown by an eighth (and by one at least) since it last said so.
// So the count last reported lags the limiter's by an eighth of it and a
// key per shard at most, at the cost of a report per insertion while a
// shard holds fewer than 8 keys and O(log n) reports per shard after.
func (sh *shard[S]) grew(ev *evictions) bool {
	if sh.n < sh.trackAt && ev.idle+ev.pressure == 0 {
		return false
	}
	sh.trackAt = sh.n + max(sh.n/8, 1)
	return true
}

// place puts a meta word in the first free slot of its probe sequence.
func (sh *shard[S]) place(meta uint64) int {
	n := len(sh.slots)
	i := home(uint32(meta>>hashShift)&hashMask, n)
	for sh.slots[i].meta != 0 {
		if i++; i == n {
			i = 0
		}
	}
	sh.slots[i].meta = meta
	return i
}

// remove deletes the key in slot i, shifting back the keys that follow it
// in its cluster so that no tombstone is needed. It reports whether a slot
// after i moved into i (a scan at i must look at i again).
func (sh *shard[S]) remove(i int) (moved bool) {
	n := len(sh.slots)
	off := sh.slots[i].ref()
	l, k := binary.Uvarint(sh.arena[off:])
	sh.dead += k + int(l)
	var zero slot[S]
	j := i
	for {
		if j++; j == n {
			j = 0
		}
		m := sh.slots[j].meta
		if m == 0 {
			break
		}
		// The entry at j may move to i if its home is not in (i, j].
		hm := home(uint32(m>>hashShift)&hashMask, n)
		if (j > i && (hm <= i || hm > j)) || (j < i && hm <= i && hm > j) {
			sh.slots[i] = sh.slots[j]
			i = j
			moved = true
		}
	}
	sh.slots[i] = zero
	sh.n--
	sh.count.Store(int64(sh.n))
	if sh.n == 0 {
		sh.arena, sh.dead = sh.arena[:0], 0
	} else if sh.dead > 4096 && sh.dead > len(sh.arena)/2 {
		sh.compact()
	}
	return moved
}

// compact copies the live keys into a new arena.
func (sh *shard[S]) compact() {
	arena := make([]byte, 0, len(sh.arena)-sh.dead+sh.dead/8)
	for i := range sh.slots {
		m := sh.slots[i].meta
		if m == 0 {
			continue
		}
		key := sh.keyAt(uint32(m))
		off := len(arena)
		arena = binary.AppendUvarint(arena, uint64(len(key)))
		arena = append(arena, key...)
		sh.slots[i].meta = m&^(1<<32-1) | uint64(off)
	}
	sh.arena, sh.dead = arena, 0
}

// resize rehashes the table into size slots.
func (sh *shard[S]) resize(size int) {
	old := sh.slots
	sh.slots = make([]slot[S], size)
	sh.limit = size * 4 / 5
	for i := range old {
		if m := old[i].meta; m != 0 {
			j := sh.place(m)
			sh.slots[j].st = old[i].st
		}
	}
}

// arenaFull reports whether the arena cannot take a key of length l: its
// offsets are 32 bits.
func (sh *shard[S]) arenaFull(l int) bool {
	return len(sh.arena)+l+binary.MaxVarintLen64 > 1<<32-1
}
