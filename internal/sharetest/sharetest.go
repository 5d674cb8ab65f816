// Package sharetest is the scenario every weighted share of a budget must
// pass (fair.Share in memory, redisstore's Share in Redis and Redis
// Cluster, the policy engine's share: rules on either): three tenants of
// weights 1, 2 and 3 at ten times the budget, then one of them idle. The
// instants are explicit; nothing sleeps.
package sharetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

// Weights are the tenants of the scenario and their weights.
var Weights = map[string]int64{"a": 1, "b": 2, "c": 3}

// Weight returns the weight of tenant (1 for any other).
func Weight(tenant string) int64 {
	if w, ok := Weights[tenant]; ok {
		return w
	}
	return 1
}

// Budget is the budget of the scenario: 100 events a second (burst 100),
// small enough that a run against Redis takes a few seconds.
var Budget = admit.PerSecond(100)

// Ask asks lim for one event of tenant at instant at (after Epoch) and
// reports whether it was admitted.
type Ask func(ctx context.Context, tenant string, at time.Duration) (bool, error)

// The phases of the scenario (after admittest.Epoch).
const (
	warm    = time.Second      // the first burst settles
	busyEnd = 11 * time.Second // a, b and c busy until here; then c idle
	idleEnd = 22 * time.Second
	step    = time.Millisecond // one request every step, tenants in turn
	slice   = 100 * time.Millisecond
	// within is the time the others may take to use an idle tenant's
	// share (the target: one second).
	within = time.Second
)

// Run runs the scenario through ask, asking at ten times Budget: one
// request a millisecond, the busy tenants in turn. It requires:
//
//   - from 1 s to 11 s (a, b and c busy), each tenant's part of the
//     events admitted within 2% of its weight's (1/6, 2/6, 3/6);
//   - from 11 s, c idle: a and b together admitted at the budget's rate
//     (98% of it in a slice of 100 ms) within one second;
//   - from 12 s to 22 s, a and b within 2% of 1/3 and 2/3;
//   - all along, the events admitted within the budget's bound B + ⌊t/T⌋
//     (admittest.CheckBound).
func Run(t testing.TB, ask Ask) {
	t.Helper()
	ctx := context.Background()
	var events []admittest.Event
	type slot struct{ a, b, c int }
	slices := make([]slot, idleEnd/slice)
	busy := []string{"a", "b", "c"}
	i := 0
	for at := time.Duration(0); at < idleEnd; at += step {
		if at == busyEnd {
			busy, i = busy[:2], 0
		}
		tenant := busy[i%len(busy)]
		i++
		ok, err := ask(ctx, tenant, at)
		if err != nil {
			t.Fatalf("at %v, tenant %s: %v", at, tenant, err)
		}
		if !ok {
			continue
		}
		events = append(events, admittest.Event{At: admittest.At(at), N: 1})
		s := &slices[at/slice]
		switch tenant {
		case "a":
			s.a++
		case "b":
			s.b++
		default:
			s.c++
		}
	}
	if err := admittest.CheckBound(admit.AlgGCRA, events, Budget); err != nil {
		t.Errorf("the budget's bound: %v", err)
	}
	sum := func(from, to time.Duration) (a, b, c int) {
		for _, s := range slices[from/slice : to/slice] {
			a, b, c = a+s.a, b+s.b, c+s.c
		}
		return a, b, c
	}
	a, b, c := sum(warm, busyEnd)
	checkShares(t, "a, b and c busy (1 s to 11 s)", []int{a, b, c}, []float64{1, 2, 3}, busyEnd-warm)
	reached := -1
	for k := busyEnd / slice; k < idleEnd/slice; k++ {
		if s := slices[k]; float64(s.a+s.b) >= 0.98*perSlice() {
			reached = int(k)
			break
		}
	}
	switch took := time.Duration(reached)*slice - busyEnd; {
	case reached < 0:
		t.Errorf("c idle: a and b never reached the budget's rate")
	case took+slice > within:
		t.Errorf("c idle: a and b reached the budget's rate %v later, want within %v", took+slice, within)
	default:
		t.Logf("c idle: a and b at the budget's rate in the slice ending %v later", took+slice)
	}
	a, b, c = sum(busyEnd+within, idleEnd)
	if c != 0 {
		t.Errorf("c, idle, was admitted %d events", c)
	}
	checkShares(t, "a and b busy, c idle (12 s to 22 s)", []int{a, b}, []float64{1, 2}, idleEnd-busyEnd-within)
}

// perSlice is the budget's events per slice.
func perSlice() float64 {
	return float64(Budget.Rate) * float64(slice) / float64(Budget.Period)
}

// checkShares requires the total of counts over a span d to be at least
// 98% of the budget's (nothing is wasted), and each count's part of it to
// be within 2% of its weight's part of theirs.
func checkShares(t testing.TB, what string, counts []int, weights []float64, d time.Duration) {
	t.Helper()
	var total int
	var wsum float64
	for i, n := range counts {
		total += n
		wsum += weights[i]
	}
	msg := fmt.Sprintf("%s: admitted %v (total %d)", what, counts, total)
	if full := perSlice() * float64(d/slice); float64(total) < 0.98*full {
		t.Errorf("%s, want a total of at least 98%% of %.0f", msg, full)
	}
	for i, n := range counts {
		got, want := float64(n)/float64(total), weights[i]/wsum
		if math.Abs(got-want) > 0.02*want {
			t.Errorf("%s: tenant %d has %.4f of them, want %.4f ± 2%%", msg, i, got, want)
		}
	}
	t.Log(msg)
}
