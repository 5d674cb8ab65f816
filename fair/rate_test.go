package fair

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

var t0 = admittest.Epoch

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

var threeLanes = []Lane{{"critical", 50}, {"default", 30}, {"batch", 20}}

func mustRate(t testing.TB, cfg RateLanesConfig) *RateLanes {
	t.Helper()
	r, err := NewRateLanes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// errLanes stands, in the table of bad lanes, for an error wrapping
// admit.ErrInvalidConfig whose message says "fair: invalid lanes".
var errLanes = errors.New("fair: invalid lanes")

func TestNewLanesBadInput(t *testing.T) {
	many := make([]Lane, 65) // one more than the 64 allowed
	for i := range many {
		many[i] = Lane{Name: string(rune('a'+i%26)) + string(rune('a'+i/26)), Share: 1}
	}
	cases := []struct {
		name   string
		budget admit.Limit
		max    int64
		lanes  []Lane
		borrow Borrowing
		res    float64
		def    string
		want   error
	}{
		{"no lanes", admit.PerSecond(100), 100, nil, 0, 0, "", errLanes},
		{"too many lanes", admit.PerSecond(1000), 1000, many, 0, 0, "", errLanes},
		{"empty name", admit.PerSecond(100), 100, []Lane{{"", 1}}, 0, 0, "", errLanes},
		{"duplicate name", admit.PerSecond(100), 100, []Lane{{"a", 1}, {"a", 2}}, 0, 0, "", errLanes},
		{"zero share", admit.PerSecond(100), 100, []Lane{{"a", 0}}, 0, 0, "", errLanes},
		{"negative share", admit.PerSecond(100), 100, []Lane{{"a", -1}}, 0, 0, "", errLanes},
		{"huge share", admit.PerSecond(100), 100, []Lane{{"a", 1<<20 + 1}}, 0, 0, "", errLanes},
		{"budget too small", admit.PerSecond(2), 2, threeLanes, 0, 0, "", errLanes},
		{"reserve negative", admit.PerSecond(100), 100, threeLanes, 0, -0.5, "", admit.ErrInvalidConfig},
		{"reserve above 1", admit.PerSecond(100), 100, threeLanes, 0, 1.5, "", admit.ErrInvalidConfig},
		{"reserve NaN", admit.PerSecond(100), 100, threeLanes, 0, math.NaN(), "", admit.ErrInvalidConfig},
		{"bad borrowing", admit.PerSecond(100), 100, threeLanes, Borrowing(9), 0, "", admit.ErrInvalidConfig},
		{"unknown default lane", admit.PerSecond(100), 100, threeLanes, 0, 0, "other", admit.ErrInvalidConfig},
	}
	// Another config error must not say "invalid lanes".
	matches := func(err, want error) bool {
		lanes := err != nil && strings.Contains(err.Error(), errLanes.Error())
		if want == errLanes {
			return errors.Is(err, admit.ErrInvalidConfig) && lanes
		}
		return errors.Is(err, want) && !lanes
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewRateLanes(RateLanesConfig{Budget: c.budget, Lanes: c.lanes, Borrowing: c.borrow, Reserve: c.res, DefaultLane: c.def})
			if !matches(err, c.want) || r != nil {
				t.Errorf("NewRateLanes = %v, %v; want %v", r, err, c.want)
			}
			s, err := NewSlotLanes(SlotLanesConfig{Max: c.max, Lanes: c.lanes, Borrowing: c.borrow, Reserve: c.res, DefaultLane: c.def})
			if !matches(err, c.want) || s != nil {
				t.Errorf("NewSlotLanes = %v, %v; want %v", s, err, c.want)
			}
		})
	}
	// Budgets that are no rate, and a concurrency limit of 0.
	for _, b := range []admit.Limit{{}, admit.Unlimited, {Rate: -1, Period: time.Second}, {Rate: 1}, {Rate: 1, Period: 1 << 62, Burst: 1 << 40}} {
		if _, err := NewRateLanes(RateLanesConfig{Budget: b, Lanes: threeLanes}); !errors.Is(err, admit.ErrInvalidLimit) {
			t.Errorf("budget %+v: %v", b, err)
		}
	}
	if _, err := NewSlotLanes(SlotLanesConfig{Max: 0, Lanes: threeLanes}); !errors.Is(err, admit.ErrInvalidLimit) {
		t.Error(err)
	}
	// A lane's share whose period overflows.
	if _, err := NewRateLanes(RateLanesConfig{Budget: admit.Limit{Rate: 3, Period: 1 << 61, Burst: 1 << 20}, Lanes: []Lane{{"a", 1}, {"b", 1 << 19}}}); !errors.Is(err, admit.ErrInvalidLimit) {
		t.Error(err)
	}
}

