package quota_test

// The keys a Quota tracks: the bound, the sweep, and what the Observer sees.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/quota"
)

// TestTrackedGrows: the number of keys is reported from New (0) and as it
// grows, with no eviction, lagging by an eighth at most, in a few reports
// rather than one per key.
func TestTrackedGrows(t *testing.T) {
	obs := &recorder{}
	q := newQuota(t, quota.Config{Options: admit.Options{Observer: obs}, Limit: 10, Period: quota.Day})
	if fmt.Sprint(obs.tracked) != "[0]" {
		t.Fatalf("after New: tracked %v, want [0]", obs.tracked)
	}
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const keys = 5000
	for i := 1; i <= keys; i++ {
		if _, err := q.Allow(context.Background(), admit.Request{Key: fmt.Sprint("k", i), N: 1, At: d0}); err != nil {
			t.Fatal(err)
		}
		if got := obs.tracked[len(obs.tracked)-1]; got > i || got < i-i/8 {
			t.Fatalf("%d keys, tracked %d", i, got)
		}
	}
	if len(obs.tracked) > 100 || obs.evicted != 0 {
		t.Errorf("%d reports for %d keys, %d evicted", len(obs.tracked), keys, obs.evicted)
	}
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	admit.NopObserver
	mu        sync.Mutex
	decisions []admit.DecisionEvent
	evicted   int
	tracked   []int
}

func (r *recorder) Decided(e admit.DecisionEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decisions = append(r.decisions, e)
}

func (r *recorder) Evicted(e admit.EvictionEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Reason != admit.EvictIdle {
		panic("a quota evicted a key under pressure")
	}
	r.evicted += e.Keys
}

func (r *recorder) Tracked(_ string, keys int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tracked = append(r.tracked, keys)
}

func TestTooManyKeys(t *testing.T) {
	obs := &recorder{}
	q := newQuota(t, quota.Config{Options: admit.Options{Observer: obs, Name: "daily"}, Limit: 10, Period: quota.Day, MaxKeys: 3})
	d0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, k := range []string{"a", "b", "c"} {
		if _, err := q.Allow(context.Background(), admit.Request{Key: k, N: 1, At: d0}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := q.Allow(context.Background(), admit.Request{Key: "d", N: 1, At: d0})
	if !errors.Is(err, admit.ErrTooManyKeys) {
		t.Fatalf("a fourth key: %+v, %v; want ErrTooManyKeys", d, err)
	}
	if d.Allowed || d.RetryAfter != 12*time.Hour || d.Remaining != 0 || d.Limit.Period != day || d.Rule != "daily" {
		t.Errorf("refusal at the cap: %+v", d)
	}
	last := obs.decisions[len(obs.decisions)-1]
	if last.Key != "d" || last.Limiter != "daily" || last.N != 1 || last.Decision != d {
		t.Errorf("observer saw %+v", last)
	}
	if fmt.Sprint(obs.tracked) != "[0 1 2 3 3]" { // New's 0, each key while few, the refusal's
		t.Errorf("observer tracked %v, want [0 1 2 3 3]", obs.tracked)
	}
	// The keys held still work, a peek of a new key needs no room, and
	// nothing was evicted.
	if d, err := q.Allow(context.Background(), admit.Request{Key: "a", N: 9, At: d0}); err != nil || !d.Allowed {
		t.Errorf("a held key at the cap: %+v, %v", d, err)
	}
	if d, err := q.Allow(context.Background(), admit.Request{Key: "d", N: 0, At: d0}); err != nil || d.Remaining != 10 {
		t.Errorf("a peek at the cap: %+v, %v", d, err)
	}
	if obs.evicted != 0 || q.Len() != 3 {
		t.Errorf("evicted %d, holding %d", obs.evicted, q.Len())
	}
	// Once the day is over, the keys of the day before make room.
	if d, err := q.Allow(context.Background(), admit.Request{Key: "d", N: 1, At: d0.Add(day)}); err != nil || !d.Allowed {
		t.Errorf("next day: %+v, %v", d, err)
	}
	if obs.evicted != 3 || q.Len() != 1 {
		t.Errorf("next day: evicted %d, holding %d; want 3, 1", obs.evicted, q.Len())
	}
}

func TestExpiredKeysAreSwept(t *testing.T) {
	obs := &recorder{}
	q := newQuota(t, quota.Config{Options: admit.Options{Observer: obs}, Limit: 1, Period: quota.Day})
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		if _, err := q.Allow(context.Background(), admit.Request{Key: fmt.Sprint("old", i), N: 1, At: d0}); err != nil {
			t.Fatal(err)
		}
	}
	if q.Len() != 1000 {
		t.Fatalf("holding %d keys, want 1000", q.Len())
	}
	// Each new key looks at two keys of its shard, so about one new key
	// per two old ones clears them.
	d1 := d0.Add(day)
	for i := range 3000 {
		if _, err := q.Allow(context.Background(), admit.Request{Key: fmt.Sprint("new", i), N: 1, At: d1}); err != nil {
			t.Fatal(err)
		}
	}
	if q.Len() != 3000 || obs.evicted != 1000 {
		t.Errorf("holding %d keys (want 3000), evicted %d (want 1000)", q.Len(), obs.evicted)
	}
	if n := len(obs.tracked); n == 0 || obs.tracked[n-1] > 3000 {
		t.Errorf("tracked %v", obs.tracked)
	}
	// An old key comes back as new.
	if d, _ := q.Allow(context.Background(), admit.Request{Key: "old1", N: 1, At: d1}); !d.Allowed {
		t.Errorf("old key on a new day: %+v", d)
	}
}

func TestObserverSeesEveryDecision(t *testing.T) {
	obs := &recorder{}
	q := newQuota(t, quota.Config{Options: admit.Options{Observer: obs, Name: "n"}, Limit: 2, Period: quota.Day})
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	_, _ = q.Allow(context.Background(), admit.Request{Key: "a", N: 2, At: d0})
	_, _ = q.Allow(context.Background(), admit.Request{Key: "a", N: 1, At: d0})
	_, _ = q.Allow(context.Background(), admit.Request{Key: "a", N: 0, At: d0})
	_, _ = q.Allow(context.Background(), admit.Request{Key: "a", N: -1, At: d0})
	_, _ = q.Allow(context.Background(), admit.Request{Key: strings.Repeat("x", 4096+1), N: 1, At: d0})
	if len(obs.decisions) != 5 {
		t.Fatalf("observed %d decisions, want 5", len(obs.decisions))
	}
	for i, allowed := range []bool{true, false, true, false, false} {
		e := obs.decisions[i]
		if e.Decision.Allowed != allowed || e.Limiter != "n" || e.Decision.Rule != "n" || e.Decision.Kind != admit.KindQuota {
			t.Errorf("event %d: %+v", i, e)
		}
	}
}
