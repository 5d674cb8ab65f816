package compose_test

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

func TestShare(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		shared    admit.Limit
		instances int
		want      admit.Limit
		err       error
	}{
		{admit.PerSecond(100), 1, admit.PerSecond(100), nil},
		{admit.PerSecond(100), 4, admit.PerSecond(25), nil},
		// Exact rates: 10/3 per second is 10 per 3s.
		{admit.PerSecond(10), 3, admit.Limit{Rate: 10, Period: 3 * time.Second, Burst: 4}, nil},
		{admit.PerMinute(5), 4, admit.Limit{Rate: 5, Period: 4 * time.Minute, Burst: 2}, nil},
		{admit.PerSecond(6), 4, admit.Limit{Rate: 3, Period: 2 * time.Second, Burst: 2}, nil},
		// Burst 0 stands for Rate.
		{admit.Limit{Rate: 100, Period: time.Second}, 3, admit.Limit{Rate: 100, Period: 3 * time.Second, Burst: 34}, nil},
		// The burst is rounded up, and at least 1.
		{admit.PerSecond(100).WithBurst(10), 3, admit.Limit{Rate: 100, Period: 3 * time.Second, Burst: 4}, nil},
		{admit.PerSecond(10).WithBurst(2), 5, admit.Limit{Rate: 2, Period: time.Second, Burst: 1}, nil},
		{admit.PerSecond(3), 1000, admit.Limit{Rate: 3, Period: 1000 * time.Second, Burst: 1}, nil},
		// More instances than events: still an exact rate.
		{admit.PerDay(1), 7, admit.Limit{Rate: 1, Period: 7 * day, Burst: 1}, nil},
		// The exact form's capacity would exceed 36 years: rate rounded up.
		{admit.PerDay(1), 20000, admit.PerDay(1), nil},
		// Period×instances overflows a Duration: rate rounded up.
		{admit.Limit{Rate: 1e9, Period: day}, 1000003, admit.Limit{Rate: 1000, Period: day, Burst: 1000}, nil},
		// Huge rates.
		{admit.PerSecond(1e18), 3, admit.Limit{Rate: 1e18, Period: 3 * time.Second, Burst: 333333333333333334}, nil},
		{admit.PerSecond(1e18), 1 << 20, admit.Limit{Rate: 1e18 / (1 << 18), Period: 4 * time.Second, Burst: 953674316407}, nil},
		{admit.Limit{Rate: math.MaxInt64 - 1, Period: time.Hour, Burst: 1}, 2, admit.Limit{Rate: math.MaxInt64/2 - 0, Period: time.Hour, Burst: 1}, nil},
		{admit.Every(time.Nanosecond).WithBurst(1), 2, admit.Limit{Rate: 1, Period: 2, Burst: 1}, nil},
		// Unlimited and zero limits are shared as they are.
		{admit.Unlimited, 5, admit.Unlimited, nil},
		{admit.Limit{}, 5, admit.Limit{}, nil},
		// Errors.
		{admit.PerSecond(10), 0, admit.Limit{}, compose.ErrInvalidInstances},
		{admit.PerSecond(10), -3, admit.Limit{}, compose.ErrInvalidInstances},
		{admit.Limit{Rate: -1, Period: time.Second}, 2, admit.Limit{}, admit.ErrInvalidLimit},
		{admit.Limit{Rate: 1, Period: 0}, 2, admit.Limit{}, admit.ErrInvalidLimit},
		{admit.PerSecond(math.MaxInt64 - 1), 2, admit.Limit{}, admit.ErrInvalidLimit}, // too fine to share
	} {
		got, err := compose.Share(tc.shared, tc.instances)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) || got != tc.want {
			t.Errorf("Share(%v, %d) = %+v, %v; want %+v, %v", tc.shared, tc.instances, got, err, tc.want, tc.err)
		}
		if err == nil {
			if verr := got.Validate(); verr != nil {
				t.Errorf("Share(%v, %d) = %v: %v", tc.shared, tc.instances, got, verr)
			}
		}
	}
}

