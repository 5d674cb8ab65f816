package admittest

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/admit-go/admit"
)

// flawed wraps a model with an AllowAtMost that gets one thing wrong.
type flawed struct {
	admit.KeyedLimiter
	most func(m admit.KeyedLimiter, r admit.Request) (int64, admit.Decision, error)
}

func (f flawed) AllowAtMost(_ context.Context, r admit.Request) (int64, admit.Decision, error) {
	return f.most(f.KeyedLimiter, r)
}

// TestPartialCatchesMistakes: the partial grants Run checks fail a limiter
// that grants all or nothing, reports the wrong wait, takes more than it
// grants, or fails a negative n with the wrong error; the model itself
// passes.
func TestPartialCatchesMistakes(t *testing.T) {
	ctx := context.Background()
	l := admit.PerSecond(5).WithBurst(7)
	for name, c := range map[string]struct {
		most func(m admit.KeyedLimiter, r admit.Request) (int64, admit.Decision, error)
		want string // in the error; "" for none
	}{
		"model": {func(m admit.KeyedLimiter, r admit.Request) (int64, admit.Decision, error) {
			return m.(admit.PartialAllower).AllowAtMost(ctx, r)
		}, ""},
		"all or nothing": {func(m admit.KeyedLimiter, r admit.Request) (int64, admit.Decision, error) {
			d, err := m.Allow(ctx, r)
			if d.Allowed && r.N > 0 {
				return r.N, d, err
			}
			return 0, d, err
		}, "got 0 granted"},
		"no wait after a short grant": {func(m admit.KeyedLimiter, r admit.Request) (int64, admit.Decision, error) {
			g, _, err := m.(admit.PartialAllower).AllowAtMost(ctx, r)
			d, _ := m.Allow(ctx, admit.Request{Key: r.Key, At: r.At})
			if g == 0 && r.N > 0 {
				d.Allowed = false
			}
			return g, d, err
		}, "RetryAfter:0s"},
		"takes one more": {func(m admit.KeyedLimiter, r admit.Request) (int64, admit.Decision, error) {
			g, d, err := m.(admit.PartialAllower).AllowAtMost(ctx, r)
			if g > 0 && g == r.N {
				_, _ = m.Allow(ctx, admit.Request{Key: r.Key, N: 1, At: r.At})
			}
			return g, d, err
		}, "want is the model's"},
		"wrong error": {func(m admit.KeyedLimiter, r admit.Request) (int64, admit.Decision, error) {
			if r.N < 0 {
				return 0, admit.Decision{RetryAfter: admit.InfDuration}, errors.New("bad n")
			}
			return m.(admit.PartialAllower).AllowAtMost(ctx, r)
		}, `error "bad n"`},
	} {
		t.Run(name, func(t *testing.T) {
			var failed string
			for _, alg := range admit.Algorithms() {
				subj := flawed{Model(alg, l), c.most}
				reqs := gen{randChooser{rand.New(rand.NewPCG(uint64(alg), 9))}}.timeline(alg, l, 200, false, nil, nil)
				partial := make([]bool, len(reqs))
				for i := range partial {
					partial[i] = i%3 != 0
				}
				if err := playPartial(t, subj, alg, l, reqs, partial); err != nil {
					failed = err.Error()
					break
				}
			}
			switch {
			case c.want == "" && failed != "":
				t.Errorf("the model failed: %s", failed)
			case c.want != "" && !strings.Contains(failed, c.want):
				t.Errorf("got %q, want a failure saying %q", failed, c.want)
			}
		})
	}
}
