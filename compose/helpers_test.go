package compose_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// errDown is the error of a primary whose store is down.
var errDown = errors.New("store down")

// primaryDecision is what a healthy fakePrimary decides.
var primaryDecision = admit.Decision{Allowed: true, Limit: admit.PerSecond(10), Remaining: 9, Rule: "primary"}

// behavior is what a fakePrimary does on a call.
type behavior func(ctx context.Context, key string, n int64) (admit.Decision, error)

func healthy(context.Context, string, int64) (admit.Decision, error) { return primaryDecision, nil }

func down(context.Context, string, int64) (admit.Decision, error) {
	return admit.Decision{RetryAfter: admit.InfDuration}, errDown
}

// hang waits for the context, as a call to a store that does not answer;
// it signals entered (if not nil) once it waits.
func hang(entered chan<- struct{}) behavior {
	return func(ctx context.Context, _ string, _ int64) (admit.Decision, error) {
		if entered != nil {
			entered <- struct{}{}
		}
		<-ctx.Done()
		return admit.Decision{}, ctx.Err()
	}
}

// gated waits until gate is closed (after signalling entered), then
// behaves as then.
func gated(entered chan<- struct{}, gate <-chan struct{}, then behavior) behavior {
	return func(ctx context.Context, key string, n int64) (admit.Decision, error) {
		entered <- struct{}{}
		<-gate
		return then(ctx, key, n)
	}
}

// fakePrimary is a test double for a keyed limiter whose store fails on
// demand: it does what its current behavior says and counts its calls.
type fakePrimary struct {
	calls  atomic.Int64
	behave atomic.Pointer[behavior]
}

func newPrimary(b behavior) *fakePrimary {
	p := &fakePrimary{}
	p.set(b)
	return p
}

func (p *fakePrimary) set(b behavior) { p.behave.Store(&b) }

func (p *fakePrimary) Allow(ctx context.Context, key string, n int64) (admit.Decision, error) {
	p.calls.Add(1)
	return (*p.behave.Load())(ctx, key, n)
}

// recorder is an admit.Observer that records the FallbackEvents and counts
// the decisions it is told of.
type recorder struct {
	admit.NopObserver
	mu      sync.Mutex
	events  []admit.FallbackEvent
	decided atomic.Int64
}

func (r *recorder) FallbackChanged(e admit.FallbackEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) Decided(admit.DecisionEvent) { r.decided.Add(1) }

func (r *recorder) Events() []admit.FallbackEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]admit.FallbackEvent(nil), r.events...)
}

// syncBuffer is a bytes.Buffer safe for concurrent use, for a logger's
// output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSuffix(s.b.String(), "\n"), "\n")
}

var ctx = context.Background()

func mustGuard(t testing.TB, primary compose.Limiter, p compose.Policy, opts ...compose.Option) *compose.Guard {
	t.Helper()
	g, err := compose.NewGuard(primary, p, opts...)
	if err != nil {
		t.Fatalf("NewGuard: %v", err)
	}
	return g
}

func allow(t testing.TB, g compose.Limiter, key string, n int64) admit.Decision {
	t.Helper()
	d, err := g.Allow(ctx, key, n)
	if err != nil {
		t.Fatalf("Allow(%q, %d): %v", key, n, err)
	}
	return d
}
