package quota

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/timeline"
)

// model is a Quota without eviction, removal or cap: every key's state is
// kept forever. Forgetting keys must not change any decision, so a Quota
// and its model must agree exactly.
type model struct {
	q      *Quota // for the calendar only
	cur    window
	states map[string]state
}

func (m *model) window(now int64) window {
	if m.cur.End != 0 && now < m.cur.End {
		return m.cur
	}
	m.cur = m.q.bounds(now)
	return m.cur
}

// peek is window without moving the current period (as Reset does not).
func (m *model) peek(now int64) window {
	if m.cur.End != 0 && now < m.cur.End {
		return m.cur
	}
	return m.q.bounds(now)
}

func (m *model) allow(now int64, key string, limit, n int64) admit.Decision {
	s, r := step(m.states[key], m.window(now), now, n, limit)
	m.states[key] = s
	return admit.Decision{
		Allowed:    r.Allowed,
		Limit:      admit.Limit{Rate: limit, Period: time.Duration(r.End - r.Start), Burst: limit},
		Remaining:  r.Remaining,
		RetryAfter: time.Duration(r.RetryAfter),
		ResetAfter: time.Duration(r.ResetAfter),
		Kind:       admit.KindQuota,
	}
}

type countingObserver struct {
	admit.NopObserver
	evicted int
}

func (o *countingObserver) Evicted(e admit.EvictionEvent) { o.evicted += e.Keys }

// TestEvictionChangesNoDecision runs random calls (costs, per-call limits,
// peeks, refunds, resets; instants mostly moving forward across DST days
// and sometimes back) against a Quota with a small key cap and against its
// model, and requires the same decisions. Each period uses at most 25
// distinct keys of a pool of 60, under a cap of 30, so the Quota must keep
// forgetting the keys of ended periods (incrementally and at the cap) and
// must never refuse a key.
func TestEvictionChangesNoDecision(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Period{Hour, Day, Week, Month} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprint(p, seed), func(t *testing.T) {
				obs := &countingObserver{}
				q, err := New(Config{Options: admit.Options{Observer: obs}, Limit: 5, Period: p, Location: paris, MaxKeys: 30})
				if err != nil {
					t.Fatal(err)
				}
				m := &model{q: q, states: map[string]state{}}
				rng := rand.New(rand.NewPCG(seed, 99))
				now := time.Date(2025, 3, 28, 0, 0, 0, 0, time.UTC).UnixNano()
				stride := int64(approx(p) / 40)
				for i := range 20000 {
					if rng.IntN(40) == 0 { // back up to two periods
						now -= rng.Int64N(2 * stride * 40)
					} else {
						now += rng.Int64N(4 * stride)
					}
					// Keys from a window of the pool that moves with the
					// current period.
					cur := m.peek(now)
					base := int(cur.Start/int64(time.Hour)) % 60
					key := fmt.Sprint("k", (base+rng.IntN(25))%60)
					at := time.Unix(0, now)
					switch op := rng.IntN(20); {
					case op == 0:
						got := q.holds(key)
						if err := q.Reset(context.Background(), key); err != nil || q.holds(key) {
							t.Fatalf("op %d: Reset(%q): %v, still held %v", i, key, err, q.holds(key))
						}
						if live := m.states[key].Used > 0 && !ended(m.states[key], cur); live && !got {
							t.Fatalf("op %d: Reset(%q) = false, but it has a count in the current period", i, key)
						}
						delete(m.states, key)
					case op <= 2:
						k := rng.Int64N(4)
						if err := q.Refund(context.Background(), admit.Request{Key: key, N: k, At: at}); err != nil {
							t.Fatal(err)
						}
						m.states[key] = refund(m.states[key], m.window(now), k)
					default:
						limit := int64(5)
						if op%3 == 0 {
							limit = 1 + rng.Int64N(8)
						}
						n := rng.Int64N(limit + 2)
						got, err := q.Allow(context.Background(), admit.Request{Key: key, N: n, Limit: admit.Limit{Rate: limit}, At: at})
						if err != nil {
							t.Fatalf("op %d: Allow(At %v, Key %q, Limit.Rate %d, N %d): %v", i, at, key, limit, n, err)
						}
						if want := m.allow(timeline.Wall(at), key, limit, n); got != want {
							t.Fatalf("op %d: Allow(At %v, Key %q, Limit.Rate %d, N %d)\n = %+v\nwant %+v", i, at, key, limit, n, got, want)
						}
					}
				}
				if obs.evicted == 0 {
					t.Error("no key was evicted: the test did not exercise eviction")
				}
				if q.Len() > 30 {
					t.Errorf("holding %d keys, over the cap of 30", q.Len())
				}
			})
		}
	}
}

// approx is a period's usual length, for tests.
func approx(p Period) time.Duration {
	return map[Period]time.Duration{Hour: time.Hour, Day: 24 * time.Hour, Week: 7 * 24 * time.Hour,
		Month: 30 * 24 * time.Hour, Year: 365 * 24 * time.Hour}[p]
}

// TestCapRefusesOnlyLiveKeys fills a quota to its cap with live keys from
// many goroutines' worth of shards and checks the error, then that the
// keys of an ended period make room (the reclaim path over all shards).
func TestCapRefusesOnlyLiveKeys(t *testing.T) {
	q, err := New(Config{Limit: 1, Period: Day, MaxKeys: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.t.shards) < 2 {
		t.Skip("one shard: the reclaim over shards is not exercised")
	}
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 500 {
		if _, err := q.Allow(context.Background(), admit.Request{Key: fmt.Sprint(i), N: 1, At: d0}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if _, err := q.Allow(context.Background(), admit.Request{Key: fmt.Sprint("x", i), N: 1, At: d0}); !errors.Is(err, admit.ErrTooManyKeys) {
			t.Fatalf("key %d over the cap: %v", i, err)
		}
	}
	// On the next day, every new key finds room.
	for i := range 500 {
		if d, err := q.Allow(context.Background(), admit.Request{Key: fmt.Sprint("y", i), N: 1, At: d0.Add(24 * time.Hour)}); err != nil || !d.Allowed {
			t.Fatalf("next day, key %d: %+v, %v", i, d, err)
		}
	}
	if q.Len() != 500 {
		t.Errorf("holding %d keys, want 500", q.Len())
	}
	for i := range q.t.shards {
		sh := &q.t.shards[i]
		sh.mu.Lock()
		if len(sh.slots) != len(sh.index) {
			t.Errorf("shard %d: %d slots, %d in the index", i, len(sh.slots), len(sh.index))
		}
		for j, s := range sh.slots {
			if sh.index[s.key] != int32(j) || s.st.Used == 0 {
				t.Errorf("shard %d slot %d: %+v, index %d", i, j, s, sh.index[s.key])
			}
		}
		sh.mu.Unlock()
	}
}

// holds reports whether q holds state for key.
func (q *Quota) holds(key string) bool {
	sh := q.t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.find(key) >= 0
}
