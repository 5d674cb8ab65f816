package transport

import (
	"sync"
	"time"
)

// budgetSlots is the number of parts a budget's window is counted in.
const budgetSlots = 10

// budget is a retry budget: over the last window (counted in tenths of
// it), retries may be at most ratio × requests + min. It is Finagle's
// RetryBudget in spirit: each request deposits ratio of a retry, each
// retry withdraws one, and min keeps a little room for clients that send
// few requests. It is safe for concurrent use.
type budget struct {
	mu    sync.Mutex
	ratio float64
	min   int64
	width int64 // ns per slot
	slots [budgetSlots]budgetSlot
}

type budgetSlot struct {
	idx           int64 // the slot's index on the time line (ns / width)
	reqs, retries int64
}

func newBudget(ratio float64, min int64, window time.Duration) *budget {
	b := &budget{ratio: ratio, min: min, width: max(int64(window)/budgetSlots, 1)}
	for i := range b.slots {
		b.slots[i].idx = -1 << 62 // long past
	}
	return b
}

// index returns the slot index of instant now (floor division).
func (b *budget) index(now int64) int64 {
	i := now / b.width
	if now < 0 && now%b.width != 0 {
		i--
	}
	return i
}

// slot returns the slot of index i, emptied if it held an older one.
// b.mu is held.
func (b *budget) slot(i int64) *budgetSlot {
	s := &b.slots[(i%budgetSlots+budgetSlots)%budgetSlots]
	if s.idx != i {
		*s = budgetSlot{idx: i}
	}
	return s
}

// request counts a request sent at instant now (ns).
func (b *budget) request(now int64) {
	b.mu.Lock()
	b.slot(b.index(now)).reqs++
	b.mu.Unlock()
}

// retry takes a retry from the budget at instant now (ns), and reports
// whether there was one to take.
func (b *budget) retry(now int64) bool {
	i := b.index(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	var reqs, retries int64
	for _, s := range b.slots {
		if s.idx > i-budgetSlots && s.idx <= i {
			reqs += s.reqs
			retries += s.retries
		}
	}
	if float64(retries+1) > b.ratio*float64(reqs)+float64(b.min) {
		return false
	}
	b.slot(i).retries++
	return true
}
