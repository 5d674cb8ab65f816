package redisstore

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/quota"
)

// TestQuotaAllowAtMost: on Redis's clock, on a standalone Redis and a
// cluster, a partial grant takes what remains of the period and no more,
// atomically (goroutines taking blocks of one key share exactly N);
// bad input is Allow's errors, and nothing is granted.
func TestQuotaAllowAtMost(t *testing.T) {
	for _, c := range qClients {
		t.Run(c.name, func(t *testing.T) {
			s, _ := qStore(t, c.client(t), Config{MaxKeyLength: 8})
			q := qQuota(t, s, QuotaConfig{Limit: 5, Period: quota.Day})
			ctx := t.Context()
			g, d, err := q.AllowAtMost(ctx, admit.Request{Key: "k", N: 8})
			if err != nil || g != 5 || !d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > 24*time.Hour || d.ResetAfter != d.RetryAfter {
				t.Errorf("8 of a fresh 5: %d, %+v, %v; want 5, and one more when the day ends", g, d, err)
			}
			if g, d, err := q.AllowAtMost(ctx, admit.Request{Key: "k", N: 2}); err != nil || g != 0 || d.Allowed || d.RetryAfter <= 0 {
				t.Errorf("2 when none remain: %d, %+v, %v", g, d, err)
			}
			if g, d, err := q.AllowAtMost(ctx, admit.Request{Key: "k"}); err != nil || g != 0 || !d.Allowed || d.RetryAfter != 0 {
				t.Errorf("a peek: %d, %+v, %v", g, d, err)
			}
			for _, r := range []struct {
				r    admit.Request
				want error
				text string
			}{
				{admit.Request{Key: "j", N: -1}, admit.ErrInvalidCost, "n=-1"},
				{admit.Request{Key: "too-long-key", N: 1}, admit.ErrKeyTooLong, "redisstore: 12 bytes, the maximum is 8"},
				{admit.Request{Key: "j", N: 1, Limit: admit.Limit{Rate: -3}}, admit.ErrInvalidLimit, "invalid quota size -3"},
			} {
				g, d, err := q.AllowAtMost(ctx, r.r)
				if !errors.Is(err, r.want) || !strings.Contains(err.Error(), r.text) || g != 0 || d.Allowed || d.RetryAfter != admit.InfDuration {
					t.Errorf("AllowAtMost(%+v) = %d, %+v, %v; want an error wrapping %v saying %q", r.r, g, d, err, r.want, r.text)
				}
			}
			if d, err := q.Allow(ctx, admit.Request{Key: "j", N: 5}); err != nil || !d.Allowed {
				t.Errorf("after the refusals: %+v, %v; want j's whole quota", d, err)
			}
			big := qQuota(t, s, QuotaConfig{Options: admit.Options{Name: "big"}, Limit: 50, Period: quota.Day})
			var total atomic.Int64
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := range 10 {
						g, _, err := big.AllowAtMost(ctx, admit.Request{Key: "hot", N: int64(1 + (w+i)%4)})
						if err != nil {
							t.Error(err)
						}
						total.Add(g)
					}
				})
			}
			wg.Wait()
			if total.Load() != 50 {
				t.Errorf("took %d in all, want exactly the quota, 50", total.Load())
			}
		})
	}
}
