package policy

import (
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// clayer is one limiter of a compiled rule or tier: a rate limit or quota
// (lim) or a concurrency cap (slots), with what statuses report of it.
type clayer struct {
	kind   admit.Kind
	class  uint8  // the order of evaluation: see classOf
	label  string // Decision.Rule: the rule [/tier] [/kind]
	prefix string // label + "/": the start of the Rule of its failure policy's decisions (and of its lanes')
	limit  admit.Limit
	text   string        // the limit as the policy file writes it, for a quota (quotaText)
	delay  time.Duration // the rule's Delay, for a rate: the MaxDelay of its requests
	lim    admit.KeyedLimiter
	slots  admit.Slots
	held   slotCounts      // the counts of slots behind a failure policy (a cap kept in a shared store): see heldCounts
	learn  compose.Learner // lim, if an adaptive rate (which learns from outcomes)
	pf     *prefetched     // in lim (behind the Guard), if the layer prefetches
	print  string          // the definition, for Config.Previous
	// shortKey: the limiter keeps no reference to the keys it is given
	// (it copies what it stores), so they may be scratch space.
	shortKey bool
	// lanes marks a lanes layer: lane is the index of the match entry
	// whose value picks the lane, and laneOnly says that the other
	// entries make no key (one budget).
	lanes    bool
	lane     int
	laneOnly bool
}

// The classes of layers, in the order a check asks them: cheap local
// limits first, so that a request they refuse costs no round trip, and
// concurrency caps last, so that their slots are rarely taken only to be
// given back.
//
// Adaptive concurrency caps come last of all: a request a later layer
// refuses would give back their slots at once, which would count as a
// success of no latency.
const (
	classLocal uint8 = iota
	classRemote
	classLocalSlots
	classRemoteSlots
	classAdaptiveSlots
)

// classOf returns the class of a layer of kind kept in a store, shared or
// not.
func classOf(kind admit.Kind, shared bool) uint8 {
	c := classLocal
	if kind == admit.KindConcurrency {
		c = classLocalSlots
	}
	if shared {
		c++
	}
	return c
}

// failure returns the error of call c for its descriptor's status: its
// limiter's, or ErrStoreFailed when its rule's failure policy decided. A
// layer kept in a shared store (classRemote, classRemoteSlots) is always
// behind one (compose.Guard, compose.GuardSlots), whose decisions, and only they, have a Rule
// under the layer's prefix ("fail-open", "fail-closed", "fallback").
func (c *call) failure() error {
	switch {
	case c.err != nil:
		return c.err
	case c.done && (c.l.class == classRemote || c.l.class == classRemoteSlots) && strings.HasPrefix(c.d.Rule, c.l.prefix):
		return ErrStoreFailed
	}
	return nil
}
