package promlimit_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/promlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// newObserver returns an Observer registered on a new pedantic registry
// (which checks every collected metric against its description).
func newObserver(t testing.TB, cfg promlimit.Config) (*promlimit.Observer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	obs, err := promlimit.New(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return obs, reg
}

func decision(limiter, rule string, kind admit.Kind, allowed bool) admit.DecisionEvent {
	return admit.DecisionEvent{Limiter: limiter, Key: "k", N: 1, Decision: admit.Decision{Allowed: allowed, Rule: rule, Kind: kind}}
}

// compare checks the named metrics of obs against the exposition text want
// (without HELP and TYPE lines, which are added from the registry).
func compare(t *testing.T, reg prometheus.Gatherer, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

const decisionsHeader = `# HELP admit_decisions_total Requests decided by admit limiters, by limiter, rule (the limiter, rule or layer that decided), kind of limit (rate, concurrency, quota) and decision (allowed, denied); each request counts once whatever its cost.
# TYPE admit_decisions_total counter
`

func TestDecided(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	for range 3 {
		obs.Decided(decision("api", "api", admit.KindRate, true))
	}
	obs.Decided(decision("api", "api", admit.KindRate, false))
	obs.Decided(decision("api", "api/burst", admit.KindRate, false))
	obs.Decided(decision("jobs", "jobs", admit.KindConcurrency, true))
	obs.Decided(decision("daily", "daily", admit.KindQuota, false))
	obs.Decided(decision("", "", admit.KindRate, true))
	// The cost of a request and its key change nothing.
	e := decision("api", "api", admit.KindRate, true)
	e.N, e.Key = 1000, "someone else"
	obs.Decided(e)
	compare(t, reg, decisionsHeader+`
admit_decisions_total{decision="allowed",kind="rate",limiter="",rule=""} 1
admit_decisions_total{decision="allowed",kind="rate",limiter="api",rule="api"} 4
admit_decisions_total{decision="denied",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{decision="denied",kind="rate",limiter="api",rule="api/burst"} 1
admit_decisions_total{decision="allowed",kind="concurrency",limiter="jobs",rule="jobs"} 1
admit_decisions_total{decision="denied",kind="quota",limiter="daily",rule="daily"} 1
`, "admit_decisions_total")
}

func TestDecidedKeyLabel(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{KeyLabel: true})
	for _, key := range []string{"tenant-a", "tenant-b", "tenant-a", ""} {
		obs.Decided(admit.DecisionEvent{Limiter: "api", Key: key, N: 1, Decision: admit.Decision{Allowed: true, Rule: "api"}})
	}
	compare(t, reg, decisionsHeader+`
admit_decisions_total{decision="allowed",key="",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{decision="allowed",key="tenant-a",kind="rate",limiter="api",rule="api"} 2
admit_decisions_total{decision="allowed",key="tenant-b",kind="rate",limiter="api",rule="api"} 1
`, "admit_decisions_total")
}

func TestStoreCalled(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{Buckets: []float64{0.001, 0.01}})
	boom := errors.New("connection refused")
	for _, e := range []admit.StoreEvent{
		{Limiter: "redis", Op: "decide", Keys: 3, Duration: 500 * time.Microsecond},
		{Limiter: "redis", Op: "decide", Keys: 1, Duration: 5 * time.Millisecond},
		{Limiter: "redis", Op: "decide", Keys: 2, Duration: 2 * time.Second, Err: boom},
		{Limiter: "redis", Op: "quota", Keys: 1, Duration: 250 * time.Microsecond},
		{Limiter: "redis", Op: "quota", Keys: -1, Duration: -time.Second}, // nonsense counts as 0
	} {
		obs.StoreCalled(e)
	}
	compare(t, reg, `
# HELP admit_store_duration_seconds Duration in seconds of the calls of admit limiters to a remote store (Redis), failed or not; _count counts the calls.
# TYPE admit_store_duration_seconds histogram
admit_store_duration_seconds_bucket{limiter="redis",op="decide",le="0.001"} 1
admit_store_duration_seconds_bucket{limiter="redis",op="decide",le="0.01"} 2
admit_store_duration_seconds_bucket{limiter="redis",op="decide",le="+Inf"} 3
admit_store_duration_seconds_sum{limiter="redis",op="decide"} 2.0055
admit_store_duration_seconds_count{limiter="redis",op="decide"} 3
admit_store_duration_seconds_bucket{limiter="redis",op="quota",le="0.001"} 2
admit_store_duration_seconds_bucket{limiter="redis",op="quota",le="0.01"} 2
admit_store_duration_seconds_bucket{limiter="redis",op="quota",le="+Inf"} 2
admit_store_duration_seconds_sum{limiter="redis",op="quota"} 0.00025
admit_store_duration_seconds_count{limiter="redis",op="quota"} 2
# HELP admit_store_errors_total Calls of admit limiters to a remote store (Redis) that failed.
# TYPE admit_store_errors_total counter
admit_store_errors_total{limiter="redis",op="decide"} 1
admit_store_errors_total{limiter="redis",op="quota"} 0
# HELP admit_store_keys_total Keys decided on by the calls of admit limiters to a remote store (Redis); divided by admit_store_duration_seconds_count, the mean keys per call.
# TYPE admit_store_keys_total counter
admit_store_keys_total{limiter="redis",op="decide"} 6
admit_store_keys_total{limiter="redis",op="quota"} 1
`, "admit_store_duration_seconds", "admit_store_errors_total", "admit_store_keys_total")
}