// TestNewLanesBounds checks the documented bounds from inside: 64 lanes,
// and a share of 2^20, are accepted (one more of either is refused by
// TestNewLanesBadInput).
func TestNewLanesBounds(t *testing.T) {
	most := make([]Lane, 64)
	for i := range most {
		most[i] = Lane{Name: string(rune('a'+i%26)) + string(rune('a'+i/26)), Share: 1}
	}
	most[0].Share = 1 << 20
	if _, err := NewRateLanes(RateLanesConfig{Budget: admit.PerSecond(1 << 21), Lanes: most}); err != nil {
		t.Errorf("NewRateLanes with 64 lanes, one of share 2^20: %v", err)
	}
	if _, err := NewSlotLanes(SlotLanesConfig{Max: 1 << 21, Lanes: most}); err != nil {
		t.Errorf("NewSlotLanes with 64 lanes, one of share 2^20: %v", err)
	}
}

func TestRateLanesShares(t *testing.T) {
	r := mustRate(t, RateLanesConfig{Budget: admit.PerSecond(100), Lanes: threeLanes})
	for _, c := range []struct {
		lane string
		want admit.Limit
	}{
		{"critical", admit.Limit{Rate: 50, Period: time.Second, Burst: 50}},
		{"default", admit.Limit{Rate: 30, Period: time.Second, Burst: 30}},
		{"batch", admit.Limit{Rate: 20, Period: time.Second, Burst: 20}},
	} {
		if l, ok := r.Limit(c.lane); !ok || l != c.want {
			t.Errorf("%s: %+v, want %+v", c.lane, l, c.want)
		}
	}
	if _, ok := r.Limit("other"); ok {
		t.Error("unknown lane")
	}
	// The shares add up to the budget, 100/s burst 100.
	var rate, burst int64
	for _, lane := range []string{"critical", "default", "batch"} {
		l, _ := r.Limit(lane)
		rate, burst = rate+l.Rate, burst+l.Burst
	}
	if rate != 100 || burst != 100 {
		t.Errorf("the lanes share %d/s burst %d, want the budget's 100/s burst 100", rate, burst)
	}
	// Thirds of 10/s: 10 per 3s each; bursts 4, 3, 3 (the rounding's
	// leftover to the first lane).
	r = mustRate(t, RateLanesConfig{Budget: admit.Limit{Rate: 10, Period: time.Second}, Lanes: []Lane{{"a", 1}, {"b", 1}, {"c", 1}}})
	for lane, want := range map[string]admit.Limit{
		"a": {Rate: 10, Period: 3 * time.Second, Burst: 4},
		"b": {Rate: 10, Period: 3 * time.Second, Burst: 3},
		"c": {Rate: 10, Period: 3 * time.Second, Burst: 3},
	} {
		if l, _ := r.Limit(lane); l != want {
			t.Errorf("%s: %+v, want %+v", lane, l, want)
		}
	}
}

func TestRateLanesDecision(t *testing.T) {
	r := mustRate(t, RateLanesConfig{Options: admit.Options{Name: "api"}, Budget: admit.PerSecond(100), Lanes: threeLanes})
	d, err := allowAt(r, t0, "critical", 1)
	// 49 of its own, and what it may borrow beyond the reserves: batch
	// 20-10, default 30-15.
	want := admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 50, Period: time.Second, Burst: 50}, Remaining: 49 + 10 + 15, ResetAfter: 20 * time.Millisecond, Rule: "api/critical"}
	if err != nil || d != want {
		t.Fatalf("%+v, %v; want %+v", d, err, want)
	}
	// batch borrows nothing (BorrowUp): 20 of its own, then refused.
	d, _ = allowAt(r, t0, "batch", 20)
	if !d.Allowed || d.Remaining != 0 {
		t.Fatalf("%+v", d)
	}
	d, _ = allowAt(r, t0, "batch", 1)
	if d.Allowed || d.RetryAfter != 50*time.Millisecond || d.ResetAfter != time.Second {
		t.Fatalf("%+v", d)
	}
	if d, _ := allowAt(r, t0, "batch", 21); d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Fatalf("n > what batch can ever get: %+v", d)
	}
	// critical can get up to 50 at once (its burst): more only from a
	// lender whose burst beyond its reserve allows it, and none does.
	if d, _ := allowAt(r, t0, "critical", 51); d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Fatalf("n=51: %+v", d)
	}
	// Bad input.
	if d, err := allowAt(r, t0, "nope", 1); !errors.Is(err, ErrUnknownLane) || d.Allowed || d.RetryAfter != admit.InfDuration {
		t.Fatalf("%+v, %v", d, err)
	}
	if d, err := allowAt(r, t0, "batch", -1); !errors.Is(err, admit.ErrInvalidCost) || d.Allowed || d.Rule != "api/batch" {
		t.Fatalf("%+v, %v", d, err)
	}
	if d, err := allowAt(r, t0, "batch", 0); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	if err := refundAt(r, t0, "nope", 1); !errors.Is(err, ErrUnknownLane) {
		t.Fatal(err)
	}
	if err := refundAt(r, t0, "batch", -1); !errors.Is(err, admit.ErrInvalidCost) {
		t.Fatal(err)
	}
	// A refund gives events back to the lane.
	if err := refundAt(r, t0, "batch", 2); err != nil {
		t.Fatal(err)
	}
	if d, _ := allowAt(r, t0, "batch", 2); !d.Allowed {
		t.Fatalf("after refund: %+v", d)
	}
	// The default lane takes unknown keys.
	r = mustRate(t, RateLanesConfig{Options: admit.Options{Clock: admittest.NewManualClock(t0)}, Budget: admit.PerSecond(100), Lanes: threeLanes, DefaultLane: "batch"})
	d, err = r.Allow(context.Background(), admit.Request{Key: "anything", N: 1})
	if err != nil || !d.Allowed || d.Rule != "batch" {
		t.Fatalf("%+v, %v", d, err)
	}
	if err := r.Refund(context.Background(), admit.Request{Key: "anything", N: 1}); err != nil {
		t.Fatal(err)
	}
	if err := refundAt(r, t0, "batch", 0); err != nil {
		t.Fatal(err)
	}
}

