package leases

import (
	"context"
	"testing"
	"time"
)

func TestTTL(t *testing.T) {
	ctx := context.Background()
	if ttl, ok := TTL(ctx); ok || ttl != 0 {
		t.Errorf("bare context: %v, %v", ttl, ok)
	}
	c := WithTTL(ctx, 90*time.Second)
	if ttl, ok := TTL(c); !ok || ttl != 90*time.Second {
		t.Errorf("WithTTL(90s): %v, %v", ttl, ok)
	}
	if ttl, ok := TTL(context.WithoutCancel(c)); !ok || ttl != 90*time.Second {
		t.Errorf("a child context: %v, %v", ttl, ok)
	}
	for _, bad := range []time.Duration{0, -time.Second} {
		if ttl, ok := TTL(WithTTL(ctx, bad)); ok {
			t.Errorf("WithTTL(%v): %v, %v; want none", bad, ttl, ok)
		}
	}
}
