package algo

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestCompile(t *testing.T) {
	const s = int64(time.Second)
	for _, c := range []struct {
		rate, period, burst int64
		want                Params
		err                 error
	}{
		{100, s, 0, Params{Mode: Normal, Burst: 100, Tn: 1e7, Td: 1, CapN: 1e9}, nil},
		{3, s, 2, Params{Mode: Normal, Burst: 2, Tn: 1e9, Td: 3, CapN: 2e9}, nil},
		{5000, 3600 * s, 50, Params{Mode: Normal, Burst: 50, Tn: 720e6, Td: 1, CapN: 36e9}, nil},
		{1e6, 86400 * s, 0, Params{Mode: Normal, Burst: 1e6, Tn: 86400e3, Td: 1, CapN: 86400e9}, nil},
		{1e10, s, 1e10, Params{Mode: Normal, Burst: 1e10, Tn: 1, Td: 10, CapN: 1e10}, nil},
		{7, 3 * s, 0, Params{Mode: Normal, Burst: 7, Tn: 3e9, Td: 7, CapN: 21e9}, nil},
		{math.MaxInt64, 0, 0, Params{Mode: Unlimited}, nil},
		{0, 0, 0, Params{Mode: Closed}, nil},
		{0, s, 0, Params{Mode: Closed}, nil},
		{0, s, 5, Params{}, ErrZeroBurst},
		{-1, s, 0, Params{}, ErrNegative},
		{1, -s, 0, Params{}, ErrNegative},
		{1, s, -1, Params{}, ErrNegative},
		{1, 0, 0, Params{}, ErrNoPeriod},
		{1, 40 * 365 * 86400 * s, 1, Params{}, ErrTooLong},
		{1, s, 1 << 40, Params{}, ErrTooLong},
		{math.MaxInt64 - 1, s, math.MaxInt64 - 1, Params{}, ErrTooFine},
		{1 << 62, math.MaxInt64, 2, Params{}, ErrTooFine},
		// 100003/day: CapN = 86400e9×100003 > 2^62 still fits.
		{100003, 86400 * s, 0, Params{Mode: Normal, Burst: 100003, Tn: 86400 * s, Td: 100003, CapN: 86400 * s * 100003}, nil},
	} {
		got, err := Compile(c.rate, c.period, c.burst)
		if !errors.Is(err, c.err) || (err == nil && got != c.want) {
			t.Errorf("Compile(%d, %d, %d) = %+v, %v; want %+v, %v", c.rate, c.period, c.burst, got, err, c.want, c.err)
		}
	}
}

func FuzzCompile(f *testing.F) {
	f.Add(int64(100), int64(time.Second), int64(0))
	f.Add(int64(3), int64(time.Second), int64(7))
	f.Add(int64(math.MaxInt64-1), int64(math.MaxInt64), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, rate, period, burst int64) {
		p, err := Compile(rate, period, burst)
		if err != nil || p.Mode != Normal {
			return
		}
		// The compiled form is exact: Tn/Td == period/rate, CapN = B×Tn.
		if p.Tn <= 0 || p.Td <= 0 || p.CapN <= 0 || p.CapN > MaxUnits {
			t.Fatalf("bad params %+v", p)
		}
		if mul64(uint64(p.Tn), uint64(rate)) != mul64(uint64(p.Td), uint64(period)) {
			t.Fatalf("Tn/Td = %d/%d != %d/%d", p.Tn, p.Td, period, rate)
		}
		if gcd(uint64(p.Tn), uint64(p.Td)) != 1 {
			t.Fatalf("not reduced: %+v", p)
		}
		if mul64(uint64(p.Burst), uint64(p.Tn)) != from64(uint64(p.CapN)) {
			t.Fatalf("CapN != B×Tn: %+v", p)
		}
		if p.CapN/p.Td > MaxSpan {
			t.Fatalf("span too long: %+v", p)
		}
	})
}
