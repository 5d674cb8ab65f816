package server

import (
	"context"
	"strings"
	"testing"

	"github.com/admit-go/admit/internal/enginehook"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/prefetch"
)

// TestFleetCountSizesBlocks: instances of admit serve on one Redis count
// one another (admit_instances), and the rules that prefetch size their
// blocks for the count: half the burst over the instances. An instance
// that shuts down leaves the count; instances under another key prefix
// are another fleet.
func TestFleetCountSizesBlocks(t *testing.T) {
	const src = `domain: api
rules:
  - {name: hot, match: user, rate: 1000/s burst 120, store: redis, prefetch: auto}
`
	rs := redistest.Standalone(t)
	prefix := strings.TrimSuffix(strings.ReplaceAll(redistest.Prefix(t), ":", "-"), "-")
	start := func(prefix string) *Server {
		return startRedisServer(t, rs, src, func(c *Config) { c.KeyPrefix = prefix })
	}
	a, b := start(prefix), start(prefix)
	other := start(prefix + "-other")
	ctx := context.Background()
	blocks := func(s *Server) (instances int, maxBlock int64) {
		enginehook.Prefetch(s.Engine(), func(_ string, st prefetch.Stats) { instances, maxBlock = st.Instances, st.MaxBlock })
		return
	}
	for _, s := range []*Server{a, b} {
		// A beat of each: both are counted whatever the order of the
		// beats their goroutines made at Start.
		s.fleet.beat(ctx)
	}
	for i, s := range []*Server{a, b} {
		n := s.fleet.beat(ctx)
		enginehook.SetInstances(s.Engine(), n)
		if inst, mb := blocks(s); n != 2 || inst != 2 || mb != 30 {
			t.Errorf("server %d: counts %d instances, sizes blocks for %d, at most %d; want 2, 2, 30 (120 / (2 × 2))", i, n, inst, mb)
		}
		if v, ok := metric(t, s.registry(), "admit_instances"); !ok || v != 2 {
			t.Errorf("server %d: admit_instances = %v, %v; want 2", i, v, ok)
		}
	}
	if n := other.fleet.beat(ctx); n != 1 {
		t.Errorf("a server under another key prefix counts %d instances; want 1", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	n := a.fleet.beat(ctx)
	enginehook.SetInstances(a.Engine(), n)
	if inst, mb := blocks(a); n != 1 || inst != 1 || mb != 60 {
		t.Errorf("after the other shut down: counts %d, sizes blocks for %d, at most %d; want 1, 1, 60", n, inst, mb)
	}
}
