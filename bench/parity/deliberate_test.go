package parity

import (
	"testing"
	"time"

	"github.com/admit-go/admit"
	"golang.org/x/time/rate"
)

// The calls of issue 13, where admit once answered differently: now the
// same.

func both(t *testing.T, r float64, burst int) (*rate.Limiter, *admit.TokenBucket) {
	t.Helper()
	a, err := admit.NewTokenBucket(admit.Limit{Rate: int64(r), Period: time.Second, Burst: int64(burst)})
	if err != nil {
		t.Fatal(err)
	}
	return rate.NewLimiter(rate.Limit(r), burst), a
}

func sameTokens(t *testing.T, x *rate.Limiter, a *admit.TokenBucket, ns int64, want float64) {
	t.Helper()
	if xv, av := x.TokensAt(at(ns)), a.TokensAt(at(ns)); xv != want || av != want {
		t.Errorf("tokens at %v: x/time/rate %v, admit %v, want %v", time.Duration(ns), xv, av, want)
	}
}

func TestIssue13(t *testing.T) {
	s := int64(time.Second)
	// AllowN(now, 0) while reservations hold the bucket below zero.
	x, a := both(t, 1, 1)
	x.ReserveN(at(0), 1)
	a.ReserveN(at(0), 1)
	x.ReserveN(at(0), 1)
	a.ReserveN(at(0), 1)
	if xb, ab := x.AllowN(at(0), 0), a.AllowN(at(0), 0); xb || ab {
		t.Errorf("AllowN(0) in debt: x/time/rate %v, admit %v, want false", xb, ab)
	}
	if xb, ab := x.AllowN(at(s), 0), a.AllowN(at(s), 0); !xb || !ab {
		t.Errorf("AllowN(0) back at zero: x/time/rate %v, admit %v, want true", xb, ab)
	}

	// ReserveN(now, 3) then CancelAt(now), the reservation's time to act.
	x, a = both(t, 1, 5)
	xr, ar := x.ReserveN(at(0), 3), a.ReserveN(at(0), 3)
	xr.CancelAt(at(0))
	ar.CancelAt(at(0))
	sameTokens(t, x, a, 0, 5)

	// Several cancels out of order.
	x, a = both(t, 1, 3)
	x.ReserveN(at(0), 3)
	a.ReserveN(at(0), 3)
	xr1, ar1 := x.ReserveN(at(0), 3), a.ReserveN(at(0), 3)
	xr2, ar2 := x.ReserveN(at(0), 3), a.ReserveN(at(0), 3)
	x.ReserveN(at(0), 1)
	a.ReserveN(at(0), 1)
	xr2.CancelAt(at(0))
	ar2.CancelAt(at(0))
	xr1.CancelAt(at(0))
	ar1.CancelAt(at(0))
	sameTokens(t, x, a, 0, -5)
}

// The deliberate differences (TokenBucket's documentation lists them), each
// shown on both limiters. Those marked "over the limit" let x/time/rate's
// caller take more than the limit allows.

// TestBackwards: over the limit. x/time/rate moves its clock back to an
// earlier instant and refills the interval again: at 1/s burst 1 it admits
// two events at 10s.
func TestBackwards(t *testing.T) {
	s := int64(time.Second)
	x, a := both(t, 1, 1)
	var got [2][3]bool
	for i, lim := range []interface {
		AllowN(time.Time, int) bool
	}{x, a} {
		got[i] = [3]bool{lim.AllowN(at(10*s), 1), lim.AllowN(at(5*s), 0), lim.AllowN(at(10*s), 1)}
	}
	if got[0] != [3]bool{true, true, true} || got[1] != [3]bool{true, true, false} {
		t.Errorf("x/time/rate %v (want 3 × true), admit %v (want the second event refused)", got[0], got[1])
	}
}

// TestDoubleCancel: over the limit. x/time/rate gives a cancelled
// reservation back again on every CancelAt, up to the burst: with 5 events
// taken at 0 under burst 5, it admits 5 more at 0.
func TestDoubleCancel(t *testing.T) {
	x, a := both(t, 1, 5)
	x.ReserveN(at(0), 5)
	a.ReserveN(at(0), 5)
	xr, ar := x.ReserveN(at(0), 5), a.ReserveN(at(0), 5)
	for range 2 {
		xr.CancelAt(at(0))
		ar.CancelAt(at(0))
	}
	if xb, ab := x.AllowN(at(0), 5), a.AllowN(at(0), 5); !xb || ab {
		t.Errorf("AllowN(5) after two cancels: x/time/rate %v (want true), admit %v (want false)", xb, ab)
	}
}

