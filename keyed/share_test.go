package keyed_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
)

func TestLocalShare(t *testing.T) {
	if _, err := keyed.LocalShare(keyed.Config{Limit: admit.PerSecond(10)}, 0); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "invalid number of instances 0") {
		t.Errorf("0 instances: %v", err)
	}
	if _, err := keyed.LocalShare(keyed.Config{Algorithm: admit.Algorithm(99), Limit: admit.PerSecond(10)}, 2); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "unknown algorithm") {
		t.Errorf("unknown algorithm: %v", err)
	}
	for _, alg := range admit.Algorithms() {
		lim, err := keyed.LocalShare(keyed.Config{Options: admit.Options{Name: "local"}, Algorithm: alg, Limit: admit.PerMinute(100)}, 4)
		if err != nil {
			t.Fatalf("%v: %v", alg, err)
		}
		if want := (admit.Limit{Rate: 25, Period: time.Minute, Burst: 25}); lim.Limit() != want {
			t.Errorf("%v: limit %v, want %v", alg, lim.Limit(), want)
		}
		// Each instance admits its share at once.
		admitted := 0
		for range 100 {
			if d, _ := lim.Allow(ctx, admit.Request{Key: "k", N: 1, At: admittest.Epoch}); d.Allowed {
				admitted++
			}
		}
		if admitted != 25 {
			t.Errorf("%v: admitted %d at once, want 25", alg, admitted)
		}
	}
}

func TestLiveShare(t *testing.T) {
	if _, err := keyed.LiveShare(keyed.Config{Limit: admit.PerSecond(10)}, nil); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "LiveShare needs a function counting the live instances") {
		t.Errorf("nil live: %v", err)
	}
	if _, err := keyed.LiveShare(keyed.Config{Limit: admit.Limit{Rate: -1}}, func() int { return 1 }); !errors.Is(err, admit.ErrInvalidLimit) {
		t.Errorf("invalid limit: %v", err)
	}
	clk := admittest.NewManualClock(admittest.Epoch)
	var live atomic.Int64
	s, err := keyed.LiveShare(keyed.Config{Options: admit.Options{Clock: clk, Name: "local"}, Limit: admit.PerSecond(12)}, func() int { return int(live.Load()) })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		live int64
		want admit.Limit
	}{
		{0, admit.PerSecond(12)}, // below 1 counts as 1
		{-5, admit.PerSecond(12)},
		{1, admit.PerSecond(12)},
		{4, admit.PerSecond(3)},
		{5, admit.Limit{Rate: 12, Period: 5 * time.Second, Burst: 3}},
		{2, admit.PerSecond(6)},
	} {
		live.Store(tc.live)
		if got := s.Limit(); got != tc.want {
			t.Errorf("live %d: limit %v, want %v", tc.live, got, tc.want)
		}
		key := "k" + time.Duration(tc.live).String()
		admitted := 0
		for range 20 {
			d, err := s.Allow(ctx, admit.Request{Key: key, N: 1})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				admitted++
			}
			if d.Rule != "local" || d.Limit != tc.want {
				t.Errorf("live %d: decision %+v", tc.live, d)
			}
		}
		if admitted != int(tc.want.Burst) && tc.live > 0 {
			t.Errorf("live %d: admitted %d, want %d", tc.live, admitted, tc.want.Burst)
		}
	}
	if s.Limiter().Len() == 0 {
		t.Errorf("Limiter() holds no keys")
	}

	// The count may change under concurrent calls.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 500 {
				live.Store(int64(i*j%7 + 1))
				if _, err := s.Allow(ctx, admit.Request{Key: "k", N: 1}); err != nil {
					t.Errorf("Allow: %v", err)
				}
			}
		})
	}
	wg.Wait()
}