func TestFallbackChanged(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	boom := errors.New("down")
	active := func(limiter string) float64 {
		t.Helper()
		return value(t, reg, "admit_fallback_active", "limiter", limiter)
	}
	obs.FallbackChanged(admit.FallbackEvent{Limiter: "redis", Active: true, Reason: boom})
	if got := active("redis"); got != 1 {
		t.Errorf("fallback_active after a switch to the policy = %v, want 1", got)
	}
	obs.FallbackChanged(admit.FallbackEvent{Limiter: "redis", Active: false})
	if got := active("redis"); got != 0 {
		t.Errorf("fallback_active after the switch back = %v, want 0", got)
	}
	// Two policies of one name: the gauge counts the active ones.
	obs.FallbackChanged(admit.FallbackEvent{Limiter: "shared", Active: true, Reason: boom})
	obs.FallbackChanged(admit.FallbackEvent{Limiter: "shared", Active: true, Reason: boom})
	if got := active("shared"); got != 2 {
		t.Errorf("fallback_active with two active policies = %v, want 2", got)
	}
	obs.FallbackChanged(admit.FallbackEvent{Limiter: "shared", Active: false})
	if got := active("shared"); got != 1 {
		t.Errorf("fallback_active with one of two back = %v, want 1", got)
	}
	// A switch back that was never preceded by a switch does not go below 0.
	obs.FallbackChanged(admit.FallbackEvent{Limiter: "odd", Active: false})
	obs.FallbackChanged(admit.FallbackEvent{Limiter: "odd", Active: false})
	if got := active("odd"); got != 0 {
		t.Errorf("fallback_active after unmatched switches back = %v, want 0", got)
	}
	compare(t, reg, `
# HELP admit_fallback_changes_total Switches of failure policies to deciding without their store and back.
# TYPE admit_fallback_changes_total counter
admit_fallback_changes_total{limiter="odd"} 2
admit_fallback_changes_total{limiter="redis"} 2
admit_fallback_changes_total{limiter="shared"} 3
`, "admit_fallback_changes_total")
}

func TestTrackedAndEvicted(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{})
	obs.Tracked("api", 10)
	obs.Tracked("api", 7)
	obs.Tracked("jobs", 0)
	obs.Evicted(admit.EvictionEvent{Limiter: "api", Reason: admit.EvictIdle, Keys: 3})
	obs.Evicted(admit.EvictionEvent{Limiter: "api", Reason: admit.EvictPressure, Keys: 2})
	obs.Evicted(admit.EvictionEvent{Limiter: "api", Reason: admit.EvictIdle, Keys: 1})
	obs.Evicted(admit.EvictionEvent{Limiter: "api", Reason: admit.EvictIdle, Keys: 0})      // nothing
	obs.Evicted(admit.EvictionEvent{Limiter: "api", Reason: admit.EvictPressure, Keys: -5}) // nothing, and no panic
	obs.Evicted(admit.EvictionEvent{Limiter: "none", Reason: admit.EvictIdle, Keys: 0})     // no series
	compare(t, reg, `
# HELP admit_keys_tracked Keys the limiter holds state for, as it last reported.
# TYPE admit_keys_tracked gauge
admit_keys_tracked{limiter="api"} 7
admit_keys_tracked{limiter="jobs"} 0
# HELP admit_evictions_total Keys forgotten by limiters: idle (back at full capacity, no decision changes) or pressure (at the cap of keys, a limit was loosened).
# TYPE admit_evictions_total counter
admit_evictions_total{limiter="api",reason="idle"} 4
admit_evictions_total{limiter="api",reason="pressure"} 2
`, "admit_keys_tracked", "admit_evictions_total")
}

