package leases

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit/admittest"
)

// TestTally: a grant counts from Add until Forget or the end of its
// lease on its Counter's clock, which Renew moves; each Counter counts its
// own grants; ids are the grants' names across Counters.
func TestTally(t *testing.T) {
	clock := admittest.NewManualClock(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	var tally Tally
	jobs, other := tally.Counter(clock), tally.Counter(clock)
	want := func(c *Counter, n int64, what string) {
		t.Helper()
		if got := c.Held(); got != n {
			t.Errorf("%s: %d held, want %d", what, got, n)
		}
	}
	want(jobs, 0, "new")
	jobs.Add("a", 2, 30*time.Second)
	jobs.Add("b", 1, 10*time.Second)
	jobs.Add("a", 5, time.Hour) // already counted: unchanged
	jobs.Add("z", 0, time.Hour) // holds nothing
	other.Add("c", 3, 30*time.Second)
	want(jobs, 3, "a (2) and b (1)")
	want(other, 3, "the other counter")

	tally.Forget("a")
	tally.Forget("a")       // twice: nothing
	tally.Forget("unknown") // never counted: nothing
	want(jobs, 1, "a released")

	tally.Renew("b", 20*time.Second) // b now ends at +20s
	tally.Renew("gone", time.Hour)   // not counted: nothing
	clock.Advance(15 * time.Second)
	want(jobs, 1, "b renewed, at +15s")
	clock.Advance(5 * time.Second)
	want(jobs, 0, "b's lease run out at +20s")
	tally.Renew("b", time.Hour) // too late: no longer counted
	want(jobs, 0, "b renewed after its end")
	want(other, 3, "c at +20s")
	clock.Advance(10 * time.Second)
	want(other, 0, "c's lease run out at +30s")
	if len(tally.byID) != 0 {
		t.Errorf("%d grants left in the tally", len(tally.byID))
	}

	// Add forgets the grants whose lease ran out even if nobody reads.
	for i := range 10 {
		jobs.Add(strconv.Itoa(i), 1, time.Second)
	}
	clock.Advance(time.Second)
	jobs.Add("fresh", 1, time.Second)
	if len(tally.byID) != 1 {
		t.Errorf("%d grants in the tally after the others ran out, want 1", len(tally.byID))
	}

	// At MaxTallied, the grant whose lease ends first is forgotten.
	full := tally.Counter(clock)
	for i := range MaxTallied + 1 {
		full.Add("f"+strconv.Itoa(i), 1, time.Minute+time.Duration(i))
	}
	want(full, MaxTallied, "a counter over MaxTallied")
	if _, ok := tally.byID["f0"]; ok {
		t.Error("the earliest grant is still counted past MaxTallied")
	}

	if c := (&Tally{}).Counter(nil); c.clock == nil {
		t.Error("Counter(nil) has no clock")
	}
}

// TestTallyConcurrent: grants added, renewed and forgotten from many
// goroutines leave nothing counted (run with -race).
func TestTallyConcurrent(t *testing.T) {
	clock := admittest.NewManualClock(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	var tally Tally
	c := tally.Counter(clock)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := strconv.Itoa(g) + "." + strconv.Itoa(i)
				c.Add(id, 1, time.Minute)
				tally.Renew(id, time.Hour)
				_ = c.Held()
				tally.Forget(id)
			}
		})
	}
	wg.Wait()
	if n := c.Held(); n != 0 {
		t.Errorf("%d held after every grant was forgotten", n)
	}
}
