package compose_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// journal records what grants were told, in order.
type journal struct {
	mu  sync.Mutex
	log []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.log = append(j.log, s)
}

func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	l := j.log
	j.log = nil
	return l
}

// plainGrant is a Releaser that is not a Finisher.
type plainGrant struct {
	j    *journal
	name string
	done bool
}

func (g *plainGrant) Release() {
	if !g.done {
		g.done = true
		g.j.add("release " + g.name)
	}
}

// finGrant is a Finisher; only its first Release or Finish counts.
type finGrant struct {
	plainGrant
}

func (g *finGrant) Finish(failed bool) {
	if !g.done {
		g.done = true
		g.j.add(fmt.Sprintf("finish %s %v", g.name, failed))
	}
}

// grantSlots is a Slots layer handing out the grants of make, always
// admitting.
type grantSlots struct {
	make func(key string) admit.Releaser
}

func (s grantSlots) TryAcquire(ctx context.Context, req admit.Request) (admit.Releaser, admit.Decision, error) {
	key, n := req.Key, req.N
	if n == 0 {
		return nil, admit.Decision{Allowed: true, Kind: admit.KindConcurrency}, nil
	}
	return s.make(key), admit.Decision{Allowed: true, Remaining: 1, Kind: admit.KindConcurrency}, nil
}

func plainSlots(j *journal) grantSlots {
	return grantSlots{func(key string) admit.Releaser { return &plainGrant{j: j, name: key} }}
}

func finSlots(j *journal) grantSlots {
	return grantSlots{func(key string) admit.Releaser { return &finGrant{plainGrant{j: j, name: key}} }}
}

// TestHeldFinish: Finish finishes the Finishers and releases the others,
// newest first, over more than four grants; it empties the Held, and a
// second Finish or Release does nothing.
func TestHeldFinish(t *testing.T) {
	j := &journal{}
	var layers []compose.Layer
	var keys []string
	for i := range 6 {
		s := plainSlots(j)
		if i%2 == 1 {
			s = finSlots(j)
		}
		layers = append(layers, compose.Layer{Slots: s})
		keys = append(keys, fmt.Sprint("g", i))
	}
	chain := mustAll(t, layers...)
	var h compose.Held
	if h.WantsOutcome() {
		t.Fatal("an empty Held wants an outcome")
	}
	if d, err := chain.AllowKeys(ctx, keys, 1, &h); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	if h.Len() != 6 || !h.WantsOutcome() {
		t.Fatalf("Len %d, WantsOutcome %v", h.Len(), h.WantsOutcome())
	}
	h.Finish(true)
	want := []string{"finish g5 true", "release g4", "finish g3 true", "release g2", "finish g1 true", "release g0"}
	if got := j.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Finish told %q, want %q", got, want)
	}
	if h.Len() != 0 || h.WantsOutcome() {
		t.Fatalf("after Finish: Len %d, WantsOutcome %v", h.Len(), h.WantsOutcome())
	}
	h.Finish(false)
	h.Release()
	if got := j.take(); len(got) != 0 {
		t.Fatalf("a second Finish and a Release told %q", got)
	}

	// Reused: Release tells the Finishers nothing but Release.
	if d, err := chain.AllowKeys(ctx, keys, 1, &h); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	h.Release()
	want = []string{"release g5", "release g4", "release g3", "release g2", "release g1", "release g0"}
	if got := j.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Release told %q, want %q", got, want)
	}
	if h.WantsOutcome() {
		t.Fatal("WantsOutcome after Release")
	}

	// Without Finishers, Finish is Release, and nothing wants an outcome.
	plain := mustAll(t, compose.Layer{Slots: plainSlots(j)}, compose.Layer{Slots: plainSlots(j)})
	if _, err := plain.AllowKeys(ctx, []string{"a", "b"}, 1, &h); err != nil {
		t.Fatal(err)
	}
	if h.WantsOutcome() {
		t.Fatal("WantsOutcome without Finishers")
	}
	h.Finish(true)
	if got := j.take(); !reflect.DeepEqual(got, []string{"release b", "release a"}) {
		t.Fatalf("Finish without Finishers told %q", got)
	}
	var empty compose.Held
	empty.Finish(false)
}