// driveAll sends an event of every kind to obs.
func driveAll(obs admit.Observer) {
	obs.Decided(decision("api", "api", admit.KindRate, true))
	obs.Decided(decision("api", "api", admit.KindRate, false))
	obs.Decided(decision("jobs", "jobs", admit.KindConcurrency, true))
	obs.Decided(decision("daily", "daily", admit.KindQuota, false))
	obs.StoreCalled(admit.StoreEvent{Limiter: "redis", Op: "decide", Keys: 2, Duration: time.Millisecond})
	obs.StoreCalled(admit.StoreEvent{Limiter: "redis", Op: "decide", Keys: 1, Duration: time.Second, Err: errors.New("timeout")})
	obs.FallbackChanged(admit.FallbackEvent{Limiter: "redis", Active: true, Reason: errors.New("timeout")})
	obs.Tracked("api", 5)
	obs.Evicted(admit.EvictionEvent{Limiter: "api", Reason: admit.EvictPressure, Keys: 1})
}

// TestLint checks every metric with promlint, the linter of `promtool
// check metrics`.
func TestLint(t *testing.T) {
	for _, cfg := range []promlimit.Config{
		{},
		{KeyLabel: true, Namespace: "shop_admit", ConstLabels: prometheus.Labels{"component": "gateway"}},
	} {
		obs, reg := newObserver(t, cfg)
		driveAll(obs)
		n, err := testutil.GatherAndCount(reg)
		if err != nil {
			t.Fatal(err)
		}
		// 4 decisions, 3 store series, 1 each of fallback active and
		// changes and of keys, 2 of evictions.
		if n != 4+3+2+1+2 {
			t.Errorf("%d series, want 12", n)
		}
		lint(t, reg)
	}
}

// lint checks the metrics of reg with promlint.
func lint(t *testing.T, reg prometheus.Gatherer) {
	t.Helper()
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestNamespaceAndConstLabels(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs, err := promlimit.New(reg, promlimit.Config{Namespace: "shop", ConstLabels: prometheus.Labels{"component": "gateway"}})
	if err != nil {
		t.Fatal(err)
	}
	obs.Decided(decision("api", "api", admit.KindRate, true))
	compare(t, reg, `
# HELP shop_decisions_total Requests decided by admit limiters, by limiter, rule (the limiter, rule or layer that decided), kind of limit (rate, concurrency, quota) and decision (allowed, denied); each request counts once whatever its cost.
# TYPE shop_decisions_total counter
shop_decisions_total{component="gateway",decision="allowed",kind="rate",limiter="api",rule="api"} 1
`, "shop_decisions_total")
}

// isRegistration reports whether err is New's report of a registry that
// refused the metrics (ErrRegistration before it was removed): not a
// config error, and saying so.
func isRegistration(err error) bool {
	return err != nil && !errors.Is(err, admit.ErrInvalidConfig) && strings.Contains(err.Error(), "promlimit: cannot register the metrics")
}

func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := promlimit.New(reg, promlimit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := promlimit.New(reg, promlimit.Config{})
	if second != nil || !isRegistration(err) {
		t.Fatalf("New on a registry that has an Observer of the same namespace = %v, %v; want a refusal of the registry", second, err)
	}
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("the error %q does not wrap a prometheus.AlreadyRegisteredError", err)
	}
	if are.ExistingCollector != first {
		t.Errorf("ExistingCollector = %v, want the first Observer", are.ExistingCollector)
	}
	if !strings.Contains(err.Error(), `namespace "admit"`) || !strings.Contains(err.Error(), "Config.Namespace") {
		t.Errorf("the error %q does not say what is registered and what to do", err)
	}

	// Another namespace can share the registry.
	other, err := promlimit.New(reg, promlimit.Config{Namespace: "other"})
	if err != nil {
		t.Fatal(err)
	}
	first.Decided(decision("api", "api", admit.KindRate, true))
	other.Decided(decision("api", "api", admit.KindRate, false))
	if n, err := testutil.GatherAndCount(reg, "admit_decisions_total", "other_decisions_total"); err != nil || n != 2 {
		t.Errorf("GatherAndCount = %d, %v; want 2 series", n, err)
	}
	// So can other values of the same const labels, but not other label
	// names (Prometheus wants one set of label names per metric name).
	labelled := prometheus.NewPedanticRegistry()
	b, err := promlimit.New(labelled, promlimit.Config{ConstLabels: prometheus.Labels{"component": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := promlimit.New(labelled, promlimit.Config{ConstLabels: prometheus.Labels{"component": "c"}})
	if err != nil {
		t.Fatal(err)
	}
	b.Decided(decision("api", "api", admit.KindRate, true))
	c.Decided(decision("api", "api", admit.KindRate, true))
	compare(t, labelled, decisionsHeader+`
admit_decisions_total{component="b",decision="allowed",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{component="c",decision="allowed",kind="rate",limiter="api",rule="api"} 1
`, "admit_decisions_total")
	if _, err := promlimit.New(labelled, promlimit.Config{}); !isRegistration(err) {
		t.Errorf("New without the const labels the others have: %v, want a refusal of the registry", err)
	}
	// A registry with another metric of the same name refuses it.
	reg2 := prometheus.NewRegistry()
	reg2.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "admit_keys_tracked", Help: "Something else."}))
	if _, err := promlimit.New(reg2, promlimit.Config{}); !isRegistration(err) {
		t.Errorf("New on a registry with a conflicting metric: %v, want a refusal of the registry", err)
	}
	// Unregistering frees the namespace.
	if !reg.Unregister(first) {
		t.Fatal("Unregister(first) = false")
	}
	if _, err := promlimit.New(reg, promlimit.Config{}); err != nil {
		t.Errorf("New after Unregister: %v", err)
	}
}

