package admittest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

// Factory returns a new keyed limiter under test, limiting every key by
// alg under limit l (its own limit: the suite's requests leave
// Request.Limit zero), with no key used yet. It is called once per
// scenario or timeline, and the limiters it returns must not share state:
// a backend with a shared store (Redis) gives each one a fresh key prefix.
// It should fail t (t.Fatal) if it cannot build one.
//
// The suite asks the limiter requests at explicit instants (Request.At,
// never zero), for any N: 0 is a peek (always allowed, consumes nothing), a
// negative N and an N above the burst are refused (see the package
// documentation for when an error may stand for a refusal). Each key is
// limited on its own, starting full (never used). Only the decision's
// Allowed, Limit, Remaining, RetryAfter and ResetAfter are checked; Rule is
// free.
type Factory func(t testing.TB, alg admit.Algorithm, l admit.Limit) admit.KeyedLimiter

// Want is the expected outcome of one step: the fields of an admit.Decision
// that every backend must agree on. Decision.Limit is checked too, against
// the scenario's limit with its Burst filled in.
type Want struct {
	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
}

// Allow returns the Want of an admitted request (or a peek) that leaves
// remaining events and full capacity back after resetAfter.
func Allow(remaining int64, resetAfter time.Duration) Want {
	return Want{Allowed: true, Remaining: remaining, ResetAfter: resetAfter}
}

// Deny returns the Want of a denied request that would be admitted after
// retryAfter.
func Deny(remaining int64, retryAfter, resetAfter time.Duration) Want {
	return Want{Remaining: remaining, RetryAfter: retryAfter, ResetAfter: resetAfter}
}

// Never returns the Want of a request that can never be admitted (n above
// the burst, or n > 0 under a zero limit): denied with RetryAfter
// admit.InfDuration.
func Never(remaining int64, resetAfter time.Duration) Want {
	return Deny(remaining, admit.InfDuration, resetAfter)
}

// Refused is the Want of a request with a negative n. Only Allowed (false)
// and RetryAfter (admit.InfDuration) are checked for such requests.
func Refused() Want { return Never(0, 0) }

// never reports whether w refuses for good.
func (w Want) never() bool { return !w.Allowed && w.RetryAfter == admit.InfDuration }

// String formats w as a Decision's checked fields, with "inf" for
// admit.InfDuration.
func (w Want) String() string {
	return fmt.Sprintf("{Allowed:%v Remaining:%d RetryAfter:%s ResetAfter:%s}",
		w.Allowed, w.Remaining, fmtDuration(w.RetryAfter), fmtDuration(w.ResetAfter))
}

func fmtDuration(d time.Duration) string {
	if d == admit.InfDuration {
		return "inf"
	}
	return d.String()
}

// wantOf returns the checked fields of d.
func wantOf(d admit.Decision) Want {
	return Want{Allowed: d.Allowed, Remaining: d.Remaining, RetryAfter: d.RetryAfter, ResetAfter: d.ResetAfter}
}

// fmtRequest formats one call of a timeline as "at +200ms key "a" n=2".
func fmtRequest(r admit.Request) string {
	return fmt.Sprintf("at %s key %q n=%d", offset(r.At), r.Key, r.N)
}

// Step is one request of a Scenario and its expected outcome.
type Step struct {
	At   time.Time
	Key  string
	N    int64
	Want Want
}

// request returns the step without its expectation.
func (s Step) request() admit.Request { return admit.Request{Key: s.Key, N: s.N, At: s.At} }

// Scenario is a timeline table: requests at explicit instants against one
// limit, each with the decision the documented semantics give, derived by
// hand. It applies to the algorithms in Algs.
type Scenario struct {
	Name  string
	Algs  []admit.Algorithm
	Limit admit.Limit
	Steps []Step
}

// AppliesTo reports whether s is meant for algorithm a.
func (s Scenario) AppliesTo(a admit.Algorithm) bool { return slices.Contains(s.Algs, a) }

// Play runs the steps of s in order on subj, a fresh limiter for s.Limit,
// and fails t at the first step whose outcome differs from its Want (the
// later steps depend on it), printing the step, what was got and what was
// wanted.
func (s Scenario) Play(t testing.TB, subj admit.KeyedLimiter) {
	t.Helper()
	ctx := t.Context()
	limit := normalLimit(s.Limit)
	for i, st := range s.Steps {
		d, err := subj.Allow(ctx, st.request())
		if msg := mismatch(limit, st.N, st.Want, d, err); msg != "" {
			t.Errorf("%s (%v): step %d %s: %s", s.Name, s.Limit, i, fmtRequest(st.request()), msg)
			return
		}
	}
}

