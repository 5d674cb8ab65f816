package admit

import (
	"testing"
	"time"
)

// The TokenBucket answers as golang.org/x/time/rate's Limiter with the same
// rate and burst (bench/parity compares the two on long random sequences).
// These tests pin the cases where it once did not, with explicit instants,
// and the deliberate differences, with what x/time/rate v0.15.0 answers in
// the comments.

func newTB(t *testing.T, l Limit) *TokenBucket {
	t.Helper()
	b, err := NewTokenBucket(l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantTokens(t *testing.T, b *TokenBucket, now time.Time, want float64) {
	t.Helper()
	if got := b.TokensAt(now); got != want {
		t.Fatalf("TokensAt(%v) = %v, want %v", now.Sub(epoch), got, want)
	}
}

// TestTokenBucketPeekInDebt: AllowN(now, 0) is false while reservations hold
// the bucket below zero, and true again once it is back to zero.
func TestTokenBucketPeekInDebt(t *testing.T) {
	b := newTB(t, PerSecond(1).WithBurst(2))
	b.ReserveN(epoch, 2)
	r := b.ReserveN(epoch, 2) // tokens -2: acts at 2s
	if d := r.DelayFrom(epoch); d != 2*time.Second {
		t.Fatalf("delay %v, want 2s", d)
	}
	for _, c := range []struct {
		at    time.Duration
		allow bool
		retry time.Duration
	}{
		{0, false, 2 * time.Second},
		{time.Second, false, time.Second},
		{2*time.Second - 1, false, 1},
		{2 * time.Second, true, 0},
	} {
		now := at(c.at)
		if got := b.AllowN(now, 0); got != c.allow {
			t.Errorf("AllowN(%v, 0) = %v, want %v", c.at, got, c.allow)
		}
		if d := b.DecideN(now, 0); d.Allowed != c.allow || d.RetryAfter != c.retry || d.Remaining != 0 {
			t.Errorf("DecideN(%v, 0) = %+v, want allowed %v, retry %v", c.at, d, c.allow, c.retry)
		}
	}
	// A reservation of 0 waits for the bucket to be back at zero too.
	b2 := newTB(t, PerSecond(1).WithBurst(2))
	b2.ReserveN(epoch, 2)
	b2.ReserveN(epoch, 1)
	if r := b2.ReserveN(epoch, 0); !r.OK() || r.DelayFrom(epoch) != time.Second {
		t.Errorf("ReserveN(0) in debt: ok %v delay %v, want true 1s", r.OK(), r.DelayFrom(epoch))
	}
}

// TestTokenBucketCancelAtTimeToAct: a reservation cancelled at its time to
// act, that instant included, gives its tokens back.
func TestTokenBucketCancelAtTimeToAct(t *testing.T) {
	b := newTB(t, PerSecond(1).WithBurst(5))
	r := b.ReserveN(epoch, 3) // time to act: now
	wantTokens(t, b, epoch, 2)
	r.CancelAt(epoch)
	wantTokens(t, b, epoch, 5)

	// Delayed: to act at 2s. At 2s it gives back all 3; 1ns later, nothing.
	for _, c := range []struct {
		cancel time.Duration
		want   float64
	}{{2 * time.Second, 2}, {2*time.Second + 1, 1e-9}} {
		b := newTB(t, PerSecond(1).WithBurst(2))
		b.ReserveN(epoch, 2)
		r := b.ReserveN(epoch, 2)
		if !r.TimeToAct().Equal(at(2 * time.Second)) {
			t.Fatalf("time to act %v", r.TimeToAct().Sub(epoch))
		}
		r.CancelAt(at(c.cancel))
		wantTokens(t, b, at(c.cancel), c.want)
	}
}

// TestTokenBucketCancelOutOfOrder: cancelling reservations other than the
// latest gives back each one's tokens less those the limit refills between
// its time to act and the latest time to act.
func TestTokenBucketCancelOutOfOrder(t *testing.T) {
	// 1 per second, burst 3.
	b := newTB(t, PerSecond(1).WithBurst(3))
	b.ReserveN(epoch, 3)        // acts at 0
	r1 := b.ReserveN(epoch, 3)  // at 3s
	r2 := b.ReserveN(epoch, 3)  // at 6s
	b.ReserveN(epoch, 1)        // at 7s: the latest
	r2.CancelAt(epoch)          // 3 - (7s-6s)×1/s = 2 back
	wantTokens(t, b, epoch, -5) // was -7
	r1.CancelAt(epoch)          // 3 - (7s-3s)×1/s < 0: nothing back
	wantTokens(t, b, epoch, -5)

	// 1 per second, burst 4, at 1s.
	b = newTB(t, PerSecond(1).WithBurst(4))
	b.ReserveN(epoch, 3) // acts at 0; 2 tokens at 1s
	t1 := at(time.Second)
	r1 = b.ReserveN(t1, 4) // at 3s
	r2 = b.ReserveN(t1, 2) // at 5s
	b.ReserveN(t1, 1)      // at 6s: the latest
	r1.CancelAt(t1)        // 4 - 3 = 1 back
	wantTokens(t, b, t1, -4)
	r2.CancelAt(t1) // 2 - 1 = 1 back
	wantTokens(t, b, t1, -3)

	// The latest reservation gives back all it took, and the one before
	// it, scheduled in its debt, becomes the latest.
	b = newTB(t, PerSecond(1).WithBurst(1))
	b.ReserveN(epoch, 1)
	r1 = b.ReserveN(epoch, 1) // at 1s
	r2 = b.ReserveN(epoch, 1) // at 2s
	r2.CancelAt(epoch)
	r1.CancelAt(epoch)
	wantTokens(t, b, epoch, 0)
}

// TestTokenBucketCancelGivesBackAtMostN: after cancels out of order, a
// reservation's tokens less "those later reservations relied on" can come
// to more than it took; the bucket gives back only what it took. Here
// x/time/rate gives back 2.875 tokens for a reservation of 1, fills the
// bucket, and admits 5 events within 1.5s under 1/s burst 3, where the
// limit admits at most 4.
func TestTokenBucketCancelGivesBackAtMostN(t *testing.T) {
	b := newTB(t, PerSecond(1).WithBurst(3))
	ms := time.Millisecond
	if !b.AllowN(at(375*ms), 2) { // 1 left
		t.Fatal("first AllowN refused")
	}
	r0 := b.ReserveN(at(375*ms), 3)  // -2: acts at 2.375s
	r1 := b.ReserveN(at(1500*ms), 1) // -1.875: acts at 3.375s, the latest
	r0.CancelAt(at(1500 * ms))       // 3 - 1 = 2 back: 0.125
	wantTokens(t, b, at(1500*ms), 0.125)
	if !b.AllowN(at(1500*ms), 0) { // the latest time to act is now 1.5s
		t.Fatal("AllowN(0) refused")
	}
	r1.CancelAt(at(1875 * ms)) // 1 back, where x/time/rate gives 2.875
	wantTokens(t, b, at(1875*ms), 1.5)
	if b.AllowN(at(1875*ms), 3) { // x/time/rate: true
		t.Error("AllowN(3) allowed: 5 events within 1.5s")
	}
}

// TestTokenBucketDeliberateDifferences pins the answers that differ from
// x/time/rate's on purpose, each of which would let a caller take more than
// the limit.
func TestTokenBucketDeliberateDifferences(t *testing.T) {
	// Time going backwards neither refills nor drains. x/time/rate moves
	// its clock back to 5s on AllowN(5s, 0), then refills 5s..10s again
	// and admits a second event at 10s.
	b := newTB(t, PerSecond(1).WithBurst(1))
	s := time.Second
	if !b.AllowN(at(10*s), 1) || !b.AllowN(at(5*s), 0) || b.AllowN(at(10*s), 1) {
		t.Error("time going backwards refilled the bucket")
	}
	if b.AllowN(at(5*s), 1) { // judged at 10s
		t.Error("an earlier instant was judged as itself")
	}
	if r := b.ReserveN(at(5*s), 1); r.DelayFrom(at(5*s)) != 6*s {
		t.Errorf("reservation at an earlier instant: delay %v, want 6s (to act at 11s)", r.DelayFrom(at(5*s)))
	}

	// Cancelling twice gives back once. x/time/rate gives back again, up to
	// the burst: 5 more events at once.
	b = newTB(t, PerSecond(1).WithBurst(5))
	b.ReserveN(epoch, 5)
	r := b.ReserveN(epoch, 5)
	r.CancelAt(epoch)
	r.CancelAt(epoch)
	wantTokens(t, b, epoch, 0)

	// A negative n is refused. x/time/rate admits AllowN(now, -3) and adds
	// 3 tokens.
	b = newTB(t, PerSecond(1).WithBurst(5))
	b.AllowN(epoch, 5)
	if b.AllowN(epoch, -3) || b.ReserveN(epoch, -3).OK() {
		t.Error("negative n allowed")
	}
	wantTokens(t, b, epoch, 0)

	// A reservation made under an unlimited limit took nothing and gives
	// nothing back. x/time/rate gives back its n once the limit is finite.
	b = newTB(t, PerSecond(1).WithBurst(5))
	b.AllowN(epoch, 5)
	mustSet(t, b, epoch, Unlimited.WithBurst(5))
	r = b.ReserveN(epoch, 3)
	mustSet(t, b, epoch, PerSecond(1).WithBurst(5))
	r.CancelAt(epoch)
	wantTokens(t, b, epoch, 0)
}

func mustSet(t *testing.T, b *TokenBucket, now time.Time, l Limit) {
	t.Helper()
	if err := b.SetLimitAt(now, l); err != nil {
		t.Fatal(err)
	}
}

// TestTokenBucketLimitChanges: the tokens, debts included, carry over
// through zero and unlimited limits as in x/time/rate: a zero limit holds
// them (at most zero) without refilling; an unlimited one is full once any
// time has passed; and reservations can still be cancelled.
func TestTokenBucketLimitChanges(t *testing.T) {
	s := time.Second
	b := newTB(t, PerSecond(1).WithBurst(2))
	b.ReserveN(epoch, 2)
	r := b.ReserveN(epoch, 2) // -2, acts at 2s
	mustSet(t, b, epoch, Limit{})
	wantTokens(t, b, at(10*s), -2)
	if b.AllowN(at(10*s), 0) || b.ReserveN(at(10*s), 0).OK() {
		t.Error("zero limit: a peek allowed while below zero")
	}
	mustSet(t, b, at(10*s), PerSecond(1).WithBurst(2))
	wantTokens(t, b, at(10*s), -2) // the debt carried over, unrefilled
	wantTokens(t, b, at(11*s), -1)
	r.CancelAt(epoch) // judged at 10s: past its time to act
	wantTokens(t, b, at(11*s), -1)

	// Cancelled under a zero limit: back up to zero, not above.
	b = newTB(t, PerSecond(1).WithBurst(2))
	r = b.ReserveN(epoch, 2)
	r2 := b.ReserveN(epoch, 1) // -1, acts at 1s
	mustSet(t, b, epoch, Limit{})
	r2.CancelAt(epoch)
	wantTokens(t, b, epoch, 0)
	r.CancelAt(epoch)
	wantTokens(t, b, epoch, 0)
	if !b.AllowN(epoch, 0) {
		t.Error("zero limit at zero tokens: peek refused")
	}

	// Unlimited and back at the same instant: the tokens are kept; after
	// any time unlimited, the bucket is full.
	b = newTB(t, PerSecond(1).WithBurst(4))
	b.AllowN(epoch, 3)
	mustSet(t, b, epoch, Unlimited.WithBurst(4))
	wantTokens(t, b, epoch, 1)
	wantTokens(t, b, at(1), 4)
	mustSet(t, b, epoch, PerSecond(1).WithBurst(4))
	wantTokens(t, b, epoch, 1)
	mustSet(t, b, epoch, Unlimited.WithBurst(2))
	mustSet(t, b, at(1), PerSecond(1).WithBurst(4))
	wantTokens(t, b, at(1), 2)
}