// TestShareProperties checks random shares: the rate is the shared rate
// divided exactly, or rounded up when the exact form cannot be
// represented, and the burst is rounded up.
func TestShareProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	periods := []time.Duration{time.Nanosecond, time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}
	for range 20000 {
		rate := r.Int64N(1<<uint(r.IntN(62))) + 1
		shared := admit.Limit{Rate: rate, Period: periods[r.IntN(len(periods))] * time.Duration(r.IntN(10)+1)}
		if r.IntN(2) == 0 {
			shared.Burst = r.Int64N(rate*2) + 1
		}
		if shared.Validate() != nil {
			continue
		}
		n := r.IntN(1<<uint(r.IntN(21))) + 1
		got, err := compose.Share(shared, n)
		if err != nil {
			// Only a share with a capacity beyond the domain may fail.
			if !errors.Is(err, admit.ErrInvalidLimit) {
				t.Fatalf("Share(%v, %d): %v", shared, n, err)
			}
			continue
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("Share(%v, %d) = %v: %v", shared, n, got, err)
		}
		b := shared.Burst
		if b == 0 {
			b = shared.Rate
		}
		if want := (b + int64(n) - 1) / int64(n); got.Burst != want {
			t.Fatalf("Share(%v, %d) = %+v: burst, want %d", shared, n, got, want)
		}
		// got.Rate/got.Period against shared.Rate/(n×shared.Period).
		lhs := new(big.Int).Mul(big.NewInt(got.Rate), new(big.Int).Mul(big.NewInt(int64(n)), big.NewInt(int64(shared.Period))))
		rhs := new(big.Int).Mul(big.NewInt(shared.Rate), big.NewInt(int64(got.Period)))
		switch c := lhs.Cmp(rhs); {
		case c == 0:
		case c > 0 && got.Period == shared.Period && got.Rate == (shared.Rate+int64(n)-1)/int64(n):
			// Rounded up: only when the exact form does not fit.
			g := new(big.Int).GCD(nil, nil, big.NewInt(shared.Rate), big.NewInt(int64(n))).Int64()
			m := int64(n) / g
			if int64(shared.Period) <= math.MaxInt64/m {
				exact := admit.Limit{Rate: shared.Rate / g, Period: shared.Period * time.Duration(m), Burst: got.Burst}
				if exact.Validate() == nil {
					t.Fatalf("Share(%v, %d) = %v, rounded, but %v is exact and valid", shared, n, got, exact)
				}
			}
		default:
			t.Fatalf("Share(%v, %d) = %+v: not the shared rate divided by %d", shared, n, got, n)
		}
	}
}

func TestLocalShare(t *testing.T) {
	if _, err := compose.LocalShare(admit.AlgGCRA, admit.PerSecond(10), 0); !errors.Is(err, compose.ErrInvalidInstances) {
		t.Errorf("0 instances: %v", err)
	}
	if _, err := compose.LocalShare(admit.Algorithm(99), admit.PerSecond(10), 2); !errors.Is(err, admit.ErrUnknownAlgorithm) {
		t.Errorf("unknown algorithm: %v", err)
	}
	for _, alg := range admit.Algorithms() {
		lim, err := compose.LocalShare(alg, admit.PerMinute(100), 4, keyed.WithName("local"))
		if err != nil {
			t.Fatalf("%v: %v", alg, err)
		}
		if want := (admit.Limit{Rate: 25, Period: time.Minute, Burst: 25}); lim.Limit() != want {
			t.Errorf("%v: limit %v, want %v", alg, lim.Limit(), want)
		}
		// Each instance admits its share at once.
		admitted := 0
		for range 100 {
			if d, _ := lim.AllowAt(ctx, admittest.Epoch, "k", 1); d.Allowed {
				admitted++
			}
		}
		if admitted != 25 {
			t.Errorf("%v: admitted %d at once, want 25", alg, admitted)
		}
	}
}

func TestLiveShare(t *testing.T) {
	if _, err := compose.LiveShare(admit.AlgGCRA, admit.PerSecond(10), nil); !errors.Is(err, compose.ErrInvalidInstances) {
		t.Errorf("nil live: %v", err)
	}
	if _, err := compose.LiveShare(admit.AlgGCRA, admit.Limit{Rate: -1}, func() int { return 1 }); !errors.Is(err, admit.ErrInvalidLimit) {
		t.Errorf("invalid limit: %v", err)
	}
	clk := admittest.NewManualClock(admittest.Epoch)
	var live atomic.Int64
	s, err := compose.LiveShare(admit.AlgGCRA, admit.PerSecond(12), func() int { return int(live.Load()) },
		keyed.WithClock(clk), keyed.WithName("local"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		live int64
		want admit.Limit
	}{
		{0, admit.PerSecond(12)}, // below 1 counts as 1
		{-5, admit.PerSecond(12)},
		{1, admit.PerSecond(12)},
		{4, admit.PerSecond(3)},
		{5, admit.Limit{Rate: 12, Period: 5 * time.Second, Burst: 3}},
		{2, admit.PerSecond(6)},
	} {
		live.Store(tc.live)
		if got := s.Limit(); got != tc.want {
			t.Errorf("live %d: limit %v, want %v", tc.live, got, tc.want)
		}
		key := "k" + time.Duration(tc.live).String()
		admitted := 0
		for range 20 {
			d, err := s.Allow(ctx, key, 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				admitted++
			}
			if d.Rule != "local" || d.Limit != tc.want {
				t.Errorf("live %d: decision %+v", tc.live, d)
			}
		}
		if admitted != int(tc.want.Burst) && tc.live > 0 {
			t.Errorf("live %d: admitted %d, want %d", tc.live, admitted, tc.want.Burst)
		}
	}
	if s.Limiter().Len() == 0 {
		t.Errorf("Limiter() holds no keys")
	}

	// The count may change under concurrent calls.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 500 {
				live.Store(int64(i*j%7 + 1))
				if _, err := s.Allow(ctx, "k", 1); err != nil {
					t.Errorf("Allow: %v", err)
				}
			}
		})
	}
	wg.Wait()
}
