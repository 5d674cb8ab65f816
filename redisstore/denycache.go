package redisstore

import (
	"hash/maphash"
	"sync"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
)

// denyCache remembers keys that Redis denied one event, until the instant
// the denial ends. Every algorithm of this package only moves a key's state
// towards denial when other clients admit requests (they consume capacity;
// nothing but time and Reset gives it back), so a key denied one event
// until T is denied until T, whoever else calls: the cache answers it
// without asking Redis. Only requests of one event are remembered and
// answered: while one event does not fit, Remaining is 0, and RetryAfter and
// ResetAfter count down to instants the state fixes, so the cached decision
// is the one Redis would give, field for field, as long as no other client
// admits events for the key (if one does, Redis would give a longer wait;
// the denial itself stays exact). Capacity is bounded; when a shard is full,
// expired entries make room, then any entry does.
type denyCache struct {
	seed   maphash.Seed
	shards [16]denyShard
	per    int
}

type denyShard struct {
	mu sync.Mutex
	m  map[string]denial
}

// denial is one remembered denial: one event under limit was denied at
// instant at (the local clock before Redis decided, or the caller's
// instant), until at+r.RetryAfter.
type denial struct {
	limit    admit.Limit
	explicit bool // at is a caller's instant, not the local clock
	at       int64
	r        algo.Result
}

func newDenyCache(keys int) *denyCache {
	c := &denyCache{seed: maphash.MakeSeed(), per: max(keys/16, 1)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]denial)
	}
	return c
}

func (c *denyCache) shard(key string) *denyShard {
	return &c.shards[maphash.String(c.seed, key)&15]
}

// get returns the decision for n events of key under limit at now, if a
// remembered denial decides it (only for n = 1): a request that may wait
// maxDelay ns is denied only if it would wait longer.
func (c *denyCache) get(key string, limit admit.Limit, explicit bool, now, n, maxDelay int64) (algo.Result, bool) {
	if n != 1 {
		return algo.Result{}, false
	}
	sh := c.shard(key)
	sh.mu.Lock()
	d, ok := sh.m[key]
	sh.mu.Unlock()
	if !ok || d.limit != limit || d.explicit != explicit || now < d.at {
		return algo.Result{}, false
	}
	elapsed := now - d.at
	if elapsed >= d.r.RetryAfter {
		sh.mu.Lock()
		if cur, ok := sh.m[key]; ok && cur == d {
			delete(sh.m, key)
		}
		sh.mu.Unlock()
		return algo.Result{}, false
	}
	r := d.r
	r.RetryAfter -= elapsed
	if r.RetryAfter <= maxDelay {
		return algo.Result{}, false // the script may admit it with a delay
	}
	r.ResetAfter = max(r.ResetAfter-elapsed, 0)
	return r, true
}

// record takes note of a decision Redis made at instant at: a denial of
// one event is remembered; an admission forgets the key's denial, since
// this store's own admission may have moved the key's state (at a later
// instant than the denial's, a bucket may even have more capacity), and so
// does any decision with room for one event: a sliding log drops its
// expired entries at every decision, after which a caller's instant that
// goes back before them finds room the denial did not.
func (c *denyCache) record(key string, limit admit.Limit, explicit bool, at, n int64, r algo.Result) {
	if (r.Allowed && n > 0) || r.Remaining > 0 {
		c.forget(key)
		return
	}
	if r.Allowed {
		return
	}
	if n != 1 || r.RetryAfter <= 0 || r.RetryAfter >= algo.Never {
		return
	}
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.m[key]; !ok && len(sh.m) >= c.per {
		scanned := 0
		for k, d := range sh.m {
			if at-d.at >= d.r.RetryAfter || d.explicit != explicit || scanned >= 8 {
				delete(sh.m, k)
				if len(sh.m) < c.per {
					break
				}
			}
			scanned++
		}
		if len(sh.m) >= c.per {
			return
		}
	}
	sh.m[key] = denial{limit: limit, explicit: explicit, at: at, r: r}
}

// forget drops key's denial.
func (c *denyCache) forget(key string) {
	sh := c.shard(key)
	sh.mu.Lock()
	delete(sh.m, key)
	sh.mu.Unlock()
}
