package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/policy"
)

// TestServerPrefetchMetrics: a running server on Redis with a rule that
// prefetches exposes its admit_prefetch_* series, by rule, on /metrics;
// Close closes the engine (its blocks given back before the store).
func TestServerPrefetchMetrics(t *testing.T) {
	const src = `domain: api
rules:
  - {name: hot, match: user, rate: 1000/s burst 100, store: redis, prefetch: auto, failure: {policy: fail_closed, timeout: 5s}}
  - {name: strict, match: tenant, rate: 10/s, store: redis}
`
	rs := redistest.Standalone(t)
	prefix := strings.TrimSuffix(strings.ReplaceAll(redistest.Prefix(t), ":", "-"), "-")
	s := startRedisServer(t, rs, src, withEngine(policy.Config{KeyPrefix: prefix}))
	base := "http://" + s.HTTPAddr().String()
	admitted := 0
	for range 300 {
		resp, err := http.Post(base+"/v1/check", "application/json",
			strings.NewReader(`{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"u1"}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			admitted++
		}
	}
	if admitted == 0 {
		t.Fatal("nothing admitted")
	}
	_, body := get(t, base+"/metrics")
	for _, name := range []string{"blocks_total", "taken_events_total", "local_events_total", "strict_requests_total",
		"cached_denials_total", "early_denials_total", "held_events", "unspent_events", "refunded_events_total", "dropped_events_total", "keys"} {
		if !strings.Contains(string(body), "admit_prefetch_"+name+`{rule="hot"}`) {
			t.Errorf("/metrics lacks admit_prefetch_%s of rule hot", name)
		}
	}
	if strings.Contains(string(body), `admit_prefetch_blocks_total{rule="strict"}`) {
		t.Error("a rule that does not prefetch has prefetch series")
	}
	// Every check is one decision in admit_decisions_total, whether a
	// block or Redis decided it (a block's grant is not one).
	limiter := prefix + "hot"
	allowed, _ := metric(t, s.registry(), "admit_decisions_total", "limiter", limiter, "decision", "allowed")
	denied, _ := metric(t, s.registry(), "admit_decisions_total", "limiter", limiter, "decision", "denied")
	if allowed == 0 || allowed+denied != 300 {
		t.Errorf("admit_decisions_total{limiter=%q}: %v allowed, %v denied; want the 300 checks", limiter, allowed, denied)
	}
	for _, m := range []string{"admit_prefetch_blocks_total", "admit_prefetch_local_events_total", "admit_prefetch_keys"} {
		if v, ok := metric(t, s.registry(), m, "rule", "hot"); !ok || v == 0 {
			t.Errorf("%s{rule=hot} = %v, %v", m, v, ok)
		}
	}
	e := s.Engine()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var res policy.Result
	req := &policy.Request{Domain: "api", Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "user", Value: "u1"}}}}}
	if err := e.Check(context.Background(), req, nil, &res); !errors.Is(err, admit.ErrClosed) {
		t.Errorf("the engine after Close: %v", err)
	}
}
