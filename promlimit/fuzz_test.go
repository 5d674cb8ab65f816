package promlimit

import (
	"bytes"
	"testing"

	"github.com/admit-go/admit"
	"github.com/prometheus/client_golang/prometheus"
)

// FuzzEvents sends events whose label values come from the fuzzer (any
// bytes, any length) to an Observer with a small cap, and checks that it
// never panics, that every decision is counted once, that the cap holds,
// and that the registry (a pedantic one) accepts every series.
func FuzzEvents(f *testing.F) {
	f.Add([]byte("api\x00api\x00alice\x00api\x00api/burst\x00bob"), uint8(2), true)
	f.Add([]byte("\xff\xfe\x00r\x80\x00\x00\x00other\x00other"), uint8(1), false)
	f.Add(bytes.Repeat([]byte("x"), 300), uint8(0), true)
	f.Add([]byte("a\x00b\x00c\x00d\x00e\x00f\x00g\x00h\x00i\x00j\x00k\x00l"), uint8(3), true)
	f.Fuzz(func(t *testing.T, data []byte, max uint8, keyLabel bool) {
		reg := prometheus.NewPedanticRegistry()
		cap := int(max%8) + 1
		obs, err := New(reg, Config{MaxSeries: cap, KeyLabel: keyLabel})
		if err != nil {
			t.Fatal(err)
		}
		fields := bytes.Split(data, []byte{0})
		decisions := 0
		for i := 0; i+2 < len(fields) || i == 0; i += 3 {
			field := func(j int) string {
				if i+j < len(fields) {
					return string(fields[i+j])
				}
				return ""
			}
			limiter, rule, key := field(0), field(1), field(2)
			kind := admit.Kind(len(key) % 4)
			allowed := len(rule)%2 == 0
			obs.Decided(admit.DecisionEvent{Limiter: limiter, Key: key, N: int64(len(data)), Decision: admit.Decision{Allowed: allowed, Rule: rule, Kind: kind}})
			decisions++
			obs.StoreCalled(admit.StoreEvent{Limiter: limiter, Op: rule, Keys: len(key) - 1})
			obs.Tracked(limiter, len(rule)-1)
			obs.Evicted(admit.EvictionEvent{Limiter: limiter, Reason: admit.EvictReason(len(key)), Keys: len(rule) - 1})
			obs.FallbackChanged(admit.FallbackEvent{Limiter: rule, Active: allowed})
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("Gather: %v", err)
		}
		total := 0.0
		for _, mf := range mfs {
			if mf.GetName() == "admit_decisions_total" {
				for _, m := range mf.GetMetric() {
					total += m.GetCounter().GetValue()
				}
			}
		}
		if total != float64(decisions) {
			t.Errorf("%d decisions, %v counted", decisions, total)
		}
		for name, tab := range map[string]interface{ size() (int, int) }{
			"decisions": obs.dec, "store": obs.store, "tracked": obs.tracked, "evict": obs.evict, "fallback": obs.fallback,
		} {
			if _, own := tab.size(); own > cap {
				t.Errorf("%s: %d series of their own, cap %d", name, own, cap)
			}
		}
	})
}
