package admittest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

// delayStep is one step of a delay timeline: a request with a MaxDelay
// (the Want's Delay in delay), or, if refund is set, a refund of n events
// at the instant at (a cancellation at a time to act), which expects
// nothing itself.
type delayStep struct {
	at       time.Time
	n        int64
	maxDelay time.Duration
	want     Want
	delay    time.Duration
	refund   bool
}

// delayScenario is a timeline of requests with a MaxDelay for key "d"
// under one limit, for GCRA and the buckets.
type delayScenario struct {
	name  string
	limit admit.Limit
	steps []delayStep
}

// delayScenarios are the timelines of the delay mode (Request.MaxDelay),
// derived in GCRA's form (see bucketScenarios): a request of n whose need
// D + n×T passes C by W is admitted iff W <= MaxDelay, with Delay ⌈W⌉,
// Remaining 0, the TAT moved to now + D + n×T, and TimeToAct now + Delay;
// a refund at a time to act gives the events back iff the debt there is at
// most C (no later delayed admission relies on them).
func delayScenarios() []delayScenario {
	req := func(at time.Time, n int64, maxDelay time.Duration, w Want, delay time.Duration) delayStep {
		return delayStep{at: at, n: n, maxDelay: maxDelay, want: w, delay: delay}
	}
	refund := func(at time.Time, n int64) delayStep { return delayStep{at: at, n: n, refund: true} }
	return []delayScenario{{
		// T = 100ms, C = 200ms.
		name: "delay_then_cancel", limit: admit.PerSecond(10).WithBurst(2),
		steps: []delayStep{
			req(t0, 2, 0, Allow(0, 200*ms), 0),
			req(t0, 1, 0, Deny(0, 100*ms, 200*ms), 0),
			req(t0, 1, 100*ms, Allow(0, 300*ms), 100*ms),        // acts at 100ms; TAT 300ms
			req(t0, 1, 150*ms, Deny(0, 200*ms, 300*ms), 0),      // would wait 200ms: holds nothing
			req(At(50*ms), 1, 150*ms, Allow(0, 350*ms), 150*ms), // acts at 200ms; TAT 400ms
			req(At(50*ms), 0, 0, Allow(0, 350*ms), 0),
			req(At(50*ms), 3, time.Hour, Never(0, 350*ms), 0),
			refund(At(100*ms), 1), // the first: the second relies on it
			req(At(50*ms), 0, sec, Allow(0, 350*ms), 0),
			refund(At(200*ms), 1), // the second, the latest: TAT 300ms
			req(At(50*ms), 0, 0, Allow(0, 250*ms), 0),
			refund(At(100*ms), 1), // the first, now the latest: TAT 200ms
			req(At(50*ms), 0, 0, Allow(0, 150*ms), 0),
			req(At(100*ms), 1, 0, Allow(0, 200*ms), 0),
			req(At(100*ms), 1, 100*ms-ns, Deny(0, 100*ms, 200*ms), 0), // 1ns short
			req(At(100*ms), 2, 200*ms, Allow(0, 400*ms), 200*ms),
		},
	}, {
		// T = 1s/3 (Td = 3), C = 1s: the waits round up.
		name: "delay_fractional", limit: admit.PerSecond(3),
		steps: []delayStep{
			req(t0, 3, 0, Allow(0, sec), 0),
			req(t0, 1, sec/3, Deny(0, sec/3+ns, sec), 0), // W = 333333333.3ns
			req(t0, 1, sec/3+ns, Allow(0, sec+sec/3+ns), sec/3+ns),
			req(t0, 2, sec, Allow(0, 2*sec), sec),
			req(At(sec), 0, 0, Allow(0, sec), 0),
		},
	}}
}

// runDelay plays the delay scenarios against limiters made by f for alg
// (GCRA or a bucket), as the subtest alg/delay/name. A limiter that refuses
// the first request with a MaxDelay with an error wrapping
// admit.ErrInvalidDelay does not delay: the scenarios are skipped. The
// refunds need an admit.Refunder; without one, a scenario stops at its
// first refund.
func runDelay(t *testing.T, f Factory, alg admit.Algorithm) {
	for _, sc := range delayScenarios() {
		t.Run("delay/"+sc.name, func(t *testing.T) {
			subj := f(t, alg, sc.limit)
			if msg := playDelay(t, subj, sc); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func playDelay(t testing.TB, subj admit.KeyedLimiter, sc delayScenario) string {
	ctx := t.Context()
	limit := normalLimit(sc.limit)
	for i, st := range sc.steps {
		r := admit.Request{Key: "d", N: st.n, At: st.at, MaxDelay: st.maxDelay}
		where := fmt.Sprintf("%s (%v): step %d at %s n=%d", sc.name, sc.limit, i, offset(st.at), st.n)
		if st.refund {
			rf, ok := subj.(admit.Refunder)
			if !ok {
				t.Logf("%s: not a Refunder: the refunds are not checked", sc.name)
				return ""
			}
			if err := rf.Refund(ctx, admit.Request{Key: "d", N: st.n, At: st.at}); err != nil {
				return fmt.Sprintf("%s: refund: %v", where, err)
			}
			continue
		}
		d, err := subj.Allow(ctx, r)
		if i == 0 || st.maxDelay > 0 {
			where += fmt.Sprintf(" MaxDelay=%v", st.maxDelay)
		}
		if err != nil && errors.Is(err, admit.ErrInvalidDelay) && st.maxDelay > 0 {
			if t, ok := t.(*testing.T); ok {
				t.Skipf("%s: the limiter does not delay: %v", where, err)
			}
			return ""
		}
		if msg := mismatch(limit, st.n, st.want, d, err); msg != "" {
			return where + ": " + msg
		}
		var act time.Time
		if st.delay > 0 {
			act = st.at.Add(st.delay)
		}
		if d.Delay != st.delay || !d.TimeToAct.Equal(act) {
			return fmt.Sprintf("%s: got Delay %v TimeToAct %s, want %v %s", where, d.Delay, fmtInstant(d.TimeToAct), st.delay, fmtInstant(act))
		}
	}
	return ""
}

// fmtInstant formats an instant as its offset from Epoch, or "zero".
func fmtInstant(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return offset(t)
}
