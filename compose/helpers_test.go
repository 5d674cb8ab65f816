package compose_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// isTimeout reports whether err is the Guard's report of a primary that
// did not answer within its timeout (a context.DeadlineExceeded that says
// so), rather than a caller's own deadline.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "compose: the primary did not answer in time")
}

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

func (p *fakePrimary) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	key, n := req.Key, req.N
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

// The defaults of GuardConfig's fields, as its documentation states them.
const (
	defaultTimeout       = 50 * time.Millisecond
	defaultThreshold     = 5
	defaultProbeInterval = time.Second
	defaultRetryAfter    = time.Second
)

func mustGuard(t testing.TB, primary admit.KeyedLimiter, cfg compose.GuardConfig) *compose.Guard {
	t.Helper()
	g, err := compose.NewGuard(primary, cfg)
	if err != nil {
		t.Fatalf("NewGuard: %v", err)
	}
	return g
}

func allow(t testing.TB, g admit.KeyedLimiter, key string, n int64) admit.Decision {
	t.Helper()
	d, err := g.Allow(ctx, admit.Request{Key: key, N: n})
	if err != nil {
		t.Fatalf("Allow(%q, %d): %v", key, n, err)
	}
	return d
}

// probe is a layer that decides as told and records what it was asked:
// the admissions and refunds it saw, per key.
type probe struct {
	name   string
	decide func(ctx context.Context, key string, n int64) (admit.Decision, error)

	mu       sync.Mutex
	allows   int
	admitted map[string]int64 // admitted minus refunded events
	refunds  int
	refundOK bool // every refund came with a live context
}

func newProbe(name string, decide func(ctx context.Context, key string, n int64) (admit.Decision, error)) *probe {
	return &probe{name: name, decide: decide, admitted: map[string]int64{}, refundOK: true}
}

func admits(remaining int64) func(context.Context, string, int64) (admit.Decision, error) {
	return func(context.Context, string, int64) (admit.Decision, error) {
		return admit.Decision{Allowed: true, Remaining: remaining, Rule: "own"}, nil
	}
}

func refuses(retry time.Duration) func(context.Context, string, int64) (admit.Decision, error) {
	return func(context.Context, string, int64) (admit.Decision, error) {
		return admit.Decision{RetryAfter: retry, Rule: "own"}, nil
	}
}

func fails(err error) func(context.Context, string, int64) (admit.Decision, error) {
	return func(context.Context, string, int64) (admit.Decision, error) {
		return admit.Decision{RetryAfter: admit.InfDuration}, err
	}
}

func (p *probe) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	key, n := req.Key, req.N
	d, err := p.decide(ctx, key, n)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.allows++
	if err == nil && d.Allowed {
		p.admitted[key] += n
	}
	return d, err
}

func (p *probe) Refund(ctx context.Context, req admit.Request) error {
	key, n := req.Key, req.N
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refunds++
	p.admitted[key] -= n
	if ctx.Err() != nil {
		p.refundOK = false
	}
	return nil
}

func (p *probe) counts() (allows, refunds int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.allows, p.refunds
}

func (p *probe) held(key string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.admitted[key]
}

// slotsProbe is a Slots layer counting what it holds.
type slotsProbe struct {
	max      int64
	inflight atomic.Int64
	grants   atomic.Int64
}

type grant struct {
	s    *slotsProbe
	n    int64
	once sync.Once
}

func (g *grant) Release() { g.once.Do(func() { g.s.inflight.Add(-g.n) }) }

func (s *slotsProbe) TryAcquire(ctx context.Context, req admit.Request) (admit.Releaser, admit.Decision, error) {
	n := req.N
	if n == 0 {
		return nil, admit.Decision{Allowed: true, Remaining: s.max - s.inflight.Load(), Kind: admit.KindConcurrency}, nil
	}
	if s.inflight.Add(n) > s.max {
		s.inflight.Add(-n)
		return nil, admit.Decision{Kind: admit.KindConcurrency}, nil
	}
	s.grants.Add(1)
	return &grant{s: s, n: n}, admit.Decision{Allowed: true, Remaining: s.max - s.inflight.Load(), Kind: admit.KindConcurrency}, nil
}

func mustAll(t testing.TB, layers ...compose.Layer) *compose.Chain {
	t.Helper()
	c, err := compose.All(layers...)
	if err != nil {
		t.Fatalf("All: %v", err)
	}
	return c
}

// requestsOf returns a request of n events per key.
func requestsOf(keys []string, n int64) []admit.Request {
	if keys == nil {
		return nil
	}
	reqs := make([]admit.Request, len(keys))
	for i, k := range keys {
		reqs[i] = admit.Request{Key: k, N: n}
	}
	return reqs
}
