package timeline

import (
	"testing"
	"time"

	"github.com/admit-go/admit/internal/algo"
)

func TestWall(t *testing.T) {
	for _, c := range []struct {
		t    time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(-1, 999_999_999), 0},
		{time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), 0},
		{time.Unix(1_700_000_000, 123), 1_700_000_000_000_000_123},
		{time.Unix(algo.MaxTime/1e9, 999_999_999), algo.MaxTime},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), algo.MaxTime},
	} {
		if got := Wall(c.t); got != c.want {
			t.Errorf("Wall(%v) = %d, want %d", c.t, got, c.want)
		}
	}
	// The monotonic reading is ignored.
	now := time.Now()
	if got, want := Wall(now), Wall(now.Round(0)); got != want {
		t.Errorf("Wall(now) = %d, without its monotonic reading %d", got, want)
	}
}
