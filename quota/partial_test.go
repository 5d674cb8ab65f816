package quota_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/quota"
)

// TestAllowAtMost: a partial grant is min(n, what a peek says remains), it
// leaves the key as an Allow of the granted count would, and when it grants
// less than n its decision is the denial of one more event (RetryAfter: the
// period's end), at random instants that go forwards, backwards and across
// periods, with per-call sizes.
func TestAllowAtMost(t *testing.T) {
	ctx := context.Background()
	loc := load(t, "Europe/Paris")
	for _, p := range []quota.Period{quota.Hour, quota.Day, quota.Month} {
		cfg := quota.Config{Options: admit.Options{Name: "q"}, Limit: 7, Period: p, Location: loc}
		// partial and twin see the same requests, except that partial
		// grants with AllowAtMost and twin with a peek, an Allow of what it
		// said remains, and an Allow of one more.
		partial, twin := newQuota(t, cfg), newQuota(t, cfg)
		r := rand.New(rand.NewPCG(uint64(p), 3))
		at := time.Date(2025, 3, 29, 22, 0, 0, 0, time.UTC) // a daylight-saving change ahead
		var short int
		for step := range 1500 {
			at = at.Add(time.Duration(r.IntN(40)-8) * time.Minute)
			req := admit.Request{Key: []string{"a", "b"}[r.IntN(2)], N: int64(r.IntN(10)), At: at}
			if r.IntN(4) == 0 {
				req.Limit = admit.Limit{Rate: int64(1 + r.IntN(9))}
			}
			if r.IntN(10) == 0 {
				req.N = math.MaxInt64
			}
			if r.IntN(5) == 0 { // an Allow for both
				pd, _ := partial.Allow(ctx, req)
				td, _ := twin.Allow(ctx, req)
				if pd != td {
					t.Fatalf("%v step %d: Allow %+v: %+v and %+v", p, step, req, pd, td)
				}
				continue
			}
			peek := req
			peek.N = 0
			pk, _ := twin.Allow(ctx, peek)
			want := min(req.N, pk.Remaining)
			g, d, err := partial.AllowAtMost(ctx, req)
			if err != nil || g != want {
				t.Fatalf("%v step %d: AllowAtMost(%+v) = %d, %v; want %d (a peek says %d remain)", p, step, req, g, err, want, pk.Remaining)
			}
			wd := pk
			if want > 0 {
				one := req
				one.N = want
				if wd, _ = twin.Allow(ctx, one); !wd.Allowed {
					t.Fatalf("%v step %d: the twin refused the %d a peek said remain", p, step, want)
				}
			}
			if want < req.N {
				short++
				one := req
				one.N = 1
				wd, _ = twin.Allow(ctx, one)
				wd.Allowed = want > 0
				if wd.RetryAfter <= 0 || wd.RetryAfter == admit.InfDuration {
					t.Fatalf("%v step %d: one more event after a short grant: %+v", p, step, wd)
				}
			}
			if d != wd {
				t.Fatalf("%v step %d: AllowAtMost(%+v) granted %d with %+v; want %+v", p, step, req, g, d, wd)
			}
		}
		if short < 300 {
			t.Errorf("%v: %d short grants: the random steps test too little", p, short)
		}
	}
}

// TestAllowAtMostBadInput: errors are Allow's, and nothing is granted; a
// new key beyond the cap is refused; more than the size is a grant of
// what remains.
func TestAllowAtMostBadInput(t *testing.T) {
	ctx := context.Background()
	q := newQuota(t, quota.Config{Options: admit.Options{Name: "q"}, Limit: 5, Period: quota.Day, MaxKeyLength: 8, MaxKeys: 1})
	d0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		r    admit.Request
		want error
		text string
	}{
		{admit.Request{Key: "k", N: -1, At: d0}, admit.ErrInvalidCost, "n=-1"},
		{admit.Request{Key: "123456789", N: 1, At: d0}, admit.ErrKeyTooLong, "quota: 9 bytes, the maximum is 8"},
		{admit.Request{Key: "k", N: 1, Limit: admit.Limit{Rate: -3}, At: d0}, admit.ErrInvalidLimit, "invalid quota size -3"},
	} {
		g, d, err := q.AllowAtMost(ctx, c.r)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) || g != 0 || d.Allowed || d.RetryAfter != inf {
			t.Errorf("AllowAtMost(%+v) = %d, %+v, %v; want an error wrapping %v saying %q", c.r, g, d, err, c.want, c.text)
		}
	}
	if q.Len() != 0 {
		t.Errorf("bad input stored %d keys", q.Len())
	}
	g, d, err := q.AllowAtMost(ctx, admit.Request{Key: "k", N: 1 << 40, At: d0.Add(time.Hour)})
	if err != nil || g != 5 || !d.Allowed || d.Remaining != 0 || d.RetryAfter != 23*time.Hour || d.ResetAfter != 23*time.Hour {
		t.Errorf("2^40 of a fresh 5: %d, %+v, %v; want 5, and one more at midnight", g, d, err)
	}
	// At the cap (one key, held until midnight), a new key is refused.
	g, d, err = q.AllowAtMost(ctx, admit.Request{Key: "j", N: 2, At: d0.Add(time.Hour)})
	if !errors.Is(err, admit.ErrTooManyKeys) || g != 0 || d.Allowed {
		t.Errorf("a new key at the cap: %d, %+v, %v", g, d, err)
	}
	var _ admit.PartialAllower = q
}
