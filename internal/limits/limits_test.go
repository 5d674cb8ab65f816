package limits

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
)

func TestCompile(t *testing.T) {
	c := Compile(admit.AlgGCRA, admit.PerSecond(10))
	if c.Err != nil || c.Limit.Burst != 10 || c.P.Burst != 10 || c.P.Mode != algo.Normal {
		t.Errorf("10/s: %+v", c)
	}
	if c := Compile(admit.AlgGCRA, admit.Limit{Rate: -1}); !errors.Is(c.Err, admit.ErrInvalidLimit) {
		t.Errorf("a negative rate: %v", c.Err)
	}
	// A window below 1 ns is fine for GCRA, not for the window algorithms.
	sub := admit.Limit{Rate: 2, Period: time.Nanosecond, Burst: 1}
	if c := Compile(admit.AlgGCRA, sub); c.Err != nil {
		t.Errorf("GCRA, T = 1/2 ns: %v", c.Err)
	}
	if c := Compile(admit.AlgFixedWindow, sub); !errors.Is(c.Err, admit.ErrInvalidLimit) {
		t.Errorf("fixed window of 1/2 ns: %v", c.Err)
	}
	if c := Compile(admit.AlgGCRA, admit.Limit{Rate: admit.Inf}); c.Err != nil || c.Limit.Burst != 0 {
		t.Errorf("unlimited: %+v", c)
	}
	d := c.Decision(algo.Result{Allowed: true, Remaining: 3, ResetAfter: 5}, "api")
	if !d.Allowed || d.Remaining != 3 || d.ResetAfter != 5 || d.Rule != "api" || d.Limit != c.Limit {
		t.Errorf("Decision: %+v", d)
	}
	if r := c.Refusal("api"); r.Allowed || r.RetryAfter != admit.InfDuration || r.Limit != c.Limit {
		t.Errorf("Refusal: %+v", r)
	}
}

func TestCacheReturnsOneCompiledPerLimit(t *testing.T) {
	var cache Cache
	l := admit.PerMinute(7)
	a := cache.Get(admit.AlgGCRA, l)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if c := cache.Get(admit.AlgGCRA, l); c.Key != l || c.Err != nil {
					t.Errorf("Get(%v) = %+v", l, c)
				}
			}
		})
	}
	wg.Wait()
	if b := cache.Get(admit.AlgGCRA, l); b != a {
		t.Error("a cached limit was compiled again")
	}
	// Many limits: each Get returns that limit, whatever it replaced.
	for i := range int64(500) {
		l := admit.Limit{Rate: i + 1, Period: time.Second}
		if c := cache.Get(admit.AlgGCRA, l); c.Key != l {
			t.Fatalf("Get(%v) returned %v", l, c.Key)
		}
	}
}
