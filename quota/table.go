package quota

import (
	"hash/maphash"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// table holds the keys' states, sharded by a seeded hash of the key so
// that goroutines deciding on different keys rarely share a lock. A shard
// is a map from key to index in a slice of slots: the slice lets the sweep
// walk the keys incrementally, from a cursor, which a Go map cannot do.
//
// Only states with Used > 0 are held. The number of keys held is capped
// exactly, by one counter for the whole table, touched only when a key is
// added or removed.
type table struct {
	seed   maphash.Seed
	shards []shard
	mask   uint64
	count  atomic.Int64 // keys held
	max    int64        // cap on count
}

type shard struct {
	mu    sync.Mutex
	index map[string]int32 // key -> position in slots
	slots []slot
	sweep int // cursor of the incremental sweep
	// minEnd is at most the End of every state held: no key of the shard
	// has expired in a period starting before it. Insertions lower it;
	// a full sweep sets it exactly.
	minEnd atomic.Int64
	_      [64]byte // keep shards on separate cache lines
}

type slot struct {
	key string
	st  state
}

func newTable(maxKeys int) *table {
	n := pow2(min(16*runtime.GOMAXPROCS(0), 1<<10, max(maxKeys/8, 1)))
	t := &table{seed: maphash.MakeSeed(), shards: make([]shard, n), mask: uint64(n - 1), max: int64(maxKeys)}
	for i := range t.shards {
		t.shards[i].minEnd.Store(math.MaxInt64)
	}
	return t
}

// pow2 returns the least power of two >= n (n >= 1).
func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

func (t *table) shard(key string) *shard {
	return &t.shards[maphash.String(t.seed, key)&t.mask]
}

// find returns the position of key in sh, or -1. It requires sh.mu.
func (sh *shard) find(key string) int {
	if i, ok := sh.index[key]; ok {
		return int(i)
	}
	return -1
}

// add stores a new key with state st, if the table's cap allows; it
// reports whether it did. It requires sh.mu.
func (t *table) add(sh *shard, key string, st state) bool {
	if t.count.Add(1) > t.max {
		t.count.Add(-1)
		return false
	}
	if sh.index == nil {
		sh.index = make(map[string]int32)
	}
	// Clone the key: it may be a slice of a larger buffer (a request's
	// header), which the table must not keep alive.
	key = strings.Clone(key)
	sh.index[key] = int32(len(sh.slots))
	sh.slots = append(sh.slots, slot{key: key, st: st})
	if st.End < sh.minEnd.Load() {
		sh.minEnd.Store(st.End)
	}
	return true
}

// remove forgets the key at position i, moving the last slot into its
// place. It requires sh.mu.
func (t *table) remove(sh *shard, i int) {
	last := len(sh.slots) - 1
	delete(sh.index, sh.slots[i].key)
	if i != last {
		sh.slots[i] = sh.slots[last]
		sh.index[sh.slots[i].key] = int32(i)
	}
	sh.slots[last] = slot{}
	sh.slots = sh.slots[:last]
	t.count.Add(-1)
}

// sweepSome looks at up to k slots from the sweep cursor and forgets the
// keys that have expired in period w. It returns how many it forgot. It
// requires sh.mu.
func (t *table) sweepSome(sh *shard, w window, k int) int {
	evicted := 0
	for ; k > 0 && len(sh.slots) > 0; k-- {
		if sh.sweep >= len(sh.slots) {
			sh.sweep = 0
		}
		if expired(sh.slots[sh.sweep].st, w) {
			t.remove(sh, sh.sweep) // the slot moved in is looked at next
			evicted++
			continue
		}
		sh.sweep++
	}
	return evicted
}

// sweepAll forgets every key of sh that has expired in period w, sets
// sh.minEnd exactly, and gives memory back when most of the shard is
// gone. It returns how many keys it forgot. It requires sh.mu.
func (t *table) sweepAll(sh *shard, w window) int {
	evicted := 0
	minEnd := int64(math.MaxInt64)
	for i := 0; i < len(sh.slots); {
		if st := sh.slots[i].st; expired(st, w) {
			t.remove(sh, i)
			evicted++
		} else {
			minEnd = min(minEnd, st.End)
			i++
		}
	}
	sh.minEnd.Store(minEnd)
	sh.sweep = 0
	// A Go map never shrinks: rebuild the shard when it is mostly empty.
	if c := cap(sh.slots); c >= 1024 && len(sh.slots) < c/4 {
		slots := make([]slot, len(sh.slots), 2*len(sh.slots))
		copy(slots, sh.slots)
		index := make(map[string]int32, len(slots))
		for i, s := range slots {
			index[s.key] = int32(i)
		}
		sh.slots, sh.index = slots, index
	}
	return evicted
}

// reclaim forgets every key of the table that has expired in period w,
// locking one shard at a time (the caller holds no shard's lock), and
// skipping the shards whose minEnd shows they have none. It returns how
// many keys it forgot.
func (t *table) reclaim(w window) int {
	evicted := 0
	for i := range t.shards {
		sh := &t.shards[i]
		if sh.minEnd.Load() > w.Start {
			continue
		}
		sh.mu.Lock()
		evicted += t.sweepAll(sh, w)
		sh.mu.Unlock()
	}
	return evicted
}
