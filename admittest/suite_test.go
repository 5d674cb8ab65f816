package admittest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

func modelFactory(t testing.TB, alg admit.Algorithm, l admit.Limit) admit.KeyedLimiter {
	return Model(alg, l)
}

// TestModelPassesScenarios: the reference model agrees with every
// hand-derived table, so the tables and the model check each other.
func TestModelPassesScenarios(t *testing.T) {
	Run(t, modelFactory)
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	ctx  context.Context
	errs []string
}

func (r *recorder) Helper()                  {}
func (r *recorder) Context() context.Context { return r.ctx }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }

func TestPlayReportsFirstMismatch(t *testing.T) {
	sc := Scenario{
		Name: "wrong", Algs: bucketAlgs, Limit: admit.PerSecond(10).WithBurst(3),
		Steps: []Step{
			{t0, "a", 1, Allow(2, 100*ms)},
			{t2, "a", 2, Allow(1, 100*ms)}, // wrong: D = 0 before, 200ms after
			{t2, "a", 0, Allow(0, 0)},      // also wrong, not reached
		},
	}
	rec := &recorder{ctx: t.Context()}
	sc.Play(rec, Model(admit.AlgGCRA, sc.Limit))
	want := `wrong (10/s burst 3): step 1 at +200ms key "a" n=2: got {Allowed:true Remaining:1 RetryAfter:0s ResetAfter:200ms} want {Allowed:true Remaining:1 RetryAfter:0s ResetAfter:100ms}`
	if len(rec.errs) != 1 || rec.errs[0] != want {
		t.Errorf("Play reported %q\nwant %q", rec.errs, want)
	}
}

type fixed struct {
	d   admit.Decision
	err error
}

func (f fixed) Allow(context.Context, admit.Request) (admit.Decision, error) {
	return f.d, f.err
}

// TestErrorsStandForRefusalsOnly: an error passes only where the decision
// is a refusal for good, and only with the matching sentinel.
func TestErrorsStandForRefusalsOnly(t *testing.T) {
	l := admit.PerSecond(2)
	never := admit.Decision{Limit: l, Remaining: 2, RetryAfter: admit.InfDuration}
	for _, c := range []struct {
		n    int64
		want Want
		subj admit.KeyedLimiter
		ok   bool
	}{
		{-1, Refused(), fixed{err: fmt.Errorf("wrapped: %w", admit.ErrInvalidCost)}, true},
		{-1, Refused(), fixed{err: admit.ErrExceedsBurst}, false},
		{-1, Refused(), fixed{d: admit.Decision{Limit: l, Remaining: 7, RetryAfter: admit.InfDuration}}, true},
		{-1, Refused(), fixed{d: admit.Decision{Limit: l, RetryAfter: time.Second}}, false},
		{3, Never(2, 0), fixed{err: fmt.Errorf("x: %w", admit.ErrExceedsBurst)}, true},
		{3, Never(2, 0), fixed{err: errors.New("connection refused")}, false},
		{3, Never(2, 0), fixed{d: never}, true},
		{3, Never(2, 0), fixed{d: admit.Decision{Limit: l, Remaining: 1, RetryAfter: admit.InfDuration}}, false},
		{1, Allow(1, 500*ms), fixed{err: admit.ErrExceedsBurst}, false},
		{1, Deny(0, ms, ms), fixed{err: admit.ErrExceedsBurst}, false},
		// The Limit is checked, with its Burst filled in.
		{0, Allow(2, 0), fixed{d: admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 2, Period: time.Second}, Remaining: 2}}, false},
		{0, Allow(2, 0), fixed{d: admit.Decision{Allowed: true, Limit: l, Remaining: 2, Rule: "any"}}, true},
	} {
		rec := &recorder{ctx: t.Context()}
		Scenario{Name: "s", Limit: admit.Limit{Rate: 2, Period: time.Second}, Steps: []Step{{t0, "a", c.n, c.want}}}.Play(rec, c.subj)
		if ok := len(rec.errs) == 0; ok != c.ok {
			t.Errorf("n=%d want %v subject %+v: passed=%v, want %v (%q)", c.n, c.want, c.subj, ok, c.ok, rec.errs)
		}
	}
}

// mutant is the model with one decision in some altered.
type mutant struct {
	admit.KeyedLimiter
	mutate func(r admit.Request, d *admit.Decision) bool
	hit    bool
}

func (m *mutant) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	d, err := m.KeyedLimiter.Allow(ctx, r)
	if !m.hit && m.mutate(r, &d) {
		m.hit = true
	}
	return d, err
}