// flood takes every event lane can get at each millisecond in [from, to),
// and returns how many it got.
func flood(r *RateLanes, lane string, from, to int) int64 {
	var got int64
	for ms := from; ms < to; ms++ {
		for {
			d, _ := allowAt(r, at(float64(ms)), lane, 1)
			if !d.Allowed {
				break
			}
			got++
		}
	}
	return got
}

// TestRateLanesAlone floods one lane alone for 10s (and the instant
// after): it gets its own share and what it may borrow beyond the
// reserves, exactly.
func TestRateLanesAlone(t *testing.T) {
	for _, c := range []struct {
		borrow Borrowing
		lane   string
		want   int64
	}{
		{BorrowUp, "batch", 20 + 200},                                   // nothing to borrow from
		{BorrowUp, "critical", 550 + (20 - 10 + 200) + (30 - 15 + 300)}, // all the others' spare
		{BorrowAny, "batch", 220 + (30 - 15 + 300) + (50 - 25 + 500)},
		{BorrowAny, "default", 330 + (20 - 10 + 200) + (50 - 25 + 500)},
		{BorrowNone, "critical", 550},
	} {
		r := mustRate(t, RateLanesConfig{Budget: admit.PerSecond(100), Lanes: threeLanes, Borrowing: c.borrow})
		if got := flood(r, c.lane, 0, 10001); got != c.want {
			t.Errorf("%v, %s alone: %d events, want %d", c.borrow, c.lane, got, c.want)
		}
	}
}

// TestRateLanesNoStarvation floods the lowest lane with BorrowAny: it
// takes all that is idle; then the critical lane's traffic arrives, at
// twice its share, and gets its reserve at once and its full share from
// then on, while the flood keeps only its share plus what is unused.
func TestRateLanesNoStarvation(t *testing.T) {
	r := mustRate(t, RateLanesConfig{Budget: admit.PerSecond(100), Lanes: threeLanes, Borrowing: BorrowAny})
	var batch, critical [10]int64 // per second
	for ms := range 10000 {
		now := at(float64(ms))
		if ms >= 5000 && ms%10 == 0 {
			if d, _ := allowAt(r, now, "critical", 1); d.Allowed {
				critical[ms/1000]++
			}
		}
		for {
			d, _ := allowAt(r, now, "batch", 1)
			if !d.Allowed {
				break
			}
			batch[ms/1000]++
		}
	}
	t.Logf("batch per second %v, critical %v", batch, critical)
	// Alone, batch gets everything beyond the reserves: 100/s.
	for s := 1; s < 5; s++ {
		if batch[s] != 100 {
			t.Errorf("second %d: batch %d, want 100", s, batch[s])
		}
	}
	// Critical's first second: its reserve (25) at once plus its rate.
	if critical[5] < 25+50-1 {
		t.Errorf("critical got %d in its first second, want at least 74", critical[5])
	}
	for s := 6; s < 10; s++ {
		if critical[s] != 50 {
			t.Errorf("second %d: critical %d, want its share, 50", s, critical[s])
		}
		if batch[s] != 50 { // its 20 and default's 30
			t.Errorf("second %d: batch %d, want 50", s, batch[s])
		}
	}
}

