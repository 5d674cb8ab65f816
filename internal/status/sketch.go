package status

import (
	"container/heap"
	"hash/maphash"
	"sort"
	"sync"
)

// MaxKeyBytes is the most bytes of a key (and of its rule) the sketch
// keeps: longer ones are counted under their first MaxKeyBytes bytes.
const MaxKeyBytes = 64

// sketch finds the keys denied most often with bounded memory, by the
// space-saving algorithm (Metwally, Agrawal and El Abbadi, 2005): it
// keeps k counters; a key it holds adds to its counter; a key it does not
// hold takes the place of the smallest counter, inheriting its count
// (plus one) as an overestimate whose error is the count inherited. Any
// key denied more than total/k times is held, and each count is at most
// its error above the truth.
//
// Entries keep their bytes inline and are found by a 64-bit hash, so an
// update allocates nothing and the memory is fixed at k entries whatever
// the keys. Two keys whose (rule, key) hashes collide share a counter,
// which the 64-bit hash makes improbable. A sketch is safe for concurrent
// use.
type sketch struct {
	mu    sync.Mutex
	seed  maphash.Seed
	index map[uint64]int32 // hash -> position in heap
	heap  []entry          // a min-heap on count
	total uint64           // denials counted
}

// entry is one counter of a sketch.
type entry struct {
	hash      uint64
	count     uint64
	err       uint64
	ruleLen   uint8
	keyLen    uint8
	truncated bool
	rule      [MaxKeyBytes]byte
	key       [MaxKeyBytes]byte
}

func newSketch(k int) *sketch {
	return &sketch{seed: maphash.MakeSeed(), index: make(map[uint64]int32, k), heap: make([]entry, 0, k)}
}

// add counts one denial of key under rule.
func (s *sketch) add(rule, key string) {
	rule, _ = cut(rule)
	key, trunc := cut(key)
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(rule)
	h.WriteByte(0)
	h.WriteString(key)
	sum := h.Sum64()
	s.mu.Lock()
	s.total++
	if i, ok := s.index[sum]; ok {
		s.heap[i].count++
		heap.Fix(s, int(i))
		s.mu.Unlock()
		return
	}
	var e *entry
	if len(s.heap) < cap(s.heap) {
		s.heap = append(s.heap, entry{})
		e = &s.heap[len(s.heap)-1]
		s.index[sum] = int32(len(s.heap) - 1)
	} else {
		e = &s.heap[0]
		delete(s.index, e.hash)
		s.index[sum] = 0
		e.err = e.count
	}
	e.hash, e.count, e.truncated = sum, e.err+1, trunc
	e.ruleLen, e.keyLen = uint8(copy(e.rule[:], rule)), uint8(copy(e.key[:], key))
	heap.Fix(s, int(s.index[sum]))
	s.mu.Unlock()
}

// cut returns the first MaxKeyBytes bytes of s, and whether it cut.
func cut(s string) (string, bool) {
	if len(s) > MaxKeyBytes {
		return s[:MaxKeyBytes], true
	}
	return s, false
}

// sketch's heap is a container/heap.Interface, moved by heap.Fix only
// (Push and Pop are there for the interface).
func (s *sketch) Len() int           { return len(s.heap) }
func (s *sketch) Less(i, j int) bool { return s.heap[i].count < s.heap[j].count }

func (s *sketch) Swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.index[s.heap[i].hash] = int32(i)
	s.index[s.heap[j].hash] = int32(j)
}

func (s *sketch) Push(x any) { s.heap = append(s.heap, x.(entry)) }

func (s *sketch) Pop() any {
	e := s.heap[len(s.heap)-1]
	s.heap = s.heap[:len(s.heap)-1]
	return e
}

// DeniedKey is a key of the top denied keys.
type DeniedKey struct {
	Rule      string `json:"rule"`
	Key       string `json:"key"`
	Truncated bool   `json:"truncated,omitempty"`
	Count     uint64 `json:"count"`
	Error     uint64 `json:"error"`
}

// top returns the n keys of the largest counts, largest first, their rule
// and key made displayable (see display), and the denials counted.
func (s *sketch) top(n int) ([]DeniedKey, uint64) {
	s.mu.Lock()
	es := make([]entry, len(s.heap))
	copy(es, s.heap)
	total := s.total
	s.mu.Unlock()
	sort.Slice(es, func(i, j int) bool { return es[i].count > es[j].count })
	if len(es) > n {
		es = es[:n]
	}
	out := make([]DeniedKey, len(es))
	for i := range es {
		e := &es[i]
		out[i] = DeniedKey{
			Rule:      display(e.rule[:e.ruleLen]),
			Key:       displayKey(e.key[:e.keyLen]),
			Truncated: e.truncated,
			Count:     e.count,
			Error:     e.err,
		}
	}
	return out, total
}
