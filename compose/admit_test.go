package compose_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

// asked is a Limiter (and Refunder) that records every request it is
// asked and refunded, and decides as told.
type asked struct {
	allow, refund []admit.Request
	refuse        bool
	remaining     int64
}

func (a *asked) Allow(_ context.Context, r admit.Request) (admit.Decision, error) {
	a.allow = append(a.allow, r)
	if a.refuse {
		return admit.Decision{RetryAfter: time.Second, Limit: r.Limit}, nil
	}
	return admit.Decision{Allowed: true, Remaining: a.remaining, Limit: r.Limit}, nil
}

func (a *asked) Refund(_ context.Context, r admit.Request) error {
	a.refund = append(a.refund, r)
	return nil
}

// TestAdmitPerLayerRequests: each layer is asked its own request (key,
// cost, limit, instant), the layers undone after a refusal are refunded
// with their own requests (a peek is not refunded), a Slots layer holds
// its own cost, a Learner tracks its own cost, and dst receives each
// layer's decision (zero for those not asked).
func TestAdmitPerLayerRequests(t *testing.T) {
	at := admittest.Epoch.Add(time.Minute)
	a, peeked, last := &asked{remaining: 7}, &asked{remaining: 3}, &asked{refuse: true}
	j := &journal{}
	l := &learner{probe: newProbe("learner", admits(5)), j: j}
	s := &slotsProbe{max: 10}
	layers := []compose.Layer{
		{Name: "a", Limiter: a},
		{Name: "peek", Limiter: peeked},
		{Name: "learner", Limiter: l},
		{Name: "slots", Slots: s},
		{Name: "last", Limiter: last},
		{Name: "never", Limiter: &asked{}},
	}
	reqs := []admit.Request{
		{Key: "ka", N: 2, Limit: admit.PerSecond(5), At: at},
		{Key: "kp", N: 0},
		{Key: "kl", N: 4},
		{Key: "ks", N: 6},
		{Key: "kz", N: 1, Limit: admit.PerMinute(9)},
		{Key: "kn", N: 1},
	}
	dst := make([]admit.Decision, len(layers))
	for i := range dst {
		dst[i] = admit.Decision{Rule: "stale"}
	}
	var h compose.Held
	d, err := compose.Admit(ctx, layers, reqs, &h, dst)
	if err != nil || d.Allowed || d.Rule != "last" || d.Limit != admit.PerMinute(9) {
		t.Fatalf("Admit = %+v, %v; want last's refusal", d, err)
	}
	if !reflect.DeepEqual(a.allow, reqs[:1]) || !reflect.DeepEqual(peeked.allow, reqs[1:2]) || !reflect.DeepEqual(last.allow, reqs[4:5]) {
		t.Errorf("asked %+v, %+v, %+v; want each layer's own request", a.allow, peeked.allow, last.allow)
	}
	if !reflect.DeepEqual(a.refund, reqs[:1]) || peeked.refund != nil {
		t.Errorf("refunded %+v and %+v; want a's own request, and no refund of the peek", a.refund, peeked.refund)
	}
	if got := l.held("kl"); got != 0 {
		t.Errorf("the learner keeps %d events after the refusal", got)
	}
	if got := j.take(); !reflect.DeepEqual(got, []string{"release kl/4"}) {
		t.Errorf("the learner's grant was told %q", got)
	}
	if s.inflight.Load() != 0 || s.grants.Load() != 1 || h.Len() != 0 {
		t.Errorf("slots: %d in flight, %d grants, %d held", s.inflight.Load(), s.grants.Load(), h.Len())
	}
	want := []admit.Decision{
		{Allowed: true, Remaining: 7, Limit: admit.PerSecond(5), Rule: "a"},
		{Allowed: true, Remaining: 3, Rule: "peek"},
		{Allowed: true, Remaining: 5, Rule: "learner"},
		{Allowed: true, Remaining: 4, Rule: "slots", Kind: admit.KindConcurrency},
		{RetryAfter: time.Second, Limit: admit.PerMinute(9), Rule: "last"},
		{},
	}
	if !reflect.DeepEqual(dst, want) {
		t.Errorf("dst = %+v\nwant  %+v", dst, want)
	}

	// Admitted: the most restrictive decision; each layer's in dst; the
	// slots and the learner's grant held with their own costs.
	last.refuse = false
	d, err = compose.Admit(ctx, layers[:5], reqs[:5], &h, dst[:5])
	if err != nil || !d.Allowed || d.Rule != "last" || d.Remaining != 0 {
		t.Fatalf("Admit = %+v, %v; want last's admission (0 remaining)", d, err)
	}
	if dst[3].Remaining != 4 || dst[2].Rule != "learner" || !dst[4].Allowed {
		t.Errorf("dst = %+v", dst[:5])
	}
	if s.inflight.Load() != 6 || h.Len() != 2 {
		t.Errorf("%d slots in flight, %d held; want 6 and 2", s.inflight.Load(), h.Len())
	}
	h.Finish(false)
	if got := j.take(); !reflect.DeepEqual(got, []string{"finish kl/4 false"}) || s.inflight.Load() != 0 {
		t.Errorf("Finish told %q, %d slots in flight", got, s.inflight.Load())
	}

	// A failing layer: its decision refuses, its error is returned.
	errBoom := errors.New("boom")
	b := newProbe("b", fails(errBoom))
	d, err = compose.Admit(ctx, []compose.Layer{{Limiter: a}, {Name: "b", Limiter: b}}, reqs[:2], nil, dst[:2])
	if !errors.Is(err, errBoom) || d.Allowed || d.Rule != "b" || !dst[0].Allowed || dst[1].Allowed || dst[1].Rule != "b" {
		t.Errorf("failing layer: %+v, %v; dst %+v", d, err, dst[:2])
	}
}

