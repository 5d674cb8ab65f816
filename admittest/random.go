package admittest

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

// RandomLimit returns a limit drawn from r: usually an awkward one (rates
// that do not divide their period, such as 7 per 3s; bursts from 1 to
// 2×Rate; periods from 1µs to a day; now and then 1e9/s or 1e6/s with a
// burst of 1e6), sometimes the zero limit or Unlimited. The limit is valid
// for every algorithm: package admit accepts it and its window B×T is at
// least 1ns and at most 30 days.
func RandomLimit(r *rand.Rand) admit.Limit { return gen{randChooser{r}}.limit() }

// RandomTimeline returns count requests drawn from r for keys (default "a",
// "b" and "{a}") under limit l, for algorithm alg: instants that mostly move
// forward by gaps chosen to hit the edges (0, 1ns, the emission interval,
// window boundaries ±1ns, exactly a previous RetryAfter or ResetAfter and
// 1ns less, long idle gaps) and, when backwards is set, now and then jump
// back; costs n of 0, 1, up to the burst, just above it, and now and then
// negative. The first instant is at or after Epoch.
func RandomTimeline(r *rand.Rand, alg admit.Algorithm, l admit.Limit, count int, backwards bool, keys ...string) []admit.Request {
	g := gen{randChooser{r}}
	return g.timeline(alg, l, count, backwards, keys, nil)
}

// TimelineFromBytes decodes fuzz input into an algorithm, a limit (as
// RandomLimit's) and a timeline (as RandomTimeline's, with backward jumps,
// up to 400 requests, keys "a", "b" and "{a}"). Every input decodes to
// something valid.
func TimelineFromBytes(data []byte) (admit.Algorithm, admit.Limit, []admit.Request) {
	c := &byteChooser{data: data}
	g := gen{c}
	algs := admit.Algorithms()
	alg := algs[c.intn(len(algs))]
	l := g.limit()
	return alg, l, g.timeline(alg, l, 400, true, nil, c.done)
}

// Differential plays reqs on subj, a fresh limiter for algorithm alg under
// limit l, and on Model(alg, l), and fails t at the first decision on which
// they differ (compared as Scenario.Play compares them), printing the
// failing key's timeline. It then checks the events subj admitted for each
// key whose instants never went backwards with CheckBound. The requests'
// Limit is not used: every request is decided under l.
func Differential(t testing.TB, subj admit.KeyedLimiter, alg admit.Algorithm, l admit.Limit, reqs []admit.Request) {
	t.Helper()
	if err := differential(t.Context(), subj, alg, l, reqs); err != nil {
		t.Fatal(err)
	}
}

