package promlimit

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/admit-go/admit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newTestObserver(t *testing.T, cfg Config) (*Observer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	obs, err := New(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return obs, reg
}

func decided(obs *Observer, limiter, rule, key string, allowed bool) {
	obs.Decided(admit.DecisionEvent{Limiter: limiter, Key: key, N: 1, Decision: admit.Decision{Allowed: allowed, Rule: rule}})
}

const header = `# HELP admit_decisions_total Requests decided by admit limiters, by limiter, rule (the limiter, rule or layer that decided), kind of limit (rate, concurrency, quota) and decision (allowed, denied); each request counts once whatever its cost.
# TYPE admit_decisions_total counter
`

func TestCapFoldsRules(t *testing.T) {
	obs, reg := newTestObserver(t, Config{MaxSeries: 3})
	for i := range 100 {
		decided(obs, "a", fmt.Sprint("r", i), "", true)
	}
	decided(obs, "a", "r0", "", true)        // has its own series
	decided(obs, "a", "r99", "", false)      // beyond the cap, denied: its own "other"
	decided(obs, "b", "b", "", true)         // a limiter beyond the cap
	decided(obs, "a", "other", "", true)     // a rule named "other" is the same series
	decided(obs, "other", "x", "", true)     // so is a limiter named "other"
	decided(obs, "a", "r1", "\xff", true)    // the key changes nothing without WithKeyLabel
	decided(obs, "a", "r2", "ignored", true) // idem
	err := testutil.GatherAndCompare(reg, strings.NewReader(header+`
admit_decisions_total{decision="allowed",kind="rate",limiter="a",rule="r0"} 2
admit_decisions_total{decision="allowed",kind="rate",limiter="a",rule="r1"} 2
admit_decisions_total{decision="allowed",kind="rate",limiter="a",rule="r2"} 2
admit_decisions_total{decision="allowed",kind="rate",limiter="a",rule="other"} 98
admit_decisions_total{decision="denied",kind="rate",limiter="a",rule="other"} 1
admit_decisions_total{decision="allowed",kind="rate",limiter="other",rule="other"} 2
`), "admit_decisions_total")
	if err != nil {
		t.Error(err)
	}
	if keys, own := obs.dec.size(); own != 3 || keys > 3+4 {
		t.Errorf("the table holds %d keys, %d with a series of their own; want 3 own and at most 4 folded", keys, own)
	}
}

func TestCapFoldsKeys(t *testing.T) {
	obs, reg := newTestObserver(t, Config{MaxSeries: 4, KeyLabel: true})
	for i := range 10 {
		decided(obs, "api", "api", fmt.Sprint("k", i), true)
	}
	decided(obs, "api", "api/burst", "k0", true) // a rule without a series: its limiter's
	decided(obs, "web", "web", "k0", false)      // a limiter without a series
	err := testutil.GatherAndCompare(reg, strings.NewReader(header+`
admit_decisions_total{decision="allowed",key="k0",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{decision="allowed",key="k1",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{decision="allowed",key="k2",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{decision="allowed",key="k3",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{decision="allowed",key="other",kind="rate",limiter="api",rule="api"} 6
admit_decisions_total{decision="allowed",key="other",kind="rate",limiter="api",rule="other"} 1
admit_decisions_total{decision="denied",key="other",kind="rate",limiter="other",rule="other"} 1
`), "admit_decisions_total")
	if err != nil {
		t.Error(err)
	}
}

func TestCapOtherMetrics(t *testing.T) {
	obs, reg := newTestObserver(t, Config{MaxSeries: 2})
	for i := range 10 {
		l := fmt.Sprint("l", i)
		obs.StoreCalled(admit.StoreEvent{Limiter: "redis", Op: fmt.Sprint("op", i), Keys: 1})
		obs.Tracked(l, i)
		obs.Evicted(admit.EvictionEvent{Limiter: l, Reason: admit.EvictIdle, Keys: 1})
		obs.FallbackChanged(admit.FallbackEvent{Limiter: l, Active: true})
	}
	for _, tc := range []struct {
		name   string
		series int
	}{
		{"admit_store_keys_total", 3},       // op0, op1, other
		{"admit_keys_tracked", 3},           // l0, l1, other
		{"admit_evictions_total", 6},        // idle and pressure of l0, l1, other
		{"admit_fallback_active", 3},        // l0, l1, other
		{"admit_fallback_changes_total", 3}, // l0, l1, other
	} {
		if n, err := testutil.GatherAndCount(reg, tc.name); err != nil || n != tc.series {
			t.Errorf("%s: %d series (%v), want %d", tc.name, n, err, tc.series)
		}
	}
	// The limiters beyond the cap count together: 8 active policies.
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP admit_fallback_active 1 while the failure policy of the limiter decides instead of its store, 0 once the store is back (the number of such policies if several share the name).
# TYPE admit_fallback_active gauge
admit_fallback_active{limiter="l0"} 1
admit_fallback_active{limiter="l1"} 1
admit_fallback_active{limiter="other"} 8
`), "admit_fallback_active")
	if err != nil {
		t.Error(err)
	}
}

// TestCapBoundsMemory sends decisions of 200,000 distinct rules and keys
// and checks that the Observer keeps a bounded number of them.
func TestCapBoundsMemory(t *testing.T) {
	const n = 200_000
	obs, reg := newTestObserver(t, Config{MaxSeries: 1000, KeyLabel: true})
	buf := make([]byte, 0, 64)
	for i := range n {
		buf = fmt.Appendf(buf[:0], "rule-%d", i)
		decided(obs, "api", string(buf), string(buf), i%2 == 0)
	}
	keys, own := obs.dec.size()
	if own != 1000 || keys > 1000+2+2 {
		t.Errorf("after %d rules: %d keys in the table, %d with a series of their own; want 1000 own and at most 4 folded", n, keys, own)
	}
	if got, err := testutil.GatherAndCount(reg, "admit_decisions_total"); err != nil || got > 1000+2 {
		t.Errorf("%d series (%v), want at most 1002", got, err)
	}
}

// TestTableSnapshot checks that the keys created under the lock reach the
// snapshot, so that lookups stop taking the lock.
func TestTableSnapshot(t *testing.T) {
	created := 0
	tab := newTable(1, 1<<20, func(k limKey) int { created++; return created })
	for i := range 5000 {
		tab.get(limKey{fmt.Sprint(i)})
	}
	for range 2 {
		for i := range 5000 {
			if v := tab.get(limKey{fmt.Sprint(i)}); v != i+1 {
				t.Fatalf("get(%d) = %d, want %d", i, v, i+1)
			}
		}
	}
	if len(tab.snap.Load().m) != 5000 || tab.dirty != nil {
		t.Errorf("after lookups of every key: %d keys in the snapshot, dirty copy %v; want all 5000 and none", len(tab.snap.Load().m), tab.dirty != nil)
	}
	if created != 5000 {
		t.Errorf("create called %d times for 5000 keys", created)
	}
}

// TestTableConcurrentCreation creates keys from many goroutines, beyond
// the cap, and checks that each key always gets the same value and that
// the cap holds.
func TestTableConcurrentCreation(t *testing.T) {
	var mu sync.Mutex
	created := map[storeKey]int{}
	tab := newTable(2, 100, func(k storeKey) *int {
		mu.Lock() // called under the table's lock; this one is for -race's sake
		defer mu.Unlock()
		created[k]++
		return new(int)
	})
	var wg sync.WaitGroup
	results := make([]map[storeKey]*int, 4)
	for g := range results {
		results[g] = map[storeKey]*int{}
		wg.Go(func() {
			for i := range 2000 {
				k := storeKey{fmt.Sprint("l", i%10), fmt.Sprint("op", (i*7+g)%50)}
				v := tab.get(k)
				if prev, ok := results[g][k]; ok && prev != v {
					t.Errorf("key %v: two values", k)
				}
				results[g][k] = v
			}
		})
	}
	wg.Wait()
	for k, n := range created {
		if n != 1 {
			t.Errorf("key %v created %d times", k, n)
		}
	}
	// Keys with a value of their own agree across goroutines.
	for k, v := range results[0] {
		for g := 1; g < len(results); g++ {
			if w, ok := results[g][k]; ok && w != v {
				t.Errorf("key %v: different values in goroutines 0 and %d", k, g)
			}
		}
	}
	if keys, own := tab.size(); own != 100 || keys > 100+10+1 {
		t.Errorf("%d keys, %d own; want 100 own and at most 11 folded", keys, own)
	}
}

// TestRecentCollisions decides under rules whose digests are equal (they
// differ only in bytes quick does not read), so that they compete for one
// pair of slots of the recent cache, and checks that each is counted in
// its own series.
func TestRecentCollisions(t *testing.T) {
	rules := []string{"abXdefgh", "abYdefgh", "abZdefgh", "ab_defgh"}
	for _, r := range rules[1:] {
		if (decKey{limiter: "api", rule: r}).quick() != (decKey{limiter: "api", rule: rules[0]}).quick() {
			t.Fatalf("the digests of %q and %q differ: pick other rules", r, rules[0])
		}
	}
	obs, reg := newTestObserver(t, Config{})
	want := make([]int, len(rules))
	for i := range 1000 {
		j := (i * i) % len(rules) // 0, 1, 0, 1, ... and some 2 and 3
		if i%7 == 0 {
			j = (i / 7) % len(rules)
		}
		decided(obs, "api", rules[j], "", true)
		want[j]++
	}
	var text strings.Builder
	text.WriteString(header)
	for i, r := range rules {
		fmt.Fprintf(&text, "admit_decisions_total{decision=\"allowed\",kind=\"rate\",limiter=\"api\",rule=%q} %d\n", r, want[i])
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(text.String()), "admit_decisions_total"); err != nil {
		t.Error(err)
	}
}

func TestDefaultBuckets(t *testing.T) {
	b := defaultBuckets()
	if b[0] != 0.0001 || b[len(b)-1] != 1 {
		t.Errorf("defaultBuckets() = %v, want 100µs to 1s", b)
	}
	for i := 1; i < len(b); i++ {
		if b[i] <= b[i-1] {
			t.Errorf("defaultBuckets() = %v: not increasing", b)
		}
	}
	b[0] = 42
	if defaultBuckets()[0] != 0.0001 {
		t.Error("defaultBuckets returns a shared slice")
	}
}
