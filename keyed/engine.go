package keyed

import (
	"hash/maphash"
	"math"

	"github.com/admit-go/admit/internal/algo"
)

// engine is a table of keys for one algorithm's state type.
type engine interface {
	// decide runs the step function for key at now (its delay form if
	// maxDelay > 0, which the ops must have) and reports how many keys it
	// evicted, idle and under pressure. ok is false if the key could not
	// be stored (its shard's arena is full).
	decide(now int64, key string, p *algo.Params, n, maxDelay int64) (r algo.Result, ev evictions, ok bool)
	// refund gives back n events admitted for key at now, if the key is
	// stored (a key that is not is full: there is nothing to give back).
	refund(now int64, key string, p *algo.Params, n int64)
	reset(key string) bool
	len() int
}

// evictions are the keys a decision evicted, idle and under pressure, and
// whether the number of keys held is worth reporting (see shard.grew).
type evictions struct {
	idle, pressure int
	grew           bool
}

// handStep is the stride of the CLOCK hand: a prime, larger than any table
// (offsets are 31 bits), so that it is coprime with the table's size and
// the hand visits every slot once per revolution.
const handStep = 2654435761

// idleScan is how many slots evictOne looks at for an idle key before it
// evicts one in use.
const idleScan = 32

// ops are an algorithm's functions on its per-key state.
type ops[S any] struct {
	// step decides and updates *s.
	step func(s *S, p *algo.Params, now, n int64) algo.Result
	// fullAt returns the instant from which the state is back at full
	// capacity, so that forgetting it changes nothing.
	fullAt func(s *S) int64
	// undo gives back n events admitted at now, updating *s.
	undo func(s *S, p *algo.Params, now, n int64)
	// delay is step admitting within maxDelay ns (algo.GCRADelay); nil
	// for the algorithms that cannot hold a slot ahead.
	delay func(s *S, p *algo.Params, now, n, maxDelay int64) algo.Result
}

// table is a sharded set of keys with their states.
type table[S any] struct {
	seed     maphash.Seed
	shards   []shard[S]
	mask     uint64
	perShard int   // cap on keys per shard
	grace    int64 // ns a key stays after it is full again
	ops      ops[S]
}

func newTable[S any](o ops[S], shards, maxKeys int, grace int64) *table[S] {
	t := &table[S]{seed: maphash.MakeSeed(), shards: make([]shard[S], shards), mask: uint64(shards - 1), ops: o, grace: grace}
	t.perShard = (maxKeys + shards - 1) / shards
	return t
}

func (t *table[S]) locate(key string) (*shard[S], uint32) {
	h := maphash.String(t.seed, key)
	return &t.shards[h&t.mask], uint32(h >> 34) // 30 bits (hashMask)
}

func (t *table[S]) decide(now int64, key string, p *algo.Params, n, maxDelay int64) (algo.Result, evictions, bool) {
	sh, h := t.locate(key)
	var ev evictions
	sh.mu.Lock()
	i := sh.find(h, key)
	if i >= 0 {
		s := &sh.slots[i]
		s.meta |= referenced
		var r algo.Result
		if maxDelay > 0 {
			r = t.ops.delay(&s.st, p, now, n, maxDelay)
		} else {
			r = t.ops.step(&s.st, p, now, n)
		}
		sh.mu.Unlock()
		return r, ev, true
	}
	// A new key starts full. If the decision leaves it full (a peek, a
	// denial, an unlimited limit), there is nothing to store. (The state is
	// decided in sh.scratch, which is zero between uses, so that deciding
	// on a new key does not allocate.)
	var zero S
	var r algo.Result
	if maxDelay > 0 {
		r = t.ops.delay(&sh.scratch, p, now, n, maxDelay)
	} else {
		r = t.ops.step(&sh.scratch, p, now, n)
	}
	full := t.ops.fullAt(&sh.scratch) <= now
	st := sh.scratch
	sh.scratch = zero
	if full {
		sh.mu.Unlock()
		return r, ev, true
	}
	if sh.arenaFull(len(key)) {
		sh.mu.Unlock()
		return r, ev, false
	}
	t.makeRoom(sh, now, &ev)
	i = sh.insert(h, key)
	sh.slots[i].st = st
	t.sweepSome(sh, now, 2, &ev)
	ev.grew = sh.grew(&ev)
	sh.mu.Unlock()
	return r, ev, true
}