func TestNilRegisterer(t *testing.T) {
	var nilRegistry *prometheus.Registry
	for _, reg := range []prometheus.Registerer{nil, nilRegistry} {
		obs, err := promlimit.New(reg, promlimit.Config{})
		if obs != nil || !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "promlimit: nil prometheus.Registerer") {
			t.Errorf("New(%#v) = %v, %v; want admit.ErrInvalidConfig, a nil Registerer", reg, obs, err)
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  promlimit.Config
	}{
		{"namespace starting with a digit", promlimit.Config{Namespace: "1admit"}},
		{"namespace with a dash", promlimit.Config{Namespace: "my-app"}},
		{"namespace with a colon", promlimit.Config{Namespace: "a:b"}},
		{"namespace with a space", promlimit.Config{Namespace: "a b"}},
		{"const label with a dash", promlimit.Config{ConstLabels: prometheus.Labels{"a-b": "x"}}},
		{"empty const label name", promlimit.Config{ConstLabels: prometheus.Labels{"": "x"}}},
		{"reserved const label", promlimit.Config{ConstLabels: prometheus.Labels{"__name__": "x"}}},
		{"const label limiter", promlimit.Config{ConstLabels: prometheus.Labels{"limiter": "x"}}},
		{"const label le", promlimit.Config{ConstLabels: prometheus.Labels{"le": "x"}}},
		{"const label key", promlimit.Config{ConstLabels: prometheus.Labels{"ok": "fine", "key": "x"}}},
		{"const label value not UTF-8", promlimit.Config{ConstLabels: prometheus.Labels{"a": "\xff"}}},
		{"zero bucket", promlimit.Config{Buckets: []float64{0, 1}}},
		{"negative bucket", promlimit.Config{Buckets: []float64{-1, 1}}},
		{"NaN bucket", promlimit.Config{Buckets: []float64{math.NaN()}}},
		{"infinite bucket", promlimit.Config{Buckets: []float64{1, math.Inf(1)}}},
		{"decreasing buckets", promlimit.Config{Buckets: []float64{1, 0.5}}},
		{"repeated bucket", promlimit.Config{Buckets: []float64{0.1, 0.1}}},
		{"negative max series", promlimit.Config{MaxSeries: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			obs, err := promlimit.New(reg, tc.cfg)
			if obs != nil || !errors.Is(err, admit.ErrInvalidConfig) {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", obs, err)
			}
			// Nothing was registered.
			if _, err := promlimit.New(reg, promlimit.Config{}); err != nil {
				t.Errorf("New after a refused New: %v", err)
			}
		})
	}
	// The error names the package and the field.
	_, err := promlimit.New(prometheus.NewRegistry(), promlimit.Config{MaxSeries: -1})
	if err == nil || !strings.Contains(err.Error(), "promlimit: MaxSeries -1") {
		t.Errorf("MaxSeries -1: %v, want an error naming the field", err)
	}
	// The zero Config gives the defaults: namespace admit, the default
	// buckets.
	obs, reg := newObserver(t, promlimit.Config{})
	obs.Decided(decision("api", "api", admit.KindRate, true))
	if n, err := testutil.GatherAndCount(reg, "admit_decisions_total"); err != nil || n != 1 {
		t.Errorf("the zero Config: %d admit_decisions_total series, %v; want 1", n, err)
	}
}

