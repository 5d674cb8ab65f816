package policy

import (
	"fmt"

	"github.com/admit-go/admit"
)

// rulePrefetch checks the prefetch of rule r (see Rule.Prefetch): a rule
// kept in a store that is not local, limiting by rates only (of its own
// or its tiers), none a sliding log, each with a burst of at least the
// block size. Whether the store is shared, and its limiters can grant
// part of a request, NewEngine checks.
func (v *validator) rulePrefetch(r *Rule, src *source) {
	if r.Prefetch == 0 || src.isBroken("prefetch") || src.isBroken("limits") || src.isBroken("store") {
		return
	}
	if r.Store == StoreLocal || r.Tiers == nil && r.Limits.adaptive() {
		v.at(src, "prefetch", "prefetch without a shared store: the rule is kept in memory (store: local), where every check is local already; prefetch takes blocks of a limit a fleet shares (store: redis)")
		return
	}
	burst, why := prefetchable(r)
	if why != "" {
		v.at(src, "prefetch", "prefetch on a rule with %s", why)
		return
	}
	if r.Prefetch > burst {
		v.at(src, "prefetch", "a block of %d events is larger than the burst, %d%s: a block holds at most the burst (or write auto)", r.Prefetch, burst, ofTier(r, burst))
	}
}

// ofTier names the tier of rule r whose rate has burst, if r has tiers.
func ofTier(r *Rule, burst int64) string {
	if r.Tiers == nil {
		return ""
	}
	for _, name := range sortedKeys(r.Tiers.Tiers) {
		if t := r.Tiers.Tiers[name]; t != nil && t.Rate != nil && rateBurst(*t.Rate) == burst {
			return fmt.Sprintf(" of tier %q", truncate(name))
		}
	}
	return ""
}

// overridePrefetch checks the prefetch of a domain's inline limits.
func (v *validator) overridePrefetch(o *Override, src *source) {
	if o.Prefetch == 0 || src.isBroken("overrides.prefetch") {
		return
	}
	switch {
	case o.Store == StoreLocal:
		v.at(src, "overrides.prefetch", "prefetch without a shared store: inline limits are kept in memory (store: local); prefetch takes blocks of a limit a fleet shares (store: redis)")
	case o.Algorithm == admit.AlgSlidingLog:
		v.at(src, "overrides.prefetch", "prefetch of inline limits by a sliding log: each of its events expires on its own, which a block cannot carry (keep it strict, or use sliding_window)")
	}
}