// TestHeldFinishersUndone: a request refused by a later layer releases
// the Finishers of its own earlier layers (never finishing them) and
// leaves those of the requests before it, which still want an outcome.
func TestHeldFinishersUndone(t *testing.T) {
	j := &journal{}
	gate := &slotsProbe{max: 1}
	chain := mustAll(t,
		compose.Layer{Slots: plainSlots(j)},
		compose.Layer{Slots: finSlots(j)},
		compose.Layer{Slots: finSlots(j)},
		compose.Layer{Slots: finSlots(j)},
		compose.Layer{Name: "gate", Slots: gate},
	)
	var h compose.Held
	if d, err := chain.AllowKeys(ctx, []string{"a1", "b1", "c1", "d1", ""}, 1, &h); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	// The second request passes four layers (the Held now spills over its
	// four inline grants) and is refused by the gate.
	if d, err := chain.AllowKeys(ctx, []string{"a2", "b2", "c2", "d2", ""}, 1, &h); err != nil || d.Allowed || d.Rule != "gate" {
		t.Fatalf("%+v, %v", d, err)
	}
	if got, want := j.take(), []string{"release d2", "release c2", "release b2", "release a2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the refusal told %q, want %q", got, want)
	}
	if h.Len() != 5 || !h.WantsOutcome() {
		t.Fatalf("Len %d, WantsOutcome %v", h.Len(), h.WantsOutcome())
	}
	h.Finish(false)
	want := []string{"finish d1 false", "finish c1 false", "finish b1 false", "release a1"}
	if got := j.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Finish told %q, want %q", got, want)
	}
	if gate.inflight.Load() != 0 {
		t.Fatal("the gate's slot was not given back")
	}
}

// learner is a Limiter (and Refunder) that learns: Track hands out a
// finGrant named after the key, unless nilTrack.
type learner struct {
	*probe
	j        *journal
	tracked  int
	nilTrack bool
}

func (l *learner) Track(key string, n int64) compose.Finisher {
	l.tracked++
	if l.nilTrack {
		return nil
	}
	return &finGrant{plainGrant{j: l.j, name: fmt.Sprintf("%s/%d", key, n)}}
}

// TestLearner: a Learner layer's Finisher is recorded in the Held of an
// admitted request, released when a later layer refuses it (with the
// refund), and not asked for without a Held, for a peek, or when the
// Learner refuses.
func TestLearner(t *testing.T) {
	j := &journal{}
	l := &learner{probe: newProbe("learner", admits(5)), j: j}
	gate := newProbe("gate", admits(1))
	chain := mustAll(t, compose.Layer{Limiter: l}, compose.Layer{Name: "gate", Limiter: gate})
	var h compose.Held
	if d, err := chain.AllowKeys(ctx, []string{"k", "g"}, 2, &h); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	if h.Len() != 1 || !h.WantsOutcome() || l.tracked != 1 {
		t.Fatalf("Len %d, WantsOutcome %v, tracked %d", h.Len(), h.WantsOutcome(), l.tracked)
	}
	h.Finish(true)
	if got := j.take(); !reflect.DeepEqual(got, []string{"finish k/2 true"}) {
		t.Fatalf("Finish told %q", got)
	}

	// No Held, or a peek: nothing tracked.
	if d, err := chain.Allow(ctx, admit.Request{Key: "k", N: 1}); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	if d, err := chain.AllowKeys(ctx, []string{"k", "g"}, 1, nil); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	if d, err := chain.AllowKeys(ctx, []string{"k", "g"}, 0, &h); err != nil || !d.Allowed || h.Len() != 0 {
		t.Fatalf("%+v, %v, %d held", d, err, h.Len())
	}
	if l.tracked != 1 {
		t.Fatalf("tracked %d times without a Held or for a peek", l.tracked)
	}

	// A refusal by the gate releases the Finisher and refunds the learner.
	gate.decide = refuses(0)
	_, refundsBefore := l.counts()
	if d, err := chain.AllowKeys(ctx, []string{"k", "g"}, 1, &h); err != nil || d.Allowed || d.Rule != "gate" {
		t.Fatalf("%+v, %v", d, err)
	}
	if _, refunds := l.counts(); refunds != refundsBefore+1 {
		t.Fatalf("refunds %d, want %d", refunds, refundsBefore+1)
	}
	if got := j.take(); !reflect.DeepEqual(got, []string{"release k/1"}) || h.Len() != 0 || h.WantsOutcome() {
		t.Fatalf("the refusal told %q; Len %d, WantsOutcome %v", got, h.Len(), h.WantsOutcome())
	}

	// The learner refusing: nothing tracked.
	l.decide = refuses(0)
	tracked := l.tracked
	if d, _ := compose.Admit(ctx, []compose.Layer{{Limiter: l}}, []admit.Request{{Key: "k", N: 1}}, &h, nil); d.Allowed || l.tracked != tracked {
		t.Fatalf("%+v, tracked %d", d, l.tracked)
	}

	// Admit tracks too; a nil Finisher records nothing.
	l.decide = admits(5)
	if d, err := compose.Admit(ctx, []compose.Layer{{Limiter: l}}, []admit.Request{{Key: "k", N: 3}}, &h, nil); err != nil || !d.Allowed || h.Len() != 1 {
		t.Fatalf("%+v, %v, %d held", d, err, h.Len())
	}
	h.Release()
	if got := j.take(); !reflect.DeepEqual(got, []string{"release k/3"}) {
		t.Fatalf("Release told %q", got)
	}
	l.nilTrack = true
	if d, err := compose.Admit(ctx, []compose.Layer{{Limiter: l}}, []admit.Request{{Key: "k", N: 3}}, &h, nil); err != nil || !d.Allowed || h.Len() != 0 || h.WantsOutcome() {
		t.Fatalf("%+v, %v, %d held", d, err, h.Len())
	}
}