// mismatch compares a subject's outcome with the expected one and describes
// the difference, or returns "" if they agree. For n < 0 only the refusal
// is checked. An error is accepted where want refuses for good, if it wraps
// the matching sentinel error.
func mismatch(limit admit.Limit, n int64, want Want, d admit.Decision, err error) string {
	if err != nil {
		switch {
		case n < 0 && errors.Is(err, admit.ErrInvalidCost):
			return ""
		case n >= 0 && want.never() && errors.Is(err, admit.ErrExceedsBurst):
			return ""
		}
		return fmt.Sprintf("got error %q, want %v", err, want)
	}
	if n < 0 {
		if d.Allowed || d.RetryAfter != admit.InfDuration {
			return fmt.Sprintf("got %v, want a refusal (Allowed:false RetryAfter:inf)", wantOf(d))
		}
		return ""
	}
	if got := wantOf(d); got != want {
		return fmt.Sprintf("got %v want %v", got, want)
	}
	if d.Limit != limit {
		return fmt.Sprintf("got Limit %v, want %v", fmtLimit(d.Limit), fmtLimit(limit))
	}
	return ""
}

func fmtLimit(l admit.Limit) string {
	return fmt.Sprintf("%v {Rate:%d Period:%v Burst:%d}", l, l.Rate, l.Period, l.Burst)
}

// normalLimit returns l with Burst filled in, as Decision.Limit reports it.
func normalLimit(l admit.Limit) admit.Limit {
	if l.Burst == 0 && l.Rate != admit.Inf {
		l.Burst = l.Rate
	}
	return l
}

// Run runs every built-in scenario (see Scenarios) that applies to each of
// algs (all algorithms if none is given) against limiters made by f, as
// subtests named algorithm/scenario. If the limiters are also
// admit.PartialAllowers, a subtest algorithm/partial_grants checks their
// partial grants against Model's: timelines of AllowAtMost and Allow calls
// at instants that never go back, under limits that include the zero
// limit and Unlimited, must grant min(N, what fits), leave each key as an
// Allow of the events granted would, and report, when fewer than N were
// granted, the exact wait for one more event, as the model does, decision
// for decision. (A negative N may be refused with an error wrapping
// admit.ErrInvalidCost, and then nothing is granted.) For GCRA and the
// buckets, subtests algorithm/delay/... play timelines of the delay mode
// (Request.MaxDelay): Delay, TimeToAct and the state held, and, if the
// limiter is an admit.Refunder, cancellations by refunds at the times to
// act; a limiter that refuses MaxDelay with an error wrapping
// admit.ErrInvalidDelay skips them. Testing a new
// backend is one call:
//
//	admittest.Run(t, func(t testing.TB, alg admit.Algorithm, l admit.Limit) admit.KeyedLimiter {
//		lim, err := mybackend.New(alg, l)
//		if err != nil {
//			t.Fatal(err)
//		}
//		return lim
//	})
func Run(t *testing.T, f Factory, algs ...admit.Algorithm) {
	t.Helper()
	scenarios := Scenarios()
	if len(algs) == 0 {
		algs = admit.Algorithms()
	}
	for _, alg := range algs {
		t.Run(alg.String(), func(t *testing.T) {
			ran := 0
			for _, sc := range scenarios {
				if !sc.AppliesTo(alg) {
					continue
				}
				ran++
				t.Run(sc.Name, func(t *testing.T) { sc.Play(t, f(t, alg, sc.Limit)) })
			}
			if ran == 0 {
				t.Errorf("no scenario applies to %v", alg)
			}
			if slices.Contains(bucketAlgs, alg) {
				runDelay(t, f, alg)
			}
			runPartial(t, f, alg)
		})
	}
}

// Scenarios returns the built-in conformance scenarios, for every
// algorithm. The slice is new on each call.
func Scenarios() []Scenario {
	var all []Scenario
	for _, group := range [][]Scenario{commonScenarios(), bucketScenarios(), fixedWindowScenarios(), slidingWindowScenarios(), overloadScenarios(), slidingLogScenarios(), domainScenarios(), before1970Scenarios(), backwardsAfterPeekScenarios()} {
		all = append(all, group...)
	}
	return all
}

// The algorithm sets of the scenarios.
var (
	allAlgs    = admit.Algorithms()
	bucketAlgs = []admit.Algorithm{admit.AlgGCRA, admit.AlgTokenBucket, admit.AlgLeakyBucket}
)

// maxInt64 is the Remaining of an unlimited decision.
const maxInt64 = math.MaxInt64
