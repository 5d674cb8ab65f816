package sim

import (
	"context"
	"math"
	"math/bits"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/keyed"
	"github.com/admit-go/admit/policy"
)

// maxKeyStats bounds the keys followed one by one (for the ideal, the
// bound and the warnings), over all rules.
const maxKeyStats = 2_000_000

// accounting counts what a run does, as it goes.
type accounting struct {
	r     *run
	total Tally

	// The series: per client, and the backend's; bucket is the one
	// being filled, from last (ns) on.
	bucket                  int
	last                    int64
	admitted, denied, retry [][]float64 // per client, per bucket: counts
	queue, busy, p50, p99   []float64
	bucketLatency           hist
	rules                   []*ruleAcc
	ruleIndex               map[ruleName]int
	keyStats                int
	errors                  int64
	firstErr                error
}

type ruleName struct{ domain, rule, tier string }

// ruleAcc counts one rule (or tier), with the oracle of its rate.
type ruleAcc struct {
	Tally
	limit   admit.Limit
	alg     admit.Algorithm
	oracle  *keyed.Limiter // nil: not a single rate
	t       float64        // its emission interval, ns
	burst   int64          // its burst
	keys    map[string]*keyStat
	failure policy.Failure
}

// keyStat follows one key of a rule, in events.
type keyStat struct {
	offered, adm, ideal int64
	// Of the first attempts alone (the arrivals, before retries add to
	// them), whatever other limits said: their events, those a GCRA of
	// the rule's rate and burst would refuse of them (tatB its state),
	// and the burst one that never refuses needed (tatNeed its state).
	first, firstRefused int64
	tatB, tatNeed       float64 // ns
	need                int64
	inFault             []int64 // admitted during each fault
}

func newAccounting(r *run) *accounting {
	a := &accounting{r: r, ruleIndex: map[ruleName]int{}}
	a.total.Name = "total"
	n := len(r.clients)
	a.admitted, a.denied, a.retry = grid(n, r.nsteps), grid(n, r.nsteps), grid(n, r.nsteps)
	if r.back != nil {
		a.queue, a.busy = make([]float64, r.nsteps), make([]float64, r.nsteps)
		a.p50, a.p99 = make([]float64, r.nsteps), make([]float64, r.nsteps)
	}
	return a
}

func grid(n, m int) [][]float64 {
	g := make([][]float64, n)
	for i := range g {
		g[i] = make([]float64, m)
	}
	return g
}

// attempt counts an attempt of a client's request.
func (a *accounting) attempt(rp *replica, c *client, k int, admitted bool, err error) {
	for _, t := range []*Tally{&a.total, &c.Tally, &rp.Tally} {
		if k == 1 {
			t.Requests++
		}
		t.Attempts++
		if admitted {
			t.Admitted++
		} else {
			t.Denied++
		}
	}
	b := min(a.bucket, a.r.nsteps-1)
	ci := rp.client
	if admitted {
		a.admitted[ci][b]++
	} else {
		a.denied[ci][b]++
	}
	if k > 1 {
		a.retry[ci][b]++
	}
	if err != nil {
		if a.errors++; a.firstErr == nil {
			a.firstErr = err
		}
	}
}

func (a *accounting) gaveUp(rp *replica, c *client) {
	a.total.GaveUp++
	c.GaveUp++
	rp.GaveUp++
}

func (a *accounting) succeeded(rp *replica, c *client) {
	a.total.Succeeded++
	c.Succeeded++
	rp.Succeeded++
}

func (a *accounting) failed(rp *replica, c *client) {
	a.total.Failed++
	c.Failed++
	rp.Failed++
}

// closeBucket ends the bucket being filled.
func (a *accounting) closeBucket() {
	b := a.bucket
	if a.r.back != nil && b < a.r.nsteps {
		step, k := float64(a.r.step), a.r.back
		a.queue[b], a.busy[b] = k.bucketQueue/step, k.bucketBusy/step
		k.bucketQueue, k.bucketBusy = 0, 0
		a.p50[b] = a.bucketLatency.quantile(0.5).Seconds()
		a.p99[b] = a.bucketLatency.quantile(0.99).Seconds()
	}
	a.bucketLatency.reset()
	a.bucket++
}

// decided counts what each rule said of an attempt, and what its oracle
// would have. A rule that admitted a request another limit refused gave
// its events back: it counts the request as asked, neither admitted nor
// denied, and its oracle is not asked either.
func (a *accounting) decided(rp *replica, req *policy.Request, keys []string, out *policy.Result, admitted bool, k int, t int64) {
	dom := a.r.clients[rp.client].c.Domain
	for i := range out.Statuses {
		st := &out.Statuses[i]
		if st.Rule == "" || st.Skipped || st.Exempt || st.Replaced || st.Unlimited || st.Override {
			continue
		}
		ra := a.rule(ruleName{dom, st.Rule, st.Tier})
		ra.Requests++
		ra.Attempts++
		given := st.Decision.Allowed && !admitted // refused by another limit: given back, as if never asked
		switch {
		case !st.Decision.Allowed:
			ra.Denied++
		case admitted:
			ra.Admitted++
		}
		if ra.oracle == nil || i >= len(keys) || i >= len(req.Descriptors) {
			continue
		}
		h := req.Hits
		if d := &req.Descriptors[i]; d.OwnHits {
			h = d.Hits
		}
		ks := a.keyStat(ra, keys[i])
		if ks == nil {
			continue
		}
		if k == 1 {
			ks.arrival(ra, h, t)
		}
		if !given {
			a.decidedKey(ra, ks, keys[i], h, st.Decision.Allowed, t)
		}
	}
}