// TestAdmitBadInput: Admit checks the requests and dst before it asks a
// layer, and leaves dst as it was.
func TestAdmitBadInput(t *testing.T) {
	a := &asked{}
	s := &slotsProbe{max: 1}
	two := []compose.Layer{{Name: "a", Limiter: a}, {Name: "s", Slots: s}}
	ok := []admit.Request{{Key: "x", N: 1}, {Key: "y", N: 1}}
	var h compose.Held
	for name, c := range map[string]struct {
		reqs []admit.Request
		dst  []admit.Decision
		want error
		text string
	}{
		"one request for two layers": {ok[:1], nil, admit.ErrInvalidConfig, "compose: invalid layer: 1 requests for 2 layers"},
		"no requests":                {nil, nil, admit.ErrInvalidConfig, "compose: invalid layer: 0 requests for 2 layers"},
		"short dst":                  {ok, make([]admit.Decision, 1), admit.ErrInvalidConfig, "compose: invalid layer: room for 1 decisions for 2 layers"},
		"long dst":                   {ok, make([]admit.Decision, 3), admit.ErrInvalidConfig, "compose: invalid layer: room for 3 decisions for 2 layers"},
		"negative n in a later one":  {[]admit.Request{{Key: "x", N: 1}, {Key: "y", N: -1}}, nil, admit.ErrInvalidCost, "layer 1"},
	} {
		for i := range c.dst {
			c.dst[i].Rule = "untouched"
		}
		d, err := compose.Admit(ctx, two, c.reqs, &h, c.dst)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.text) || d.Allowed {
			t.Errorf("%s: %+v, %v; want %v saying %q", name, d, err, c.want, c.text)
		}
		for i := range c.dst {
			if c.dst[i].Rule != "untouched" {
				t.Errorf("%s: dst[%d] = %+v", name, i, c.dst[i])
			}
		}
	}
	if len(a.allow) != 0 || s.grants.Load() != 0 {
		t.Errorf("a bad Admit asked a layer: %d, %d", len(a.allow), s.grants.Load())
	}
}

// TestAdmitAllocations: Admit allocates nothing of its own, with or
// without dst, admitted or refused (refunds included).
func TestAdmitAllocations(t *testing.T) {
	open := mustKeyed(t, keyed.Config{Limit: admit.PerSecond(1e9)})
	shut := mustKeyed(t, keyed.Config{Limit: admit.PerSecond(1e9)})
	layers := []compose.Layer{{Name: "a", Limiter: open}, {Name: "b", Limiter: open}, {Name: "c", Limiter: shut}}
	reqs := []admit.Request{{Key: "x", N: 1}, {Key: "y", N: 2}, {Key: "z", N: 3}}
	refused := []admit.Request{{Key: "x", N: 1}, {Key: "y", N: 2}, {Key: "z", N: 1, Limit: admit.Limit{Period: time.Second}}}
	dst := make([]admit.Decision, len(layers))
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for name, f := range map[string]func(){
		"admitted":        func() { _, _ = compose.Admit(ctx, layers, reqs, nil, nil) },
		"admitted/dst":    func() { _, _ = compose.Admit(ctx, layers, reqs, nil, dst) },
		"refused/dst":     func() { _, _ = compose.Admit(ctx, layers, refused, nil, dst) },
		"refused/no-undo": func() { _, _ = compose.Admit(ctx, layers[2:], refused[2:], nil, dst[2:]) },
		"refused/cancel":  func() { _, _ = compose.Admit(cctx, layers[2:], refused[2:], nil, dst[2:]) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}
