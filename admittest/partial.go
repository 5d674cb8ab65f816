package admittest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/admit-go/admit"
)

// partialLimits are the limits Run checks partial grants under: a burst
// above the rate, a rate that does not divide its period, the sliding
// window's small-limit case, an emission interval of an awkward number of
// nanoseconds, and the two degenerate limits.
func partialLimits() []admit.Limit {
	return []admit.Limit{
		admit.PerSecond(5).WithBurst(7),
		{Rate: 7, Period: 3 * sec, Burst: 4},
		admit.PerSecond(3),
		{Rate: 100003, Period: day, Burst: 20},
		admit.Unlimited,
		{},
	}
}

// runPartial checks the partial grants of limiters made by f for alg, if
// they implement admit.PartialAllower: for each of partialLimits, a
// timeline of AllowAtMost and Allow calls at instants that never go back
// (so that a backend which forgets full keys decides as the model does),
// compared with the model (see Model).
func runPartial(t *testing.T, f Factory, alg admit.Algorithm) {
	t.Helper()
	limits := partialLimits()
	if _, ok := f(t, alg, limits[0]).(admit.PartialAllower); !ok {
		return
	}
	t.Run("partial_grants", func(t *testing.T) {
		for i, l := range limits {
			r := rand.New(rand.NewPCG(uint64(alg), uint64(i)))
			reqs := gen{randChooser{r}}.timeline(alg, l, 120, false, nil, nil)
			partial := make([]bool, len(reqs))
			for j := range partial {
				partial[j] = r.IntN(3) > 0
			}
			if err := playPartial(t, f(t, alg, l), alg, l, reqs, partial); err != nil {
				t.Error(err)
			}
		}
	})
}

// playPartial plays reqs on subj and on Model(alg, l), by AllowAtMost
// where partial says so and by Allow elsewhere, and returns an error
// describing the first step on which they differ: the events granted, or a
// decision (compared as Scenario.Play compares them).
func playPartial(t testing.TB, subj admit.KeyedLimiter, alg admit.Algorithm, l admit.Limit, reqs []admit.Request, partial []bool) error {
	ctx := t.Context()
	model := Model(alg, l)
	limit := normalLimit(l)
	history := map[string][]string{}
	p, _ := subj.(admit.PartialAllower)
	for i, r := range reqs {
		var msg, line string
		if partial[i] && p != nil {
			wantG, want, err := model.(admit.PartialAllower).AllowAtMost(ctx, r)
			if err != nil {
				return fmt.Errorf("model %v %v: %v", alg, fmtLimit(l), err)
			}
			g, d, gerr := p.AllowAtMost(ctx, r)
			msg = partialMismatch(limit, r.N, wantG, wantOf(want), g, d, gerr)
			line = fmt.Sprintf("AllowAtMost %s -> model: %d granted, %v", fmtRequest(r), wantG, wantOf(want))
		} else {
			want, err := model.Allow(ctx, r)
			if err != nil {
				return fmt.Errorf("model %v %v: %v", alg, fmtLimit(l), err)
			}
			d, gerr := subj.Allow(ctx, r)
			msg = mismatch(limit, r.N, wantOf(want), d, gerr)
			line = fmt.Sprintf("Allow %s -> model %v", fmtRequest(r), wantOf(want))
		}
		history[r.Key] = append(history[r.Key], line)
		if msg != "" {
			return fmt.Errorf("%v %v: request %d: %s: %s (want is the model's)\nkey %q so far:\n\t%s",
				alg, fmtLimit(l), i, line, msg, r.Key, strings.Join(history[r.Key], "\n\t"))
		}
	}
	return nil
}

// partialMismatch compares a subject's partial grant with the model's and
// describes the difference, or returns "" if they agree. For n < 0 only
// the refusal is checked: an error wrapping admit.ErrInvalidCost, or a
// refusal, and nothing granted.
func partialMismatch(limit admit.Limit, n, wantG int64, want Want, g int64, d admit.Decision, err error) string {
	switch {
	case n < 0 && g == 0 && err != nil && errors.Is(err, admit.ErrInvalidCost):
		return ""
	case err != nil:
		return fmt.Sprintf("got %d granted and error %q, want %d granted, %v", g, err, wantG, want)
	case n < 0:
		if g != 0 || d.Allowed || d.RetryAfter != admit.InfDuration {
			return fmt.Sprintf("got %d granted, %v, want a refusal (nothing granted, Allowed:false RetryAfter:inf)", g, wantOf(d))
		}
		return ""
	case g != wantG || wantOf(d) != want:
		return fmt.Sprintf("got %d granted, %v; want %d granted, %v", g, wantOf(d), wantG, want)
	case d.Limit != limit:
		return fmt.Sprintf("got Limit %v, want %v", fmtLimit(d.Limit), fmtLimit(limit))
	}
	return ""
}
