package policy

import (
	"fmt"
	"time"

	"github.com/admit-go/admit"
)

// maxRuleDelay bounds Rule.Delay: a request held longer holds its
// connection (and a gateway's) for as long.
const maxRuleDelay = 10 * time.Minute

// ruleDelay checks the delay of rule r (see Rule.Delay): at most
// maxRuleDelay, on a rule with a rate (of its own or of a tier) by GCRA or
// a bucket, not prefetched.
func (v *validator) ruleDelay(r *Rule, src *source) {
	if r.Delay == 0 || src.isBroken("delay") || src.isBroken("limits") {
		return
	}
	switch {
	case r.Delay < 0:
		v.at(src, "delay", "delay %v is negative", r.Delay)
	case r.Delay > maxRuleDelay:
		v.at(src, "delay", "delay %v is longer than %v: a delayed request holds its connection while it waits", r.Delay, maxRuleDelay)
	case r.Share != nil:
		v.at(src, "delay", "delay with share: a share admits now or not at all (drop share, or the delay)")
	case r.Prefetch != 0:
		v.at(src, "delay", "delay with prefetch: a block is spent at once, it cannot hold a slot ahead (drop prefetch, or the delay)")
	default:
		if why := delayable(r); why != "" {
			v.at(src, "delay", "delay on a rule with %s", why)
		}
	}
}

// delayable returns why rule r cannot delay ("" if it can): a delay holds
// a slot of a rate ahead, which only GCRA and the buckets can.
func delayable(r *Rule) string {
	check := func(l *Limits, what string) (rated bool, why string) {
		// (what names a tier, "tier \"x\" has ", or nothing for the rule.)
		if l.Rate == nil {
			return false, ""
		}
		if len(l.Rates) > 0 {
			return true, what + "several rates: their limiter admits now or not at all (give the rule one rate, or split it)"
		}
		switch l.Algorithm {
		case admit.AlgGCRA, admit.AlgTokenBucket, admit.AlgLeakyBucket:
			return true, ""
		}
		return true, fmt.Sprintf("%sa %v rate: only gcra, token_bucket and leaky_bucket can hold a slot ahead", what, l.Algorithm)
	}
	rated, why := check(&r.Limits, "")
	if r.Tiers != nil {
		for _, name := range sortedKeys(r.Tiers.Tiers) {
			if t := r.Tiers.Tiers[name]; t != nil {
				ok, w := check(&t.Limits, fmt.Sprintf("tier %q has ", truncate(name)))
				rated = rated || ok
				if why == "" {
					why = w
				}
			}
		}
	}
	if why == "" && !rated {
		why = "no rate: a delay waits for a rate's slot; a quota or a concurrency cap admits now or not at all"
	}
	return why
}
