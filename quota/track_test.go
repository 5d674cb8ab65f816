package quota_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/admit-go/admit/quota"
)

// TestTrackedGrows: the number of keys is reported from New (0) and as it
// grows, with no eviction, lagging by an eighth at most, in a few reports
// rather than one per key.
func TestTrackedGrows(t *testing.T) {
	obs := &recorder{}
	q := newQuota(t, 10, quota.Day, quota.WithObserver(obs))
	if fmt.Sprint(obs.tracked) != "[0]" {
		t.Fatalf("after New: tracked %v, want [0]", obs.tracked)
	}
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const keys = 5000
	for i := 1; i <= keys; i++ {
		if _, err := q.AllowAt(context.Background(), d0, fmt.Sprint("k", i), 1); err != nil {
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