// TestRateLanesUnusedShare: a lane using part of its share leaves the rest
// to borrowers, and no more.
func TestRateLanesUnusedShare(t *testing.T) {
	r := mustRate(t, RateLanesConfig{Budget: admit.PerSecond(100), Lanes: threeLanes, Borrowing: BorrowAny})
	var batch, def int64
	for ms := range 20000 {
		now := at(float64(ms))
		if ms%100 == 0 { // default sends 10/s of its 30
			if d, _ := allowAt(r, now, "default", 1); d.Allowed && ms >= 10000 {
				def++
			} else if !d.Allowed {
				t.Fatalf("default refused at %dms: %+v", ms, d)
			}
		}
		for {
			d, _ := allowAt(r, now, "batch", 1)
			if !d.Allowed {
				break
			}
			if ms >= 10000 {
				batch++
			}
		}
	}
	// Over the last 10s: default 100, batch the remaining 900.
	if def != 100 || batch < 895 || batch > 900 {
		t.Errorf("default %d, batch %d over 10s", def, batch)
	}
}

// TestRateLanesHold: a request larger than its lane's reserve, in a lane
// whose spare is being borrowed, gets through after the wait its own
// limit says, every time.
func TestRateLanesHold(t *testing.T) {
	r := mustRate(t, RateLanesConfig{Budget: admit.PerSecond(100), Lanes: threeLanes, Borrowing: BorrowAny})
	flood(r, "batch", 0, 2000) // drains critical down to its reserve
	next := 2000.0
	admitted := 0
	for ms := 2000; ms < 8000; ms++ {
		now := at(float64(ms))
		if float64(ms) >= next {
			d, _ := allowAt(r, now, "critical", 40)
			if d.Allowed {
				admitted++
				next = float64(ms) + 1
			} else {
				if d.RetryAfter > 800*time.Millisecond {
					t.Fatalf("at %dms: retry after %v", ms, d.RetryAfter)
				}
				next = float64(ms) + math.Ceil(float64(d.RetryAfter)/1e6)
			}
		}
		flood(r, "batch", ms, ms+1)
	}
	// 6s at 50/s is 300 events: 7 requests of 40, with the reserve.
	if admitted < 7 {
		t.Errorf("critical's requests of 40 admitted %d times in 6s", admitted)
	}
}

// TestRateLanesRetryAfter: waiting a refusal's RetryAfter is enough, when
// nothing else happens meanwhile.
func TestRateLanesRetryAfter(t *testing.T) {
	for _, b := range []Borrowing{BorrowUp, BorrowAny, BorrowNone} {
		r := mustRate(t, RateLanesConfig{Budget: admit.Limit{Rate: 7, Period: time.Second, Burst: 9}, Lanes: threeLanes, Borrowing: b})
		now := t0
		for i := range 200 {
			lane := threeLanes[i%3].Name
			n := int64(i%4) + 1
			d, _ := allowAt(r, now, lane, n)
			if !d.Allowed && d.RetryAfter != admit.InfDuration {
				if d2, _ := allowAt(r, now.Add(d.RetryAfter), lane, n); !d2.Allowed {
					t.Fatalf("%v, %s n=%d at %v: refused after waiting %v: %+v", b, lane, n, now.Sub(t0), d.RetryAfter, d2)
				}
				now = now.Add(d.RetryAfter)
			}
			now = now.Add(time.Duration(i%5) * 37 * time.Millisecond)
		}
	}
}

// TestRateLanesConcurrent: many goroutines at the same instants admit no
// more than the budget allows.
func TestRateLanesConcurrent(t *testing.T) {
	r := mustRate(t, RateLanesConfig{Budget: admit.PerSecond(100), Lanes: threeLanes, Borrowing: BorrowAny})
	var (
		mu    sync.Mutex
		total int64
		wg    sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got int64
			for _, now := range []time.Time{t0, at(500), at(1000)} {
				for i := range 200 {
					if d, _ := allowAt(r, now, threeLanes[(w+i)%3].Name, 1); d.Allowed {
						got++
					}
				}
			}
			mu.Lock()
			total += got
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 200 { // B + R×1s: every event, none more
		t.Fatalf("admitted %d, want 200", total)
	}
}

// allowAt is r.Allow of n events of lane at now.
func allowAt(r *RateLanes, now time.Time, lane string, n int64) (admit.Decision, error) {
	return r.Allow(context.Background(), admit.Request{Key: lane, N: n, At: now})
}

// refundAt is r.Refund of n events of lane at now.
func refundAt(r *RateLanes, now time.Time, lane string, n int64) error {
	return r.Refund(context.Background(), admit.Request{Key: lane, N: n, At: now})
}
