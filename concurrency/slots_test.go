package concurrency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/concurrency"
)

// The contract of admit that Slots meets.
var _ admit.Slots = (*concurrency.Limiter)(nil).Slots()

// TestSlots: a Limiter as admit.Slots (a layer of a compose chain).
func TestSlots(t *testing.T) {
	var none *concurrency.Limiter
	if none.Slots() != nil {
		t.Fatal("Slots of a nil Limiter is not nil")
	}
	conc, _ := concurrency.New(concurrency.Config{Max: 3})
	s := conc.Slots()
	rel, d, err := s.TryAcquire(context.Background(), admit.Request{Key: "k", N: 2})
	if err != nil || !d.Allowed || rel == nil || d.Remaining != 1 || d.Kind != admit.KindConcurrency {
		t.Fatalf("%v, %+v, %v", rel, d, err)
	}
	if r, d, err := s.TryAcquire(context.Background(), admit.Request{Key: "k", N: 2}); r != nil || d.Allowed || err != nil {
		t.Fatalf("over the max: %v, %+v, %v", r, d, err)
	}
	if r, d, err := s.TryAcquire(context.Background(), admit.Request{Key: "k", N: 0}); r != nil || !d.Allowed || err != nil {
		t.Fatalf("n = 0: %v, %+v, %v", r, d, err)
	}
	if r, d, err := s.TryAcquire(context.Background(), admit.Request{Key: "k", N: 4}); r != nil || d.Allowed || d.RetryAfter != admit.InfDuration || err != nil {
		t.Fatalf("n > max is a refusal: %v, %+v, %v", r, d, err)
	}
	if _, _, err := s.TryAcquire(context.Background(), admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatalf("n < 0: %v", err)
	}
	other, _, _ := s.TryAcquire(context.Background(), admit.Request{Key: "k", N: 1})
	rel.Release()
	rel.Release() // the second does nothing: other's slot stays
	if n, _ := conc.InFlight(context.Background(), "k"); n != 1 {
		t.Fatalf("%d in flight", n)
	}
	other.Release()
}
