package admit_test

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
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
		{admit.PerSecond(10), 0, admit.Limit{}, admit.ErrInvalidConfig},
		{admit.PerSecond(10), -3, admit.Limit{}, admit.ErrInvalidConfig},
		{admit.Limit{Rate: -1, Period: time.Second}, 2, admit.Limit{}, admit.ErrInvalidLimit},
		{admit.Limit{Rate: 1, Period: 0}, 2, admit.Limit{}, admit.ErrInvalidLimit},
		{admit.PerSecond(math.MaxInt64 - 1), 2, admit.Limit{}, admit.ErrInvalidLimit}, // too fine to share
	} {
		got, err := tc.shared.Share(tc.instances)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) || got != tc.want {
			t.Errorf("%v.Share(%d) = %+v, %v; want %+v, %v", tc.shared, tc.instances, got, err, tc.want, tc.err)
		}
		if tc.err == admit.ErrInvalidConfig && !strings.Contains(err.Error(), "Limit.Share: invalid number of instances") {
			t.Errorf("%v.Share(%d): %v does not name the number of instances", tc.shared, tc.instances, err)
		}
		if err == nil {
			if verr := got.Validate(); verr != nil {
				t.Errorf("%v.Share(%d) = %v: %v", tc.shared, tc.instances, got, verr)
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
		got, err := shared.Share(n)
		if err != nil {
			// Only a share with a capacity beyond the domain may fail.
			if !errors.Is(err, admit.ErrInvalidLimit) {
				t.Fatalf("%v.Share(%d): %v", shared, n, err)
			}
			continue
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("%v.Share(%d) = %v: %v", shared, n, got, err)
		}
		b := shared.Burst
		if b == 0 {
			b = shared.Rate
		}
		if want := (b + int64(n) - 1) / int64(n); got.Burst != want {
			t.Fatalf("%v.Share(%d) = %+v: burst, want %d", shared, n, got, want)
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
					t.Fatalf("%v.Share(%d) = %v, rounded, but %v is exact and valid", shared, n, got, exact)
				}
			}
		default:
			t.Fatalf("%v.Share(%d) = %+v: not the shared rate divided by %d", shared, n, got, n)
		}
	}
}
