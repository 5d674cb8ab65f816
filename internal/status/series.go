package status

import (
	"sync"
	"sync/atomic"
)

// Window is how many seconds a series remembers: the sparklines' 5
// minutes.
const Window = 300

// series counts events by second over the last Window seconds, in a ring
// of buckets each stamped with its second. Adding costs an atomic load
// and one or two atomic adds; a bucket is cleared under the mutex when
// its second comes round again. A series is safe for concurrent use.
type series struct {
	mu      sync.Mutex
	buckets [Window]bucket
}

type bucket struct {
	sec atomic.Int64 // the Unix second counted, +1 (0: never)
	n   [3]atomic.Uint64
}

// add adds v to counter c (0, 1 or 2) of second sec.
func (s *series) add(sec int64, c int, v uint64) {
	b := &s.buckets[uint64(sec)%Window]
	if b.sec.Load() != sec+1 {
		s.mu.Lock()
		if b.sec.Load() != sec+1 {
			for i := range b.n {
				b.n[i].Store(0)
			}
			b.sec.Store(sec + 1)
		}
		s.mu.Unlock()
	}
	b.n[c].Add(v)
}

// read returns counter c of the seconds from now-Window+1 to now, oldest
// first, into out (zero for seconds not counted).
func (s *series) read(now int64, c int, out *[Window]uint64) {
	for i := range Window {
		sec := now - Window + 1 + int64(i)
		b := &s.buckets[uint64(sec)%Window]
		if b.sec.Load() == sec+1 {
			out[i] = b.n[c].Load()
		} else {
			out[i] = 0
		}
	}
}
