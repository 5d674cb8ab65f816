package parity

import (
	"testing"
	"time"

	"github.com/admit-go/admit"
	"golang.org/x/time/rate"
)

// TestCancelOutOfOrderEstimate shows a limit of x/time/rate's rule for
// cancels, which admit shares: out of order, "the tokens later reservations
// were scheduled on" is an estimate, and can come short of what a
// reservation still held was scheduled on. At 1/s burst 4, both limiters
// end up with reservations of 1 and 4 to act at the same instant, 6s.
func TestCancelOutOfOrderEstimate(t *testing.T) {
	const ms = time.Millisecond
	// calls makes the calls through reserve, which reserves n at d and
	// returns the time to act and the cancel, and returns the times to act
	// of the two reservations held at the end.
	calls := func(reserve func(d time.Duration, n int) (time.Duration, func(time.Time))) [2]time.Duration {
		_, cancel0 := reserve(0, 4) // acts at 0
		_, cancel1 := reserve(0, 3) // at 3s
		cancel0(at(0))
		_, cancel2 := reserve(0, 3) // at 5s
		held, _ := reserve(0, 1)    // at 6s
		cancel2(at(0))
		_, cancel4 := reserve(0, 3) // at 7s: the latest
		cancel4(at(int64(875 * ms)))
		cancel1(at(int64(875 * ms))) // 2 of 3 back: as if nothing held acted after 4s
		last, _ := reserve(875*ms, 4)
		return [2]time.Duration{held, last}
	}
	x := rate.NewLimiter(1, 4)
	a, err := admit.NewTokenBucket(admit.PerSecond(1).WithBurst(4))
	if err != nil {
		t.Fatal(err)
	}
	xActs := calls(func(d time.Duration, n int) (time.Duration, func(time.Time)) {
		r := x.ReserveN(at(int64(d)), n)
		return d + r.DelayFrom(at(int64(d))), r.CancelAt
	})
	aActs := calls(func(d time.Duration, n int) (time.Duration, func(time.Time)) {
		r := a.ReserveN(at(int64(d)), n)
		return d + r.DelayFrom(at(int64(d))), r.CancelAt
	})
	want := [2]time.Duration{6 * time.Second, 6 * time.Second}
	if xActs != want || aActs != want {
		t.Errorf("times to act of the 1 and the 4 held: x/time/rate %v, admit %v, want %v", xActs, aActs, want)
	}
}
