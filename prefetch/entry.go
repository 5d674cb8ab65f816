package prefetch

import (
	"hash/maphash"
	"strings"
	"sync"

	"github.com/admit-go/admit/internal/algo"
)

// hold is capacity one block holds: for the GCRA family the slots of
// gcra; for the windows left events, spendable from start until end
// (exclusive), the window's end on this instance's clock.
type hold struct {
	gcra       algo.Block
	left       int64
	start, end int64
	ok         bool // the hold holds a block
}

// entry is a key's local state.
type entry struct {
	mu       sync.Mutex
	cur, nxt hold
	fetching bool          // a fetch is in flight
	done     chan struct{} // closed when it lands
	denied   int64         // a denial of one event holds until this instant
	exact    int64         // the instant the Store's own denial ended (early denials after it)
	early    int64         // the early denials counted since exact
	// The key's arrivals since instant since, for sizing its next block.
	seen  int64
	since int64
	used  int64 // the latest instant the key was asked about
	// latest is the latest admission from a block (its events, and
	// whether it was from cur), the one Refund can give back.
	latest    int64
	latestCur bool
	latestOK  bool
}

// table holds the entries, in shards.
type table struct {
	seed   maphash.Seed
	shards [64]struct {
		mu   sync.Mutex
		keys map[string]*entry
	}
	perShard int
}

func newTable(maxKeys int) *table {
	t := &table{seed: maphash.MakeSeed(), perShard: max(1, (maxKeys+63)/64)}
	for i := range t.shards {
		t.shards[i].keys = make(map[string]*entry)
	}
	return t
}

// get returns key's entry, or nil.
func (t *table) get(key string) *entry {
	sh := &t.shards[maphash.String(t.seed, key)&63]
	sh.mu.Lock()
	e := sh.keys[key]
	sh.mu.Unlock()
	return e
}

// add stores a new entry for key, unless one was added meanwhile,
// evicting the least recently used of a few keys if the shard is full.
func (t *table) add(key string, now int64) {
	sh := &t.shards[maphash.String(t.seed, key)&63]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.keys[key] != nil {
		return
	}
	if len(sh.keys) >= t.perShard {
		// Evict the least recently used of a few (map order is random).
		var victim string
		oldest := int64(0)
		i := 0
		for k, v := range sh.keys {
			v.mu.Lock()
			used, busy := v.used, v.fetching
			v.mu.Unlock()
			if !busy && (victim == "" || used < oldest) {
				victim, oldest = k, used
			}
			if i++; i == 8 {
				break
			}
		}
		if victim != "" {
			delete(sh.keys, victim)
		}
	}
	// A copy: the caller's key may share a larger string, or a buffer
	// it reuses (policy's engine passes such keys).
	sh.keys[strings.Clone(key)] = &entry{seen: 1, since: now, used: now}
}

// each calls f with every entry (for Close).
func (t *table) each(f func(key string, e *entry)) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for k, e := range sh.keys {
			f(k, e)
		}
		sh.mu.Unlock()
	}
}