func TestConfigIsCopied(t *testing.T) {
	labels := prometheus.Labels{"component": "a"}
	buckets := []float64{0.5, 1}
	obs, reg := newObserver(t, promlimit.Config{ConstLabels: labels, Buckets: buckets})
	labels["component"] = "b"
	buckets[0] = 0.75
	obs.StoreCalled(admit.StoreEvent{Limiter: "r", Op: "decide", Keys: 1, Duration: 600 * time.Millisecond})
	compare(t, reg, `
# HELP admit_store_duration_seconds Duration in seconds of the calls of admit limiters to a remote store (Redis), failed or not; _count counts the calls.
# TYPE admit_store_duration_seconds histogram
admit_store_duration_seconds_bucket{component="a",limiter="r",op="decide",le="0.5"} 0
admit_store_duration_seconds_bucket{component="a",limiter="r",op="decide",le="1"} 1
admit_store_duration_seconds_bucket{component="a",limiter="r",op="decide",le="+Inf"} 1
admit_store_duration_seconds_sum{component="a",limiter="r",op="decide"} 0.6
admit_store_duration_seconds_count{component="a",limiter="r",op="decide"} 1
`, "admit_store_duration_seconds")
}

func TestZeroAndNilObserver(t *testing.T) {
	for _, obs := range []*promlimit.Observer{nil, {}} {
		driveAll(obs)
		obs.Describe(make(chan *prometheus.Desc, 1))
		obs.Collect(make(chan prometheus.Metric, 1))
	}
}

// TestLabelValues checks that label values that are not UTF-8, too long or
// empty neither panic nor get lost.
func TestLabelValues(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{KeyLabel: true})
	long := strings.Repeat("x", 10000)
	obs.Decided(admit.DecisionEvent{Limiter: "api\xff", Key: "\xfe\xfd", Decision: admit.Decision{Allowed: true, Rule: "r\x80"}})
	obs.Decided(admit.DecisionEvent{Limiter: "api", Key: "k", Decision: admit.Decision{Allowed: true, Rule: "api"}})
	// Too long for a series of their own: a key is counted under its rule,
	// a limiter under "other".
	obs.Decided(admit.DecisionEvent{Limiter: "api", Key: long, Decision: admit.Decision{Allowed: true, Rule: "api"}})
	obs.Decided(admit.DecisionEvent{Limiter: long, Key: "k", Decision: admit.Decision{Allowed: true, Rule: "api"}})
	obs.Decided(admit.DecisionEvent{Limiter: "api", Key: "k2", Decision: admit.Decision{Allowed: true, Rule: "api"}, N: -1})
	obs.Decided(admit.DecisionEvent{Limiter: "api", Key: "k", Decision: admit.Decision{Allowed: true, Rule: "api", Kind: 200}})
	obs.StoreCalled(admit.StoreEvent{Limiter: "\xff", Op: long, Keys: 1})
	obs.Tracked(long, 3)
	obs.Tracked("\xc0", 4)
	obs.Evicted(admit.EvictionEvent{Limiter: "x", Reason: 77, Keys: 1})
	compare(t, reg, strings.ReplaceAll(decisionsHeader+`
admit_decisions_total{decision="allowed",key="\ufffd",kind="rate",limiter="api\ufffd",rule="r\ufffd"} 1
admit_decisions_total{decision="allowed",key="other",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{decision="allowed",key="other",kind="rate",limiter="other",rule="other"} 1
admit_decisions_total{decision="allowed",key="k",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{decision="allowed",key="k2",kind="rate",limiter="api",rule="api"} 1
admit_decisions_total{decision="allowed",key="k",kind="Kind(200)",limiter="api",rule="api"} 1
# HELP admit_keys_tracked Keys the limiter holds state for, as it last reported.
# TYPE admit_keys_tracked gauge
admit_keys_tracked{limiter="other"} 3
admit_keys_tracked{limiter="\ufffd"} 4
# HELP admit_evictions_total Keys forgotten by limiters: idle (back at full capacity, no decision changes) or pressure (at the cap of keys, a limit was loosened).
# TYPE admit_evictions_total counter
admit_evictions_total{limiter="x",reason="idle"} 0
admit_evictions_total{limiter="x",reason="pressure"} 1
`, `\ufffd`, "\uFFFD"), "admit_decisions_total", "admit_keys_tracked", "admit_evictions_total")
	if got := value(t, reg, "admit_store_keys_total", "limiter", "other", "op", "other"); got != 1 {
		t.Errorf("store keys under op=other = %v, want 1", got)
	}
}

