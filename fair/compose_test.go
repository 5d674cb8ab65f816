package fair

import (
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
)

// TestComposeLayers chains a RateLanes (the lane's rate), a SlotLanes and
// a Queue: a request refused by a later layer is undone in the earlier
// ones.
func TestComposeLayers(t *testing.T) {
	clk := admittest.NewManualClock(t0)
	rate := mustRate(t, RateLanesConfig{Options: admit.Options{Clock: clk, Name: "rate"}, Budget: admit.PerSecond(10), Lanes: []Lane{{"hi", 1}, {"lo", 1}}})
	slots := mustSlots(t, SlotLanesConfig{Options: admit.Options{Name: "slots"}, Max: 2, Lanes: []Lane{{"hi", 1}, {"lo", 1}}, Borrowing: BorrowNone})
	q := mustQueue(t, QueueConfig{Options: admit.Options{Name: "tenants"}, Max: 10})
	chain, err := compose.All(
		compose.Layer{Limiter: rate},
		compose.Layer{Slots: slots.Layer()},
		compose.Layer{Slots: q.Layer()},
	)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"lo", "lo", "tenant-1"}
	var h1, h2 compose.Held
	if d, err := chain.AllowKeys(ctx, keys, 1, &h1); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	// lo has one slot: the second request is refused by the slots, and
	// its rate is refunded.
	d, err := chain.AllowKeys(ctx, keys, 1, &h2)
	if err != nil || d.Allowed || d.Rule != "slots/lo" {
		t.Fatalf("%+v, %v", d, err)
	}
	if d, _ := allowAt(rate, t0, "lo", 4); !d.Allowed { // lo's burst is 5: 1 used
		t.Fatalf("not refunded: %+v", d)
	}
	if st := q.Stats(); st.InFlight != 1 {
		t.Fatalf("queue %+v", st)
	}
	h1.Release()
	if st := q.Stats(); st.InFlight != 0 {
		t.Fatalf("queue %+v", st)
	}
	// An unknown lane is an error of the request, not a refusal.
	if _, err := chain.AllowKeys(ctx, []string{"nope", "lo", "t"}, 1, &h2); err == nil {
		t.Fatal("unknown lane accepted")
	}
}
