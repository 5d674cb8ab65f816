package leases

import (
	"sync"
	"time"

	"github.com/admit-go/admit"
)

// Countable is what the Slots of a concurrency limit kept in a shared
// store implement (redisstore's), so that admit serve can show the slots
// held through its instance without asking the store: CountHeld returns
// the same Slots, but for counting in a Tally the slots their grants hold
// (a Counter, read through its method SlotCounts, as
// internal/enginehook.SlotCounter), their leases running out on clock.
type Countable interface {
	CountHeld(clock admit.Clock) admit.Slots
}

// MaxTallied is the most grants a Counter follows at once: beyond, the
// one whose lease ends first is forgotten (a grant released through
// another instance is counted until its lease ends, so a busy fleet could
// otherwise pile them up).
const MaxTallied = 1 << 16

// Tally counts the slots held through this process at the concurrency
// limits of one store whose grants expire by themselves (redisstore's),
// for admit serve's status page and metrics, without a call to the
// store. A grant counts, at its limit's Counter, from when it is made
// (Add) until its lease is released or found gone (Forget) or runs out on
// the Counter's clock (Renew moves that end). Grants are known by their
// lease ids, unique in the store, so that a release or an extension
// through any value naming the lease (one read back from a lease record)
// is seen; one through another process is not, and counts until the
// lease would have run out.
//
// A Tally is safe for concurrent use. The zero Tally is ready to use.
type Tally struct {
	mu   sync.Mutex
	byID map[string]*tallied
}

// Counter is one limit's count of slots in a Tally.
type Counter struct {
	t     *Tally
	clock admit.Clock
	n     int64           // slots counted; guarded by t.mu, as is queue
	queue Queue[*tallied] // the grants counted, by the end of their lease
}

// tallied is one grant counted.
type tallied struct {
	c   *Counter
	id  string
	n   int64
	end Expiry // of its lease
}

func (g *tallied) Expiry() *Expiry { return &g.end }

// Counter returns a new Counter of t, on clock (admit.SystemClock if nil).
func (t *Tally) Counter(clock admit.Clock) *Counter {
	if clock == nil {
		clock = admit.SystemClock
	}
	return &Counter{t: t, clock: clock}
}

// Add counts a grant of n slots under lease id, held until lease from now
// unless released or renewed before. An id already counted is left as it
// is.
func (c *Counter) Add(id string, n int64, lease time.Duration) {
	t := c.t
	now := c.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	c.expireLocked(now)
	if _, ok := t.byID[id]; ok || n <= 0 {
		return
	}
	if first, ok := c.queue.First(); ok && c.queue.Len() >= MaxTallied {
		t.dropLocked(first)
	}
	if t.byID == nil {
		t.byID = map[string]*tallied{}
	}
	g := &tallied{c: c, id: id, n: n, end: Expiry{At: now.Add(lease)}}
	t.byID[id] = g
	c.queue.Push(g)
	c.n += n
}

// Held returns the slots counted now, over every key.
func (c *Counter) Held() int64 {
	now := c.clock.Now()
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	c.expireLocked(now)
	return c.n
}

// Forget stops counting the grant of lease id: it was released, or the
// store no longer holds it. An id not counted is ignored.
func (t *Tally) Forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.byID[id]; g != nil {
		t.dropLocked(g)
	}
}

// Renew counts the grant of lease id until lease from now: the store
// extended it. An id not counted (never, or no longer) is ignored.
func (t *Tally) Renew(id string, lease time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.byID[id]; g != nil {
		g.c.queue.Move(g, g.c.clock.Now().Add(lease))
	}
}

// dropLocked stops counting g.
func (t *Tally) dropLocked(g *tallied) {
	delete(t.byID, g.id)
	g.c.queue.Remove(g)
	g.c.n -= g.n
}

// expireLocked stops counting c's grants whose lease has run out at now.
func (c *Counter) expireLocked(now time.Time) {
	for {
		g, ok := c.queue.PopExpired(now)
		if !ok {
			return
		}
		delete(c.t.byID, g.id)
		c.n -= g.n
	}
}
