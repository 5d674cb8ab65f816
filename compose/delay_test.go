package compose_test

import (
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

// TestAdmitDelay: layers asked with a MaxDelay admit with delays, the
// chain's decision carries the longest; a later layer's refusal gives the
// delayed slots back (a refund at their TimeToAct), so a flood the later
// layer refuses takes nothing from the earlier one.
func TestAdmitDelay(t *testing.T) {
	t0 := admittest.At(0)
	ip := mustKeyed(t, keyed.Config{Limit: admit.PerSecond(10).WithBurst(1)})     // T = 100ms
	tenant := mustKeyed(t, keyed.Config{Limit: admit.PerSecond(10).WithBurst(1)}) // T = 100ms
	layers := []compose.Layer{{Name: "ip", Limiter: ip}, {Name: "tenant", Limiter: tenant}}
	reqs := func(d1, d2 time.Duration) []admit.Request {
		return []admit.Request{
			{Key: "1.2.3.4", N: 1, At: t0, MaxDelay: d1},
			{Key: "acme", N: 1, At: t0, MaxDelay: d2},
		}
	}
	ctx := t.Context()
	// Both empty now: the first request goes at once.
	if d, err := compose.Admit(ctx, layers, reqs(0, 0), nil, nil); err != nil || !d.Allowed || d.Delay != 0 {
		t.Fatalf("first: %+v %v", d, err)
	}
	// The ip layer waits 100ms, the tenant layer 100ms too: admitted with a delay.
	d, err := compose.Admit(ctx, layers, reqs(time.Second, 150*time.Millisecond), nil, nil)
	if err != nil || !d.Allowed || d.Delay != 100*time.Millisecond || !d.TimeToAct.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("delayed: %+v %v", d, err)
	}
	// Now the tenant layer would wait 200ms, more than its 150ms: refused,
	// and the ip layer's delayed slot (300ms) is given back, every time.
	for i := range 5 {
		d, err := compose.Admit(ctx, layers, reqs(time.Second, 150*time.Millisecond), nil, nil)
		if err != nil || d.Allowed || d.Rule != "tenant" {
			t.Fatalf("refusal %d: %+v %v", i, d, err)
		}
	}
	peek, _ := ip.Allow(ctx, admit.Request{Key: "1.2.3.4", At: t0})
	if peek.ResetAfter != 200*time.Millisecond {
		t.Fatalf("ip layer after the refusals: ResetAfter %v, want 200ms (its two admissions, nothing of the refused)", peek.ResetAfter)
	}
}
