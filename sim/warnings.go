package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/policy"
)

// warnings returns the findings of a run, with their figures.
func (r *run) warnings() []Warning {
	var ws []Warning
	if w, ok := r.capacityWarning(); ok {
		ws = append(ws, w)
	}
	for _, ra := range r.acct.rules {
		if w, ok := r.burstWarning(ra); ok {
			ws = append(ws, w)
		}
		ws = append(ws, r.outageWarnings(ra)...)
		if ra.OverBound > 0 {
			ws = append(ws, Warning{Kind: "bound", Message: fmt.Sprintf("rule %s admitted %d events beyond the most its limit (%s) allows any key in %v (%d), summed over its keys", ra.Name, ra.OverBound, limitText(ra.limit), r.t.Duration, ra.Bound)})
		}
	}
	if a := r.acct; a.errors > 0 {
		ws = append(ws, Warning{Kind: "error", Message: fmt.Sprintf("%d checks failed with an error, and were refused; the first: %v", a.errors, a.firstErr)})
	}
	if len(r.prefetched) > 0 {
		ws = append(ws, Warning{Kind: "model", Message: fmt.Sprintf("rules %s prefetch blocks from the shared store in admit serve; the simulation decides them exactly in the store instead (prefetching admits within the bound of package prefetch's documentation, so a fleet may admit a little more than shown)", strings.Join(r.prefetched, ", "))})
	}
	if r.acct.keyStats >= maxKeyStats {
		ws = append(ws, Warning{Kind: "error", Message: fmt.Sprintf("more than %d keys: the ideal, the bound and the warnings of the rules follow the first %d only", maxKeyStats, maxKeyStats)})
	}
	return ws
}

// limitText writes l as policy files do, with its burst.
func limitText(l admit.Limit) string {
	if l.Burst == 0 {
		return fmt.Sprintf("%v burst %d", l, l.Rate)
	}
	return l.String()
}

// capacityWarning compares what the limits let the tenants send with the
// backend's capacity at the headroom: each tenant's tightest rate on a key
// of its own, summed, and capped by the tightest rate on a key every
// tenant shares.
func (r *run) capacityWarning() (Warning, bool) {
	if r.back == nil {
		return Warning{}, false
	}
	capOf := make([]float64, len(r.reps))
	for i := range capOf {
		capOf[i] = math.Inf(1)
	}
	global := math.Inf(1)
	active := 0
	for i := range r.reps {
		if r.reps[i].Requests > 0 && r.reps[i].byKey == nil {
			active++
		}
	}
	for _, ra := range r.acct.rules {
		for key := range ra.keys {
			kr, ok := r.keyReps[key]
			if !ok {
				continue
			}
			rate := float64(ra.limit.Rate) / ra.limit.Period.Seconds() / float64(r.clients[r.reps[kr.owner].client].hits)
			switch {
			case kr.n == 1:
				capOf[kr.owner] = math.Min(capOf[kr.owner], rate)
			case int(kr.n) >= active:
				global = math.Min(global, rate)
			}
		}
	}
	var sum float64
	for i := range r.reps {
		if r.reps[i].Requests > 0 && r.reps[i].byKey == nil {
			sum += capOf[i]
		}
	}
	sum = math.Min(sum, global)
	head := r.t.Headroom
	if head == 0 {
		head = 0.7
	}
	c := r.back.capacity()
	if sum <= head*c {
		return Warning{}, false
	}
	if math.IsInf(sum, 1) {
		return Warning{Kind: "capacity", Message: fmt.Sprintf("some tenants have no rate limit, so nothing keeps what they send under %.0f%% of the backend's capacity (%.0f requests/s: %d workers, %v per request on average)", head*100, c, r.back.workers, r.back.meanService().Round(100*time.Microsecond))}, true
	}
	return Warning{Kind: "capacity", Message: fmt.Sprintf("the limits admit up to %.0f requests/s (each tenant's tightest rate, summed), more than %.0f%% of the backend's capacity: %.0f of %.0f requests/s (%d workers, %v per request on average); lower the limits, or add a limit every tenant shares at %.0f/s", sum, head*100, head*c, c, r.back.workers, r.back.meanService().Round(100*time.Microsecond), head*c)}, true
}