// makeRoom makes sure sh can take one more key: it evicts a key if sh holds
// its maximum, and grows the table if it is too full (after forgetting
// idle keys, if that frees enough).
func (t *table[S]) makeRoom(sh *shard[S], now int64, ev *evictions) {
	if sh.n >= t.perShard {
		t.evictOne(sh, now, ev)
	}
	if sh.n < sh.limit {
		return
	}
	size := len(sh.slots)
	if size >= 64 {
		before := sh.n
		t.sweepSome(sh, now, size, ev)
		if before-sh.n >= size/10 {
			return
		}
	}
	next := max(size+size/2, minSlots)
	// Never more slots than the cap needs.
	if most := t.perShard*5/4 + 1; next > most {
		next = max(most, size+1)
	}
	sh.resize(next)
}

// sweepSome looks at up to count slots from the sweep cursor and forgets
// the keys that are back at full capacity. Like the CLOCK hand, the cursor
// visits the slots in a scattered order (see evictOne). It requires sh.mu.
func (t *table[S]) sweepSome(sh *shard[S], now int64, count int, ev *evictions) {
	size := uint64(len(sh.slots))
	if size == 0 {
		return
	}
	step, i := handStep%size, sh.sweep%size
	for range count {
		s := &sh.slots[i]
		if s.meta != 0 && t.idle(&s.st, now) {
			ev.idle++
			if sh.remove(int(i)) {
				continue // look at the key that moved in
			}
		}
		if i += step; i >= size {
			i -= size
		}
	}
	sh.sweep = i
}

// evictOne forgets one key of a full shard: an idle key among the next
// idleScan slots of the sweep if there is one, else one chosen by the CLOCK
// algorithm (approximate LRU): the hand visits every slot once per
// revolution, a key referenced since the hand last passed it has its bit
// cleared and is spared, and the first idle or unreferenced key is
// evicted. So a key used at least once per revolution is never evicted, and
// since new keys start unreferenced, a flood of keys seen once evicts its
// own kind. The hand visits the slots in a scattered order (each slot step
// after the last, mod size; step a prime larger than any table), not one
// after another:
// evicting in order empties a band behind the hand while insertions fill
// the rest, and linear probing's clusters there grow until each deletion
// scans thousands of slots. It requires sh.mu and sh.n > 0.
func (t *table[S]) evictOne(sh *shard[S], now int64, ev *evictions) {
	before := ev.idle
	if t.sweepSome(sh, now, idleScan, ev); ev.idle > before {
		return
	}
	size := uint64(len(sh.slots))
	step, i := handStep%size, sh.hand%size
	defer func() { sh.hand = i }()
	for range 2*size + 1 {
		s := &sh.slots[i]
		next := i + step
		if next >= size {
			next -= size
		}
		switch {
		case s.meta == 0:
		case t.idle(&s.st, now):
			ev.idle++
			sh.remove(int(i))
			i = next
			return
		case s.meta&referenced != 0:
			s.meta &^= referenced
		default:
			ev.pressure++
			sh.remove(int(i))
			i = next
			return
		}
		i = next
	}
}

// idle reports whether a key's state has been full for the grace period
// at now, so that forgetting it changes no decision at instants from
// now-grace on.
func (t *table[S]) idle(s *S, now int64) bool {
	return t.ops.fullAt(s) <= now-t.grace
}

func (t *table[S]) refund(now int64, key string, p *algo.Params, n int64) {
	sh, h := t.locate(key)
	sh.mu.Lock()
	if i := sh.find(h, key); i >= 0 {
		t.ops.undo(&sh.slots[i].st, p, now, n)
	}
	sh.mu.Unlock()
}

