package policy

import (
	"math"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// TestStatusDecision: a status's Decision is its most restrictive limit's,
// named as that limit (the rule, and its tier and kind when it has
// several); Allowed is false iff that limit refused (shadow rules
// included), and true when no limit was asked.
func TestStatusDecision(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: q, match: a, quota: 5/day}
  - {name: slots, match: c, concurrency: 1}
  - {name: trial, match: s, rate: 1/min, shadow: true}
  - {name: free, match: f, unlimited: true}
  - {name: gate, match: z, rate: 1/min}
`)
	var h compose.Held
	defer h.Release()
	req := request("api", desc("a", "1"), desc("c", "1"), desc("nothing", "x"), desc("f", "1"), desc("z", "1"))
	res := check(t, e, req, &h)
	want(t, "first", res.Decision, true, "gate", 0)
	st := res.Statuses
	if d := st[0].Decision; !d.Allowed || d.Rule != "q" || d.Kind != admit.KindQuota || d.Remaining != 4 {
		t.Errorf("quota: %+v", d)
	}
	if d := st[1].Decision; !d.Allowed || d.Rule != "slots" || d.Kind != admit.KindConcurrency || d.Remaining != 0 {
		t.Errorf("slots: %+v", d)
	}
	if d := st[2].Decision; d != (admit.Decision{Allowed: true}) || st[2].Rule != "" {
		t.Errorf("unmatched: %+v", st[2])
	}
	if d := st[3].Decision; !d.Allowed || d.Limit != admit.Unlimited || d.Remaining != math.MaxInt64 || !st[3].Unlimited {
		t.Errorf("unlimited: %+v", st[3])
	}
	// The gate refuses: its status's decision refuses, the quota's was
	// undone (its event is back), the slots were not asked.
	res = check(t, e, req, &h)
	want(t, "second", res.Decision, false, "gate", 0)
	st = res.Statuses
	if d := st[4].Decision; d.Allowed || d.Rule != "gate" || st[4].Code != CodeOverLimit {
		t.Errorf("gate: %+v", st[4])
	}
	if d := st[0].Decision; !d.Allowed || d.Remaining != 4 || st[0].Code != CodeOK {
		t.Errorf("undone quota: %+v", st[0])
	}
	if d := st[1].Decision; !st[1].Skipped || !d.Allowed || d.Rule != "slots" || d.Limit.Rate != 1 {
		t.Errorf("skipped slots: %+v", st[1])
	}
	// A shadow rule that would refuse: Code OK, Decision refusing.
	check(t, e, request("api", desc("s", "1")), nil)
	res = check(t, e, request("api", desc("s", "1")), nil)
	if st := res.Statuses[0]; st.Code != CodeOK || !st.WouldRefuse || st.Decision.Allowed || st.Decision.Rule != "trial" {
		t.Errorf("shadow: %+v", st)
	}
}

// TestEnginePerDescriptorUndo: each descriptor's limit is asked, and given
// back, with that descriptor's own cost.
func TestEnginePerDescriptorUndo(t *testing.T) {
	e, _ := engine(t, `
domain: api
rules:
  - {name: a, match: a, rate: 10/min}
  - {name: b, match: b, rate: 4/min}
`)
	req := &Request{Domain: "api", Hits: 1, Descriptors: []Descriptor{desc("a", "1"), desc("b", "1")}}
	req.Descriptors[0].Hits, req.Descriptors[0].OwnHits = 3, true
	req.Descriptors[1].Hits, req.Descriptors[1].OwnHits = 5, true
	res := check(t, e, req, nil)
	want(t, "5 of b's 4", res.Decision, false, "b", 4)
	if d := res.Statuses[0].Decision; !d.Allowed || d.Remaining != 10 {
		t.Errorf("a, undone: %+v", d)
	}
	req.Descriptors[1].Hits = 2
	res = check(t, e, req, nil)
	want(t, "3 and 2", res.Decision, true, "b", 2)
	if d := res.Statuses[0].Decision; d.Remaining != 7 {
		t.Errorf("a gave back %d of 3 events: %+v", d.Remaining-7, d)
	}
}
