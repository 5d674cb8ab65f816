package defaults

import (
	"math"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

type fixedClock struct{ admit.Clock }

func (fixedClock) Now() time.Time { return time.Unix(7, 0) }

func TestClock(t *testing.T) {
	if got := Clock(admit.Options{}); got != admit.SystemClock {
		t.Errorf("Clock of the zero Options = %v, want admit.SystemClock", got)
	}
	c := fixedClock{admit.SystemClock}
	if got := Clock(admit.Options{Clock: c}); got.Now() != time.Unix(7, 0) {
		t.Errorf("Clock kept the given clock? Now() = %v", got.Now())
	}
}

func TestJitterProblem(t *testing.T) {
	for _, c := range []struct {
		j  admit.Jitter
		ok bool
	}{
		{admit.Jitter{}, true},
		{admit.Jitter{Fraction: 1, Max: time.Second}, true},
		{admit.Jitter{Fraction: 1.5}, false},
		{admit.Jitter{Fraction: -0.1}, false},
		{admit.Jitter{Fraction: math.NaN()}, false},
		{admit.Jitter{Fraction: 0.1, Max: -1}, false},
	} {
		if got := JitterProblem(c.j); (got == "") != c.ok {
			t.Errorf("JitterProblem(%+v) = %q, want ok=%v", c.j, got, c.ok)
		}
	}
}