func (t *table[S]) reset(key string) bool {
	sh, h := t.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i := sh.find(h, key)
	if i < 0 {
		return false
	}
	sh.remove(i)
	return true
}

func (t *table[S]) len() int {
	n := 0
	for i := range t.shards {
		n += int(t.shards[i].count.Load())
	}
	return n
}

// The per-key states and their ops. GCRA's state tells when it is full (its
// TAT); the others keep that instant beside the state, set from each
// decision's ResetAfter.

var gcraOps = ops[algo.GCRA]{
	step: func(s *algo.GCRA, p *algo.Params, now, n int64) (r algo.Result) {
		*s, r = algo.GCRAStep(*s, p, now, n)
		return r
	},
	fullAt: func(s *algo.GCRA) int64 {
		if s.Frac != 0 {
			return s.At + 1
		}
		return s.At
	},
	undo: func(s *algo.GCRA, p *algo.Params, now, n int64) {
		*s = algo.GCRAUndo(*s, p, now, n)
	},
	delay: func(s *algo.GCRA, p *algo.Params, now, n, maxDelay int64) (r algo.Result) {
		*s, r = algo.GCRADelay(*s, p, now, n, maxDelay)
		return r
	},
}

type withFull[S any] struct {
	st   S
	full int64
}

// fullAfter returns the instant ResetAfter after now, saturated.
func fullAfter(now int64, r algo.Result) int64 {
	if r.ResetAfter > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + r.ResetAfter
}

// opsWithFull returns the ops of a state that keeps its full instant
// beside it. An undo sets that instant again from a peek's ResetAfter.
func opsWithFull[S any](step func(S, *algo.Params, int64, int64) (S, algo.Result), undo func(S, *algo.Params, int64, int64) S) ops[withFull[S]] {
	return ops[withFull[S]]{
		step: func(s *withFull[S], p *algo.Params, now, n int64) (r algo.Result) {
			s.st, r = step(s.st, p, now, n)
			s.full = fullAfter(now, r)
			return r
		},
		fullAt: func(s *withFull[S]) int64 { return s.full },
		undo: func(s *withFull[S], p *algo.Params, now, n int64) {
			var r algo.Result
			s.st, r = step(undo(s.st, p, now, n), p, now, 0)
			s.full = fullAfter(now, r)
		},
	}
}

// withDelay returns o with the delay form of its step.
func withDelay[S any](o ops[withFull[S]], delay func(S, *algo.Params, int64, int64, int64) (S, algo.Result)) ops[withFull[S]] {
	o.delay = func(s *withFull[S], p *algo.Params, now, n, maxDelay int64) (r algo.Result) {
		s.st, r = delay(s.st, p, now, n, maxDelay)
		s.full = fullAfter(now, r)
		return r
	}
	return o
}

var (
	bucketOps  = withDelay(opsWithFull(algo.BucketStep, algo.BucketUndo), algo.BucketDelay)
	fixedOps   = opsWithFull(algo.FixedWindowStep, algo.FixedWindowUndo)
	slidingOps = opsWithFull(algo.SlidingWindowStep, algo.SlidingWindowUndo)
	approxOps  = opsWithFull(algo.SlidingWindowApproxStep, algo.SlidingWindowUndo)
	logOps     = ops[withFull[*algo.SlidingLog]]{
		step: func(s *withFull[*algo.SlidingLog], p *algo.Params, now, n int64) algo.Result {
			if s.st == nil {
				s.st = new(algo.SlidingLog)
			}
			r := s.st.SlidingLogStep(p, now, n)
			s.full = fullAfter(now, r)
			return r
		},
		fullAt: func(s *withFull[*algo.SlidingLog]) int64 { return s.full },
		undo: func(s *withFull[*algo.SlidingLog], p *algo.Params, now, n int64) {
			if s.st == nil {
				return
			}
			s.st.SlidingLogUndo(p, now, n)
			s.full = fullAfter(now, s.st.SlidingLogStep(p, now, 0))
		},
	}
)