// RunDifferential runs Differential on subjects made by f for rounds random
// limits (RandomLimit) and, for each of algs (all if none is given), a
// random timeline of up to 300 requests (RandomTimeline, with backward
// jumps), all drawn from a generator seeded with seed.
func RunDifferential(t *testing.T, f Factory, seed uint64, rounds int, algs ...admit.Algorithm) {
	t.Helper()
	if len(algs) == 0 {
		algs = admit.Algorithms()
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	for round := range rounds {
		l := RandomLimit(r)
		for _, alg := range algs {
			reqs := RandomTimeline(r, alg, l, 1+r.IntN(300), true)
			if err := differential(t.Context(), f(t, alg, l), alg, l, reqs); err != nil {
				t.Fatalf("seed %d round %d: %v", seed, round, err)
			}
		}
	}
}

func differential(ctx context.Context, subj admit.KeyedLimiter, alg admit.Algorithm, l admit.Limit, reqs []admit.Request) error {
	model := Model(alg, l)
	limit := normalLimit(l)
	type played struct {
		r    admit.Request
		want Want
	}
	history := map[string][]played{}
	events := map[string][]Event{}
	backwards := map[string]bool{}
	for i, r := range reqs {
		r.Limit = admit.Limit{} // the timeline is played under l
		want, err := model.Allow(ctx, r)
		if err != nil {
			return fmt.Errorf("model %v %v: %v", alg, fmtLimit(l), err)
		}
		h := append(history[r.Key], played{r, wantOf(want)})
		history[r.Key] = h
		got, gerr := subj.Allow(ctx, r)
		if msg := mismatch(limit, r.N, wantOf(want), got, gerr); msg != "" {
			var b strings.Builder
			for _, p := range h {
				fmt.Fprintf(&b, "\n\t%s -> model %v", fmtRequest(p.r), p.want)
			}
			return fmt.Errorf("%v %v: request %d %s: %s (want is the model's)\nkey %q so far:%s", alg, fmtLimit(l), i, fmtRequest(r), msg, r.Key, b.String())
		}
		if len(h) > 1 && r.At.Before(h[len(h)-2].r.At) {
			backwards[r.Key] = true
		}
		if got.Allowed && r.N > 0 {
			events[r.Key] = append(events[r.Key], Event{r.At, r.N})
		}
	}
	for key, evs := range events {
		if backwards[key] {
			continue
		}
		if err := CheckBound(alg, evs, l); err != nil {
			return fmt.Errorf("%v key %q: %v", alg, key, err)
		}
	}
	return nil
}

// chooser is a source of choices: uniform for the rand one, decoded from
// fuzz input for the byte one.
type chooser interface {
	intn(n int) int // in [0, n)
}

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

// byteChooser reads choices from fuzz input: one byte for n <= 256, more
// for larger n; zeros once the input is used up.
type byteChooser struct{ data []byte }

func (c *byteChooser) intn(n int) int {
	var v uint64
	for span := 1; span < n; span <<= 8 {
		v <<= 8
		if len(c.data) > 0 {
			v |= uint64(c.data[0])
			c.data = c.data[1:]
		}
	}
	return int(v % uint64(n))
}

func (c *byteChooser) done() bool { return len(c.data) == 0 }

type gen struct{ c chooser }

func (g gen) pick(xs ...int64) int64 { return xs[g.c.intn(len(xs))] }

func (g gen) limit() admit.Limit {
	switch g.c.intn(16) {
	case 1:
		return admit.Limit{}
	case 2:
		return admit.Unlimited
	}
	for range 8 {
		l := admit.Limit{
			Rate:   g.pick(1, 2, 3, 7, 10, 13, 60, 100, 1000, 100003, 1e6, 1e9, 1+int64(g.c.intn(20))),
			Period: time.Duration(g.pick(int64(time.Second), int64(time.Microsecond), int64(time.Millisecond), int64(7*time.Millisecond), int64(100*time.Millisecond), int64(3*time.Second), int64(7*time.Second), int64(time.Minute), int64(time.Hour), int64(day), 1+int64(g.c.intn(5000))*int64(time.Millisecond), 1+int64(g.c.intn(1e6)))),
		}
		switch g.c.intn(8) {
		case 1:
			l.Burst = 1
		case 2:
			l.Burst = 2
		case 3:
			l.Burst = 1 + int64(g.c.intn(10))
		case 4:
			l.Burst = l.Rate
		case 5:
			l.Burst = 2 * l.Rate
		case 6:
			l.Burst = 1e6
		}
		if l.Validate() == nil && (&model{alg: admit.AlgFixedWindow, limit: normalLimit(l)}).compile(l) == nil &&
			windowLen(l).Cmp(new(big.Rat).SetInt64(int64(30*day))) <= 0 {
			return l
		}
	}
	return admit.Limit{Rate: 7, Period: 3 * time.Second, Burst: 2}
}

// windowLen returns the window (and capacity) B×T of a limit with a
// positive, finite rate, in ns, exactly.
func windowLen(l admit.Limit) *big.Rat {
	l = normalLimit(l)
	w := big.NewRat(int64(l.Period), l.Rate)
	return w.Mul(w, big.NewRat(l.Burst, 1))
}

// timeline draws count requests (fewer if stop reports true first), playing
// them on a model to aim gaps at the instants its decisions name.
func (g gen) timeline(alg admit.Algorithm, l admit.Limit, count int, backwards bool, keys []string, stop func() bool) []admit.Request {
	if len(keys) == 0 {
		keys = []string{"a", "b", "{a}"}
	}
	nl := normalLimit(l)
	normal := nl.Rate > 0 && nl.Rate != admit.Inf
	b, tNs, wNs := int64(3), int64(time.Millisecond), int64(time.Second)
	var w *big.Rat
	if normal {
		b, tNs, w = nl.Burst, ceilRat(big.NewRat(int64(nl.Period), nl.Rate)), windowLen(nl)
		wNs = ceilRat(w)
	}
	model := Model(alg, l)
	ctx := context.Background()
	origin := unixNanos(Epoch)
	latest := origin + int64(80*365*day)
	now := origin + g.pick(0, int64(g.c.intn(int(wNs))), int64(g.c.intn(1000))*int64(time.Millisecond))
	type seen struct {
		at int64
		d  admit.Decision
	}
	last := map[string]seen{}
	var reqs []admit.Request
	for len(reqs) < count && (stop == nil || !stop()) {
		key := keys[g.c.intn(len(keys))]
		next := now
		switch g.c.intn(16) {
		case 4:
			next += 1
		case 5:
			next += tNs - 1
		case 6:
			next += tNs
		case 7:
			next += tNs + 1
		case 8:
			next += int64(g.c.intn(int(2*wNs + 1)))
		case 9: // a window boundary, or 1ns either side
			if normal {
				k := new(big.Int).Add(windowIndex(w, now), big.NewInt(1))
				next = ceilRat(new(big.Rat).Mul(new(big.Rat).SetInt(k), w)) + g.pick(0, -1, 1)
			}
		case 10, 11: // exactly when the key's last decision said, or 1ns before
			if s, ok := last[key]; ok {
				d := s.d.RetryAfter
				if d == 0 || d == admit.InfDuration || g.c.intn(2) == 0 {
					d = s.d.ResetAfter
				}
				if d != admit.InfDuration {
					next = s.at + int64(d) - int64(g.c.intn(2))
				}
			}
		case 12:
			next += int64(g.c.intn(10000)) * int64(time.Millisecond)
		case 13:
			next += int64(g.c.intn(400)) * int64(day)
		case 14:
			if backwards {
				next -= 1 + int64(g.c.intn(int(2*wNs+1)))
			}
		case 15:
			next += int64(g.c.intn(int(3*tNs + 1)))
		}
		if next > latest || (next < now && !backwards) {
			next = now
		}
		now = max(next, 0)
		at := time.Unix(0, now).UTC()
		n := g.cost(b)
		d, _ := model.Allow(ctx, admit.Request{Key: key, N: n, At: at})
		last[key] = seen{now, d}
		reqs = append(reqs, admit.Request{Key: key, N: n, At: at})
	}
	return reqs
}

// cost draws a request's n for burst b.
func (g gen) cost(b int64) int64 {
	switch g.c.intn(20) {
	case 0, 1:
		return 0
	case 9, 10:
		return 2
	case 11, 12, 13:
		return 1 + int64(g.c.intn(int(b)))
	case 14, 15:
		return b
	case 16:
		return b + 1
	case 17:
		return max(b-1, 0)
	case 18:
		return -1 - int64(g.c.intn(3))
	case 19:
		return g.pick(1<<40, 2*b, 3)
	}
	return 1
}
