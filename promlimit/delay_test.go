package promlimit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/promlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestDelayMetric: the delays of the admissions of the delay mode are
// observed by limiter and rule, never by key; the others are not.
func TestDelayMetric(t *testing.T) {
	obs, err := promlimit.New(prometheus.NewRegistry(), promlimit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Name: "api", Observer: obs}, Limit: admit.PerSecond(10).WithBurst(1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, key := range []string{"a", "a", "a", "b"} { // a: now, in 100ms, in 200ms; b: now
		r := admit.Request{Key: key, N: 1, At: admittest.At(0), MaxDelay: time.Second}
		if d, err := lim.Allow(ctx, r); err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
	}
	want := `
# HELP admit_delay_seconds Delay in seconds of the requests admitted with one (the delay mode: the wait for their slot), by limiter and rule; _count counts the requests delayed.
# TYPE admit_delay_seconds histogram
admit_delay_seconds_bucket{limiter="api",rule="api",le="0.001"} 0
admit_delay_seconds_bucket{limiter="api",rule="api",le="0.0025"} 0
admit_delay_seconds_bucket{limiter="api",rule="api",le="0.005"} 0
admit_delay_seconds_bucket{limiter="api",rule="api",le="0.01"} 0
admit_delay_seconds_bucket{limiter="api",rule="api",le="0.025"} 0
admit_delay_seconds_bucket{limiter="api",rule="api",le="0.05"} 0
admit_delay_seconds_bucket{limiter="api",rule="api",le="0.1"} 1
admit_delay_seconds_bucket{limiter="api",rule="api",le="0.25"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="0.5"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="1"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="2.5"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="5"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="10"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="30"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="60"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="120"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="300"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="600"} 2
admit_delay_seconds_bucket{limiter="api",rule="api",le="+Inf"} 2
admit_delay_seconds_sum{limiter="api",rule="api"} 0.30000000000000004
admit_delay_seconds_count{limiter="api",rule="api"} 2
`
	if err := testutil.CollectAndCompare(obs, strings.NewReader(want), "admit_delay_seconds"); err != nil {
		t.Error(err)
	}
}
