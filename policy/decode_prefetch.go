package policy

// Decoding of prefetch (a rule's, the defaults', a domain's overrides'),
// and what a rule takes of defaults.prefetch.

import (
	"fmt"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/admit-go/admit"
)

// prefetchAuto is the Prefetch of "prefetch: auto": blocks sized from the
// burst (any negative Prefetch means it).
const prefetchAuto = -1

// prefetch decodes a prefetch setting: auto (prefetchAuto), off (0) or a
// block size, a whole number of events of at least 1.
func (d *decoder) prefetch(n *yaml.Node, path string) (int64, bool) {
	w := d.w
	r, ok := w.scalar(n, path, "auto, off or a block size")
	if !ok {
		return 0, false
	}
	switch strings.ToLower(strings.TrimSpace(r.Value)) {
	case "auto":
		return prefetchAuto, true
	case "off":
		return 0, true
	}
	var v int64
	if r.ShortTag() != tagInt || r.Decode(&v) != nil {
		if r.ShortTag() == tagInt || digitsOnly(r.Value) {
			w.fail(r, path, "a block of %s events is too large (the maximum is the burst)", truncate(r.Value))
		} else {
			w.fail(r, path, "want auto, off or a block size (a whole number of events), got %s", kindName(r))
		}
		return 0, false
	}
	if v <= 0 {
		w.fail(r, path, "a block of %d events: want a block size of at least 1, auto or off", v)
		return 0, false
	}
	return v, true
}

// parseDefaultPrefetch decodes defaults.prefetch.
func (d *decoder) parseDefaultPrefetch(vn *yaml.Node, fpath string) {
	if p, ok := d.prefetch(vn, fpath); ok {
		d.defaults.prefetch, d.defaults.prefetchN = p, vn
		d.defaults.prefetchPos = d.w.pos(vn)
	}
}

// rulePrefetch gives the rule its prefetch: its own, or defaults.prefetch
// if the rule can prefetch (rates only, none a sliding log, not kept in
// memory, no delay), a block size lowered to the rule's smallest burst.
func (d *decoder) rulePrefetch(rd *ruleDecoding) {
	r := rd.r
	if rd.prefetchN != nil {
		r.Prefetch = rd.prefetchVal
		return
	}
	p := d.defaults.prefetch
	if p == 0 || r.Delay != 0 || r.Store == StoreLocal || r.Tiers == nil && r.Limits.adaptive() {
		return
	}
	burst, why := prefetchable(r)
	if why != "" {
		return
	}
	if p > burst {
		p = burst
	}
	if p == 0 {
		return // a rate of zero: nothing to take
	}
	r.Prefetch = p
	r.src.set("prefetch", "defaults.prefetch", d.defaults.prefetchPos)
	d.defaults.prefetchUsed = true
}

// overridePrefetch gives a domain's inline limits defaults.prefetch, if
// its overrides do not say and can prefetch (in a store that is not local,
// by an algorithm other than the sliding log).
func (d *decoder) overridePrefetch(dom *Domain, set bool) {
	o := &dom.Override
	if set || d.defaults.prefetch == 0 || o.Store == StoreLocal || o.Algorithm == admit.AlgSlidingLog {
		return
	}
	o.Prefetch = d.defaults.prefetch
	dom.src.set("overrides.prefetch", "defaults.prefetch", d.defaults.prefetchPos)
	d.defaults.prefetchUsed = true
}

// checkDefaultPrefetch reports a defaults.prefetch that no rule and no
// domain's inline limits took (unless the file has other errors, which
// may be why).
func (d *decoder) checkDefaultPrefetch() {
	if d.defaults.prefetch != 0 && !d.defaults.prefetchUsed && len(d.w.errs.errs) == 0 {
		d.w.fail(d.defaults.prefetchN, "defaults.prefetch", "prefetch applies to no rule: it takes blocks of rates kept in a shared store (store: redis), and no rule (nor inline limit) has one")
	}
}

// prefetchable returns the smallest burst of the rates of rule r (of its
// own limits, or of its tiers), or why r cannot prefetch: it has a
// limit other than a rate, a rate by the sliding log, or no rate.
func prefetchable(r *Rule) (burst int64, why string) {
	burst = math.MaxInt64
	if r.Share != nil {
		return 0, "share: a budget its tenants share is decided in Redis at every request (the tenants' weights and activity change what each may take)"
	}
	if r.Tiers == nil {
		return limitsPrefetchable(&r.Limits, "", burst)
	}
	rated := false
	for _, name := range sortedKeys(r.Tiers.Tiers) {
		t := r.Tiers.Tiers[name]
		if t == nil || t.Unlimited && t.Rate == nil && t.Quota == nil && t.Concurrency == nil {
			continue
		}
		rated = true
		if burst, why = limitsPrefetchable(&t.Limits, fmt.Sprintf("tier %q has ", truncate(name)), burst); why != "" {
			return 0, why
		}
	}
	if !rated {
		return 0, "every tier is unlimited: there is nothing to take"
	}
	return burst, ""
}

// limitsPrefetchable is prefetchable of limits l, whose owner what names
// in reasons ("" for the rule), with burst the smallest burst so far.
func limitsPrefetchable(l *Limits, what string, burst int64) (int64, string) {
	switch {
	case l.Quota != nil:
		return 0, what + "a quota: quotas stay strict (their counts must be durable), so every request would still go to the store; put the quota in a rule of its own"
	case l.Concurrency != nil:
		return 0, what + "a concurrency cap: its slots are leased, not prefetched, so every request would still go to the store; put the cap in a rule of its own"
	case l.adaptive():
		return 0, what + "an adaptive limit or lanes, which are kept in memory only"
	case l.Unlimited:
		return 0, what + "no limit (unlimited): there is nothing to take"
	case l.Rate == nil:
		return 0, what + "no rate: prefetch takes blocks of a rate"
	case len(l.Rates) > 0:
		return 0, what + "several rates: a block is taken from one rate, and a request must pass them all at once; keep the rule strict, or put one of the rates in a rule of its own"
	case l.Algorithm == admit.AlgSlidingLog:
		return 0, what + "a sliding log: each of its events expires on its own, which a block cannot carry (keep it strict, or use sliding_window)"
	}
	if b := rateBurst(*l.Rate); b < burst {
		burst = b
	}
	return burst, ""
}

// rateBurst returns the burst of l (its rate if Burst is 0), or the
// largest int64 for an unlimited rate.
func rateBurst(l admit.Limit) int64 {
	switch {
	case l.Rate == admit.Inf:
		return math.MaxInt64
	case l.Burst == 0:
		return l.Rate
	}
	return l.Burst
}