// TestConcurrentUse sends events from many goroutines, and checks the
// totals; run it with -race.
func TestConcurrentUse(t *testing.T) {
	obs, reg := newObserver(t, promlimit.Config{MaxSeries: 50})
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				rule := fmt.Sprintf("rule-%d", (g*each+i)%100) // 100 rules, beyond the cap of 50
				obs.Decided(decision("api", rule, admit.KindRate, i%3 != 0))
				obs.StoreCalled(admit.StoreEvent{Limiter: "redis", Op: "decide", Keys: 1, Duration: time.Millisecond})
				obs.Tracked("api", i)
				obs.Evicted(admit.EvictionEvent{Limiter: "api", Reason: admit.EvictIdle, Keys: 1})
				obs.FallbackChanged(admit.FallbackEvent{Limiter: "redis", Active: i%2 == 0})
			}
		})
	}
	// Scrapes while events arrive.
	for range 20 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	total := sum(t, reg, "admit_decisions_total")
	if total != goroutines*each {
		t.Errorf("decisions counted: %v, want %d", total, goroutines*each)
	}
	if n, _ := testutil.GatherAndCount(reg, "admit_decisions_total"); n > 50+2 {
		t.Errorf("%d series of decisions, want at most the cap of 50 and 2 of rule=other", n)
	}
	if got := sum(t, reg, "admit_evictions_total"); got != goroutines*each {
		t.Errorf("evictions counted: %v, want %d", got, goroutines*each)
	}
	if got := sum(t, reg, "admit_fallback_changes_total"); got != goroutines*each {
		t.Errorf("fallback changes counted: %v, want %d", got, goroutines*each)
	}
	// Every goroutine ends on a switch back after as many switches as
	// switches back, but they interleave: the gauge is whatever is left,
	// within [0, goroutines].
	if got := value(t, reg, "admit_fallback_active", "limiter", "redis"); got < 0 || got > goroutines {
		t.Errorf("fallback_active = %v, want 0 to %d", got, goroutines)
	}
}

// TestNoAllocations checks that the methods the limiters call on every
// request do not allocate once their labels have been seen.
func TestNoAllocations(t *testing.T) {
	obs, _ := newObserver(t, promlimit.Config{})
	keyObs, _ := newObserver(t, promlimit.Config{KeyLabel: true, MaxSeries: 2})
	d := decision("api", "api", admit.KindRate, true)
	s := admit.StoreEvent{Limiter: "redis", Op: "decide", Keys: 4, Duration: time.Millisecond, Err: errors.New("x")}
	over := admit.DecisionEvent{Limiter: "api", Key: "k", Decision: admit.Decision{Rule: "api"}}
	long := decision("api", strings.Repeat("r", 1<<20), admit.KindRate, false)
	for i := range 3 {
		over.Key = fmt.Sprint("key-", i) // beyond the cap of 2
		keyObs.Decided(over)
	}
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Decided", func() { obs.Decided(d) }},
		{"Decided beyond the cap", func() { keyObs.Decided(over) }},
		{"Decided with a 1 MB rule", func() { obs.Decided(long) }},
		{"StoreCalled", func() { obs.StoreCalled(s) }},
		{"Tracked", func() { obs.Tracked("api", 3) }},
		{"Evicted", func() { obs.Evicted(admit.EvictionEvent{Limiter: "api", Keys: 1}) }},
	} {
		tc.f()
		if a := testing.AllocsPerRun(1000, tc.f); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", tc.name, a)
		}
	}
}

// sum returns the sum of the values of the named counter's series.
func sum(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// value returns the value of the series of the named counter or gauge
// that has the labels given (name, value, name, value...), failing t if
// there is none.
func value(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !slices.ContainsFunc(m.GetLabel(), func(lp *dto.LabelPair) bool {
					return lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}) {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s%q", name, labels)
	return 0
}
