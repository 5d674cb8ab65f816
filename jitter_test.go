package admit_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

// fixedSource returns the same 64 bits every time.
type fixedSource uint64

func (s fixedSource) Uint64() uint64 { return uint64(s) }

func TestJitterBounds(t *testing.T) {
	refused := func(ra, reset time.Duration) admit.Decision {
		return admit.Decision{RetryAfter: ra, ResetAfter: reset, Limit: admit.PerSecond(1), Rule: "r"}
	}
	cases := []struct {
		name      string
		j         admit.Jitter
		d         admit.Decision
		low, high time.Duration // RetryAfter with the lowest and highest draw
	}{
		{"fraction", admit.Jitter{Fraction: 0.5}, refused(10*time.Second, 10*time.Second), 10 * time.Second, 15 * time.Second},
		{"capped", admit.Jitter{Fraction: 0.5, Max: time.Second}, refused(10*time.Second, 0), 10 * time.Second, 11 * time.Second},
		{"whole", admit.Jitter{Fraction: 1}, refused(3*time.Nanosecond, 0), 3, 6},
		{"above one clamps", admit.Jitter{Fraction: 7}, refused(time.Second, 0), time.Second, 2 * time.Second},
		{"floor of a tiny span", admit.Jitter{Fraction: 0.1}, refused(9, 0), 9, 9},
		{"off", admit.Jitter{}, refused(time.Second, 0), time.Second, time.Second},
		{"NaN is off", admit.Jitter{Fraction: math.NaN()}, refused(time.Second, 0), time.Second, time.Second},
		{"negative is off", admit.Jitter{Fraction: -1}, refused(time.Second, 0), time.Second, time.Second},
		{"admitted", admit.Jitter{Fraction: 1}, admit.Decision{Allowed: true, ResetAfter: time.Second}, 0, 0},
		{"never", admit.Jitter{Fraction: 1}, refused(admit.InfDuration, 0), admit.InfDuration, admit.InfDuration},
		{"zero wait", admit.Jitter{Fraction: 1}, refused(0, 0), 0, 0},
		{"saturates finite", admit.Jitter{Fraction: 1}, refused(admit.InfDuration-10, 0), admit.InfDuration - 10, admit.InfDuration - 1},
	}
	for _, c := range cases {
		for _, draw := range []struct {
			src  uint64
			want time.Duration
		}{{0, c.low}, {math.MaxUint64, c.high}} {
			j := c.j
			j.Source = fixedSource(draw.src)
			got := j.Apply(c.d)
			if got.RetryAfter != draw.want {
				t.Errorf("%s, draw %#x: RetryAfter %v, want %v", c.name, draw.src, got.RetryAfter, draw.want)
			}
			wantReset := c.d.ResetAfter
			if c.high != c.low { // jitter applies: no time reported is earlier than RetryAfter
				wantReset = max(c.d.ResetAfter, got.RetryAfter)
			}
			if got.ResetAfter != wantReset {
				t.Errorf("%s, draw %#x: ResetAfter %v, want %v", c.name, draw.src, got.ResetAfter, wantReset)
			}
			if got.Allowed != c.d.Allowed || got.Remaining != c.d.Remaining || got.Limit != c.d.Limit || got.Rule != c.d.Rule {
				t.Errorf("%s: Apply changed more than the times: %+v from %+v", c.name, got, c.d)
			}
		}
	}
}

// TestJitterSpread draws with a fixed seed: every draw lies in [t, t+j],
// never earlier than t, and the draws cover the interval (each tenth of it
// gets some).
func TestJitterSpread(t *testing.T) {
	const wait = 20 * time.Second
	j := admit.Jitter{Fraction: 0.25, Max: 4 * time.Second, Source: rand.NewPCG(1, 2)}
	var tenths [10]int
	for range 2000 {
		d := j.Apply(admit.Decision{RetryAfter: wait, ResetAfter: wait})
		if d.RetryAfter < wait || d.RetryAfter > wait+4*time.Second {
			t.Fatalf("RetryAfter %v outside [%v, %v]", d.RetryAfter, wait, wait+4*time.Second)
		}
		tenths[min(int((d.RetryAfter-wait)*10/(4*time.Second)), 9)]++
	}
	for i, n := range tenths {
		if n < 100 { // 200 expected in each; the seed is fixed, so this never flakes
			t.Errorf("tenth %d of the spread got %d draws of 2000: %v", i, n, tenths)
		}
	}
}

func ExampleJitter() {
	// Clients refused until a window resets in 10s are told to come back
	// in 10s to 11s (10%), instead of all at 10s. A fixed Source makes the
	// example's draw the middle of the interval.
	j := admit.Jitter{Fraction: 0.1, Max: time.Minute, Source: fixedSource(1 << 63)}
	d := j.Apply(admit.Decision{Limit: admit.PerMinute(100), RetryAfter: 10 * time.Second, ResetAfter: 10 * time.Second})
	fmt.Println(d.RetryAfter, d.ResetAfter)
	// Output:
	// 10.5s 10.5s
}