// keyStat returns the record of a key of a rule (nil past maxKeyStats).
func (a *accounting) keyStat(ra *ruleAcc, key string) *keyStat {
	ks := ra.keys[key]
	if ks == nil {
		if a.keyStats >= maxKeyStats {
			return nil
		}
		a.keyStats++
		ks = &keyStat{tatNeed: math.Inf(-1), tatB: math.Inf(-1)}
		ra.keys[key] = ks
	}
	return ks
}

// decidedKey counts what the rule said of a key's attempt, what the
// oracle would have, and what it admitted during faults.
func (a *accounting) decidedKey(ra *ruleAcc, ks *keyStat, key string, h int64, allowed bool, t int64) {
	ks.offered += h
	if allowed {
		ks.adm += h
		if fi := a.r.faultAt(t); fi >= 0 {
			for len(ks.inFault) <= fi {
				ks.inFault = append(ks.inFault, 0)
			}
			ks.inFault[fi] += h
		}
	}
	d, err := ra.oracle.Allow(context.Background(), admit.Request{Key: key, N: h, At: epoch.Add(time.Duration(t))})
	if err == nil && d.Allowed {
		ks.ideal += h
	}
}

// arrival follows a key's arrivals (first attempts, whatever other limits
// say): what a GCRA of the rule's rate and burst would refuse of them
// alone, and the burst one that never refuses needed to admit them all.
func (ks *keyStat) arrival(ra *ruleAcc, h int64, t int64) {
	now, cost := float64(t), ra.t*float64(h)
	ks.first += h
	if tat := math.Max(ks.tatB, now) + cost; tat-now <= float64(ra.burst)*ra.t*(1+1e-12) {
		ks.tatB = tat
	} else {
		ks.firstRefused += h
	}
	ks.tatNeed = math.Max(ks.tatNeed, now) + cost
	if need := int64(math.Ceil((ks.tatNeed-now)/ra.t - 1e-9)); need > ks.need {
		ks.need = need
	}
}

// rule returns the accounting of a rule, made on its first request.
func (a *accounting) rule(n ruleName) *ruleAcc {
	if i, ok := a.ruleIndex[n]; ok {
		return a.rules[i]
	}
	ra := &ruleAcc{}
	ra.Name = n.rule
	if n.tier != "" {
		ra.Name += "/" + n.tier
	}
	if l, alg, f, ok := singleRate(a.r.cfg.Policy, n); ok {
		ra.limit, ra.alg, ra.failure = l, a.r.algorithm(alg), f
		ra.t = float64(l.Period) / float64(l.Rate)
		ra.burst = l.Burst
		if ra.burst == 0 {
			ra.burst = l.Rate
		}
		o, err := keyed.New(keyed.Config{Limit: l, Algorithm: alg, MaxKeys: maxKeyStats})
		if err == nil {
			ra.oracle, ra.keys = o, map[string]*keyStat{}
			ra.Bound = bound(l, a.r.algorithm(alg), 0, a.r.end)
		}
	}
	a.ruleIndex[n] = len(a.rules)
	a.rules = append(a.rules, ra)
	return ra
}

// singleRate returns the rate of a rule (or tier) limited by one rate
// alone, its algorithm and failure policy.
func singleRate(p *policy.Policy, n ruleName) (admit.Limit, admit.Algorithm, policy.Failure, bool) {
	for _, d := range p.Domains {
		if d.Name != n.domain {
			continue
		}
		for _, ru := range d.Rules {
			if ru.Name != n.rule {
				continue
			}
			lim := ru.Limits
			if n.tier != "" && ru.Tiers != nil {
				if tier := ru.Tiers.Tiers[n.tier]; tier != nil {
					lim = tier.Limits
				}
			}
			if lim.Rate == nil || len(lim.Rates) > 0 || lim.Quota != nil || lim.Rate.Rate <= 0 || lim.Rate.Rate == admit.Inf {
				return admit.Limit{}, 0, policy.Failure{}, false
			}
			return *lim.Rate, lim.Algorithm, ru.Failure, true
		}
	}
	return admit.Limit{}, 0, policy.Failure{}, false
}

// bound is the most events a key may be admitted in [from, to) (ns since
// the run's start) under l by alg: B + floor((to-from)/T) for the
// buckets; B per window the stretch touches for the fixed window (aligned
// on the Unix epoch); B per window's length for the sliding ones; 0 when
// there is none to state (the approximate sliding window).
func bound(l admit.Limit, alg admit.Algorithm, from, to int64) int64 {
	b := l.Burst
	if b == 0 {
		b = l.Rate
	}
	d := to - from
	switch alg {
	case admit.AlgSlidingWindowApprox:
		return 0
	case admit.AlgFixedWindow, admit.AlgSlidingWindow, admit.AlgSlidingLog:
		w := mulDiv(b, int64(l.Period), l.Rate) // the window: B×T
		if w <= 0 {
			return 0
		}
		n := (d + w - 1) / w
		if alg == admit.AlgFixedWindow {
			e := epoch.UnixNano()
			n = (e+to-1)/w - (e+from)/w + 1
		}
		return sat(b, n)
	}
	return b + mulDiv(d, l.Rate, int64(l.Period))
}

// mulDiv returns floor(a×b/c) for non-negative a, b and positive c,
// saturating.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

func sat(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}
