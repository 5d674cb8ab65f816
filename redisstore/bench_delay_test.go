package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/redisstore"
)

// BenchmarkDelayMode: a request that does not wait, on Redis's clock, with
// the delay mode off (MaxDelay 0) and on (MaxDelay 1s): one round trip
// each, the script's fast path either way.
func BenchmarkDelayMode(b *testing.B) {
	lim, err := newStore(b, standalone(b), redisstore.Config{}).Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: "bench"}, Limit: admit.PerSecond(1e9)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, mode := range []struct {
		name     string
		maxDelay time.Duration
	}{{"off", 0}, {"on", time.Second}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, err := lim.Allow(ctx, admit.Request{Key: "key-42", N: 1, MaxDelay: mode.maxDelay}); err != nil || d.Delay != 0 || !d.Allowed {
					b.Fatalf("%+v %v", d, err)
				}
			}
		})
	}
}