// TestCancelGivesBackAtMostN: over the limit. After cancels out of order,
// x/time/rate can give a reservation back more than it took: here 2.875
// tokens for 1, so that at 1/s burst 3 it admits 5 events within 1.5s,
// where the limit admits at most 3 + 1.5.
func TestCancelGivesBackAtMostN(t *testing.T) {
	ms := int64(time.Millisecond)
	x, a := both(t, 1, 3)
	type lim interface {
		AllowN(time.Time, int) bool
		TokensAt(time.Time) float64
	}
	cancel := func(l lim, r0, r1 func(time.Time)) (float64, bool) {
		r0(at(1500 * ms))
		l.AllowN(at(1500*ms), 0)
		r1(at(1875 * ms))
		return l.TokensAt(at(1875 * ms)), l.AllowN(at(1875*ms), 3)
	}
	x.AllowN(at(375*ms), 2)
	a.AllowN(at(375*ms), 2)
	xr0, ar0 := x.ReserveN(at(375*ms), 3), a.ReserveN(at(375*ms), 3)
	xr1, ar1 := x.ReserveN(at(1500*ms), 1), a.ReserveN(at(1500*ms), 1)
	xv, xb := cancel(x, xr0.CancelAt, xr1.CancelAt)
	av, ab := cancel(a, ar0.CancelAt, ar1.CancelAt)
	if xv != 3 || !xb || av != 1.5 || ab {
		t.Errorf("tokens and AllowN(3) at 1.875s: x/time/rate %v %v (want 3 true), admit %v %v (want 1.5 false)", xv, xb, av, ab)
	}
}

// TestCancelUnderInf: over the limit. A reservation made under an
// unlimited limit took nothing; cancelled once the limit is finite,
// x/time/rate gives its n tokens back anyway.
func TestCancelUnderInf(t *testing.T) {
	x, a := both(t, 1, 5)
	x.AllowN(at(0), 5)
	a.AllowN(at(0), 5)
	x.SetLimitAt(at(0), rate.Inf)
	if err := a.SetLimitAt(at(0), admit.Unlimited.WithBurst(5)); err != nil {
		t.Fatal(err)
	}
	xr, ar := x.ReserveN(at(0), 3), a.ReserveN(at(0), 3)
	x.SetLimitAt(at(0), 1)
	if err := a.SetLimitAt(at(0), admit.PerSecond(1).WithBurst(5)); err != nil {
		t.Fatal(err)
	}
	xr.CancelAt(at(0))
	ar.CancelAt(at(0))
	if xv, av := x.TokensAt(at(0)), a.TokensAt(at(0)); xv != 3 || av != 0 {
		t.Errorf("tokens: x/time/rate %v (want 3), admit %v (want 0)", xv, av)
	}
}

// TestNegativeN: over the limit. x/time/rate admits a negative n and adds
// the tokens.
func TestNegativeN(t *testing.T) {
	x, a := both(t, 1, 5)
	x.AllowN(at(0), 5)
	a.AllowN(at(0), 5)
	if xb, ab := x.AllowN(at(0), -3), a.AllowN(at(0), -3); !xb || ab {
		t.Errorf("AllowN(-3): x/time/rate %v (want true), admit %v (want false)", xb, ab)
	}
	if xb, ab := x.AllowN(at(0), 3), a.AllowN(at(0), 3); !xb || ab {
		t.Errorf("AllowN(3) after: x/time/rate %v (want true), admit %v (want false)", xb, ab)
	}
}

// TestZeroLimitReserveZero: under a zero limit with the tokens below zero,
// which it never refills, x/time/rate's ReserveN(now, 0) is OK with an
// infinite delay; admit's is not OK (its delay is infinite too).
func TestZeroLimitReserveZero(t *testing.T) {
	x, a := both(t, 1, 1)
	x.ReserveN(at(0), 1)
	a.ReserveN(at(0), 1)
	x.ReserveN(at(0), 1)
	a.ReserveN(at(0), 1)
	x.SetLimitAt(at(0), 0)
	x.SetBurstAt(at(0), 0)
	if err := a.SetLimitAt(at(0), admit.Limit{}); err != nil {
		t.Fatal(err)
	}
	xr, ar := x.ReserveN(at(0), 0), a.ReserveN(at(0), 0)
	if !xr.OK() || xr.DelayFrom(at(0)) != rate.InfDuration || ar.OK() || ar.DelayFrom(at(0)) != admit.InfDuration {
		t.Errorf("ReserveN(0): x/time/rate %v %v (want OK, infinite), admit %v %v (want not OK, infinite)",
			xr.OK(), xr.DelayFrom(at(0)), ar.OK(), ar.DelayFrom(at(0)))
	}
}

// TestRounding: x/time/rate rounds its delays down to whole nanoseconds;
// admit's are exact and rounded up. At 3/s, the second event's wait is
// 333333333⅓ns: x/time/rate admits it at 333333333ns, before its token is
// whole; admit at 333333334ns.
func TestRounding(t *testing.T) {
	x, a := both(t, 3, 1)
	x.AllowN(at(0), 1)
	a.AllowN(at(0), 1)
	xr, ar := x.ReserveN(at(0), 1), a.ReserveN(at(0), 1)
	if xd, ad := xr.DelayFrom(at(0)), ar.DelayFrom(at(0)); xd != 333333333 || ad != 333333334 {
		t.Errorf("delay: x/time/rate %d (want 333333333), admit %d (want 333333334)", xd, ad)
	}
	x, a = both(t, 3, 1)
	x.AllowN(at(0), 1)
	a.AllowN(at(0), 1)
	if xb, ab := x.AllowN(at(333333333), 1), a.AllowN(at(333333333), 1); !xb || ab {
		t.Errorf("AllowN at 333333333ns: x/time/rate %v (want true), admit %v (want false)", xb, ab)
	}
}