// burstWarning finds the keys of a rule whose arrivals (first attempts,
// whatever other limits and retries do) are within its rate on average
// yet would be refused by it: they vary more than its burst absorbs. It
// gives the burst that would have admitted all the arrivals of 99% of
// those keys, and of all of them (the seeds: size a burst from the
// arrivals' variance), when the refusals are at least 0.1% of their
// events.
func (r *run) burstWarning(ra *ruleAcc) (Warning, bool) {
	if ra.keys == nil {
		return Warning{}, false
	}
	perRun := float64(ra.limit.Rate) * float64(r.end) / float64(ra.limit.Period)
	var needs []int64
	var refused, offered int64
	for _, ks := range ra.keys {
		if ks.first == 0 || float64(ks.first) > 0.9*perRun {
			continue // over (or near) the rate: refusals are the limit's job
		}
		needs = append(needs, ks.need)
		refused += ks.firstRefused
		offered += ks.first
	}
	if refused == 0 || float64(refused) < 0.001*float64(offered) {
		return Warning{}, false
	}
	slices.Sort(needs)
	p99, most := needs[min(len(needs)-1, int(math.Ceil(0.99*float64(len(needs))))-1)], needs[len(needs)-1]
	fix := fmt.Sprintf("a burst of %d would have admitted them all", most)
	if p99 > ra.burst && p99 < most {
		fix = fmt.Sprintf("a burst of %d would have admitted all the arrivals of 99%% of those keys, and %d of every one", p99, most)
	}
	return Warning{Kind: "burst", Message: fmt.Sprintf("rule %s would refuse %d of the %d events (%.2f%%) that %d keys send within 90%% of its rate (%s) on average, before any retry: their arrivals vary more than a burst of %d absorbs; %s", ra.Name, refused, offered, 100*float64(refused)/float64(offered), len(needs), limitText(ra.limit), ra.burst, fix)}, true
}

// outageWarnings finds the faults during which a rule admitted a key more
// than its limit allows in that time.
func (r *run) outageWarnings(ra *ruleAcc) []Warning {
	if ra.keys == nil {
		return nil
	}
	var ws []Warning
	for fi, f := range r.t.Faults {
		b := bound(ra.limit, ra.alg, int64(f.From), int64(f.To))
		var worst, over int64
		for _, ks := range ra.keys {
			if fi < len(ks.inFault) && ks.inFault[fi] > b {
				over++
				worst = max(worst, ks.inFault[fi])
			}
		}
		if over == 0 {
			continue
		}
		store := f.Store
		if store == "" {
			store = "every shared store"
		}
		ws = append(ws, Warning{Kind: "outage", Message: fmt.Sprintf("while %s was down (%v to %v), rule %s admitted %d keys more than its limit (%s) allows in that time (%d events each), the worst %d (%.1f×): %s", store, f.From, f.To, ra.Name, over, limitText(ra.limit), b, worst, float64(worst)/float64(max(b, 1)), r.outageAdvice(ra.failure))})
	}
	return ws
}

// outageAdvice says why a failure policy let keys past their limit, and
// what to change.
func (r *run) outageAdvice(f policy.Failure) string {
	n := max(r.t.Instances, 1)
	switch f.Policy {
	case policy.FailOpen:
		return fmt.Sprintf("its failure policy, fail_open, admits everything while the store is down; fallback with local_share: %d would keep each of the %d instances to its share", n, n)
	case policy.Fallback:
		share := max(f.LocalShare, 1)
		if share < n {
			return fmt.Sprintf("its fallback gives each of the %d instances 1/%d of the limit (local_share: %d), %.1f× the limit together; set local_share: %d", n, share, share, float64(n)/float64(share), n)
		}
		return fmt.Sprintf("its fallback's local shares (local_share: %d, %d instances) round each burst up, and a key's requests reach the instances unevenly", share, n)
	}
	return fmt.Sprintf("its failure policy is %v", f)
}