// TestDifferentialCatchesMutants: off-by-one-nanosecond and off-by-one-event
// errors, and the wrong rule for time going backwards, are all caught.
func TestDifferentialCatchesMutants(t *testing.T) {
	mutations := map[string]func(r admit.Request, d *admit.Decision) bool{
		"retry_1ns_early": func(r admit.Request, d *admit.Decision) bool {
			if !d.Allowed && d.RetryAfter > 1 && d.RetryAfter != admit.InfDuration {
				d.RetryAfter--
				return true
			}
			return false
		},
		"reset_1ns_late": func(r admit.Request, d *admit.Decision) bool {
			if d.ResetAfter > 0 {
				d.ResetAfter++
				return true
			}
			return false
		},
		"remaining_plus_one": func(r admit.Request, d *admit.Decision) bool {
			if r.N == 0 && d.Remaining < d.Limit.Burst {
				d.Remaining++
				return true
			}
			return false
		},
		"admits_a_denial": func(r admit.Request, d *admit.Decision) bool {
			if r.N > 0 && !d.Allowed && d.RetryAfter != admit.InfDuration {
				*d = admit.Decision{Allowed: true, Limit: d.Limit}
				return true
			}
			return false
		},
	}
	r := rand.New(rand.NewPCG(7, 7))
	for name, mutate := range mutations {
		caught, hit := 0, 0
		for range 25 {
			l := RandomLimit(r)
			for _, alg := range admit.Algorithms() {
				reqs := RandomTimeline(r, alg, l, 100, true)
				m := &mutant{KeyedLimiter: Model(alg, l), mutate: mutate}
				err := differential(t.Context(), m, alg, l, reqs)
				if m.hit {
					hit++
					if err != nil {
						caught++
					}
				} else if err != nil {
					t.Fatalf("%s: unmutated run failed: %v", name, err)
				}
			}
		}
		if hit == 0 || caught != hit {
			t.Errorf("%s: caught %d of %d mutants", name, caught, hit)
		}
	}
	// The buckets' backwards rule is not GCRA's: on timelines that go
	// backwards, GCRA's decisions fail a token bucket's differential.
	failed := 0
	for range 50 {
		l := RandomLimit(r)
		reqs := RandomTimeline(r, admit.AlgTokenBucket, l, 200, true)
		if differential(t.Context(), Model(admit.AlgGCRA, l), admit.AlgTokenBucket, l, reqs) != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Error("GCRA passed for a token bucket on 50 timelines with backward jumps")
	}
}

// TestDifferentialReportsTimeline: a failure names the request and prints
// the key's timeline so far.
func TestDifferentialReportsTimeline(t *testing.T) {
	l := admit.PerSecond(1)
	reqs := []admit.Request{{Key: "a", N: 1, At: t0}, {Key: "b", N: 1, At: t0}, {Key: "a", N: 1, At: t1}}
	m := &mutant{KeyedLimiter: Model(admit.AlgGCRA, l), mutate: func(r admit.Request, d *admit.Decision) bool {
		if r.At.Equal(t1) {
			d.RetryAfter++
			return true
		}
		return false
	}}
	err := differential(t.Context(), m, admit.AlgGCRA, l, reqs)
	want := `gcra 1/s {Rate:1 Period:1s Burst:1}: request 2 at +100ms key "a" n=1: got {Allowed:false Remaining:0 RetryAfter:900.000001ms ResetAfter:900ms} want {Allowed:false Remaining:0 RetryAfter:900ms ResetAfter:900ms} (want is the model's)
key "a" so far:
	at +0s key "a" n=1 -> model {Allowed:true Remaining:0 RetryAfter:0s ResetAfter:1s}
	at +100ms key "a" n=1 -> model {Allowed:false Remaining:0 RetryAfter:900ms ResetAfter:900ms}`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestTimelineFromBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for i := range 300 {
		data := make([]byte, r.IntN(600))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		alg, l, reqs := TimelineFromBytes(data)
		if err := Model(alg, l).(*model).err; err != nil {
			t.Fatalf("input %d: invalid limit %v: %v", i, l, err)
		}
		if len(reqs) > 400 {
			t.Fatalf("input %d: %d requests", i, len(reqs))
		}
		alg2, l2, reqs2 := TimelineFromBytes(data)
		if alg2 != alg || l2 != l || len(reqs2) != len(reqs) {
			t.Fatalf("input %d: decoding is not deterministic", i)
		}
	}
	if alg, l, reqs := TimelineFromBytes(nil); alg != admit.AlgGCRA || l.Validate() != nil || len(reqs) != 0 {
		t.Errorf("empty input: %v %v %d requests", alg, l, len(reqs))
	}
}

func TestScenarioNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range Scenarios() {
		for _, a := range sc.Algs {
			k := a.String() + "/" + sc.Name
			if seen[k] {
				t.Errorf("duplicate scenario %s", k)
			}
			seen[k] = true
		}
		if strings.ContainsAny(sc.Name, " /") {
			t.Errorf("scenario name %q: use _ for spaces", sc.Name)
		}
	}
}

func TestModelRejectsInvalidLimits(t *testing.T) {
	for _, c := range []struct {
		alg admit.Algorithm
		l   admit.Limit
	}{
		{admit.AlgGCRA, admit.Limit{Rate: -1, Period: time.Second}},
		{admit.AlgGCRA, admit.Limit{Rate: 1}},
		{admit.AlgGCRA, admit.Limit{Burst: 1}},
		{admit.AlgGCRA, admit.Every(40 * 365 * day)},
		{admit.AlgFixedWindow, admit.Limit{Rate: 2e9, Period: time.Second, Burst: 1}},
	} {
		if _, err := Model(c.alg, c.l).Allow(t.Context(), admit.Request{Key: "a", N: 1, At: t0}); !errors.Is(err, admit.ErrInvalidLimit) {
			t.Errorf("%v %+v: %v", c.alg, c.l, err)
		}
	}
	if _, err := Model(admit.Algorithm(99), admit.PerSecond(1)).Allow(t.Context(), admit.Request{Key: "a", N: 1, At: t0}); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "unknown algorithm Algorithm(99)") {
		t.Errorf("unknown algorithm: %v", err)
	}
	// A window of 1ns is fine for the windows, and shorter for the buckets.
	if _, err := Model(admit.AlgSlidingLog, admit.Limit{Rate: 1e9, Period: time.Second, Burst: 1}).Allow(t.Context(), admit.Request{Key: "a", N: 1, At: t0}); err != nil {
		t.Error(err)
	}
	if _, err := Model(admit.AlgGCRA, admit.Limit{Rate: 2e9, Period: time.Second, Burst: 1}).Allow(t.Context(), admit.Request{Key: "a", N: 1, At: t0}); err != nil {
		t.Error(err)
	}
}
