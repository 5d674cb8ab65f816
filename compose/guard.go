package compose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
)

// Guard is a keyed limiter that asks a primary limiter (usually a shared
// store such as Redis) and applies a failure policy when the primary fails:
// it admits (FailOpen), denies (FailClosed), or asks a local limiter
// (Fallback), and as a Breaker it stops calling a primary that keeps
// failing and probes it until it is back.
//
// Each call of the primary runs under a timeout (GuardConfig.Timeout,
// default 50ms), so that a store that does not answer costs milliseconds. A
// call fails when it times out or returns an error that IsFailure (or the
// function of GuardConfig.IsFailure) reports as a failure of the primary;
// the policy then decides the request, and no error is returned. Other
// errors are about the request (a negative n, a key too long) and are
// returned as they are, as is the caller's own cancellation: a context
// that is done before or during the call ends the request with the
// context's error, and is not a failure of the primary.
//
// After GuardConfig.Threshold consecutive failures (default 5) the Guard considers
// the primary down: it switches to its policy, which it reports once to the
// Observer (FallbackChanged with Active true and the last failure as the
// Reason) and the logger, and, as a Breaker, it stops calling the primary.
// When the primary succeeds again (under a Breaker: when a probe succeeds)
// it switches back, which it reports once too (Active false). A primary
// that answers some requests without its store, as redisstore.Limiter's
// deny cache does, says so by being an admit.HealthReporter: a success
// counts as the store being back only when Healthy reports true. While a
// Breaker is open, a primary that is an admit.Cacher still answers the
// requests it can decide without its store (redisstore.Limiter: the keys
// its deny cache holds), so a known denial stays a denial whatever the
// policy. Switches are
// never reported per request; Stats counts the failures and the decisions
// of the policy.
//
// The decisions the policy makes are marked by their Rule: the Guard's name
// (GuardConfig.Name) followed by "/fail-open", "/fail-closed" or "/fallback", or
// just "fail-open", "fail-closed" or "fallback" if the Guard has no name.
// (Fallback's decisions are the local limiter's, with this Rule instead of
// the local limiter's name.) Decisions of the primary are returned as the
// primary made them.
//
// While the primary is healthy, a call costs the primary's call, the
// timeout's context (none with a negative GuardConfig.Timeout), a check of the caller's
// context and two atomic loads: no lock, and no allocation of its own.
//
// The zero Guard is not usable; create one with NewGuard. A Guard is safe
// for concurrent use. It starts no goroutine and needs no Close.
type Guard struct {
	// state is read by every call and written only when the Guard
	// switches (or the first failure after a success), so it shares its
	// cache line with the read-only configuration only.
	state     atomic.Int32
	primary   admit.KeyedLimiter
	local     admit.KeyedLimiter
	kind      policyKind
	breaker   bool
	timeout   time.Duration
	threshold int
	interval  int64 // ns
	clock     admit.Clock
	base      time.Time // the time line's origin: now() is time since base
	name      string
	rule      string // the Rule of the policy's decisions
	obs       admit.Observer
	log       *slog.Logger
	isFailure func(error) bool
	healthy   admit.HealthReporter // the primary, if it reports its health
	cached    admit.Cacher         // the primary, if it answers some requests locally
	refund    admit.Refunder       // the primary, if a Refunder
	lrefund   admit.Refunder       // the local limiter, if a Refunder
	policy    Policy
	openD     admit.Decision // FailOpen's decision
	closedD   admit.Decision // FailClosed's decision

	_ [64]byte

	// nextProbe is when an open breaker lets the next probe through, on
	// the time line of now(): the request that moves it on by one
	// interval (CAS) is the probe.
	nextProbe atomic.Int64
	stats     struct {
		failures, timeouts, canceled, decided, skipped, probes, switches atomic.Int64
	}

	mu       sync.Mutex // serializes switches, and so their reports
	failures int        // consecutive failures
	active   bool       // switched to the policy
	since    time.Time  // when active became true
}

var (
	_ admit.KeyedLimiter = (*Guard)(nil)
	_ admit.Refunder     = (*Guard)(nil)
	_ admit.Resetter     = (*Guard)(nil)
)

// The values of Guard.state.
const (
	stateClosed  int32 = iota // the primary decides; no failure since its last success
	stateFailing              // the primary decides; there were failures since its last success
	stateOpen                 // a Breaker is open: the policy decides, the probes excepted
	stateActive               // switched to the policy without a Breaker: the primary is still called
)

// NewGuard returns a Guard asking primary and applying cfg.Policy when it
// fails. The error wraps admit.ErrInvalidConfig and says what is wrong: a
// nil primary or Fallback(nil) ("compose: nil limiter"), the zero Policy
// ("compose: invalid policy"), or another field of cfg outside its
// domain.
func NewGuard(primary admit.KeyedLimiter, cfg GuardConfig) (*Guard, error) {
	policy := cfg.Policy
	if isNil(primary) {
		return nil, fmt.Errorf("%w: NewGuard needs a primary limiter", errNilLimiter)
	}
	switch policy.kind {
	case failOpen, failClosed:
	case fallback:
		if isNil(policy.local) {
			return nil, fmt.Errorf("%w: Fallback(nil): want the local limiter to decide when the primary fails", errNilLimiter)
		}
	default:
		return nil, fmt.Errorf("%w: the zero Policy: want FailOpen, FailClosed or Fallback(local)", errInvalidPolicy)
	}
	o, err := cfg.options()
	if err != nil {
		return nil, err
	}
	g := &Guard{
		primary:   primary,
		local:     policy.local,
		kind:      policy.kind,
		breaker:   policy.breaker,
		timeout:   o.timeout,
		threshold: o.threshold,
		interval:  int64(o.interval),
		clock:     o.clock,
		name:      o.name,
		rule:      policy.suffix(),
		obs:       o.obs,
		log:       o.log,
		isFailure: o.isFailure,
		policy:    policy,
	}
	g.healthy, _ = primary.(admit.HealthReporter)
	g.cached, _ = primary.(admit.Cacher)
	g.refund, _ = primary.(admit.Refunder)
	g.lrefund, _ = policy.local.(admit.Refunder)
	if g.name != "" {
		g.rule = g.name + "/" + g.rule
	}
	g.base = g.clock.Now()
	g.openD = admit.Decision{Allowed: true, Limit: admit.Unlimited, Remaining: admit.Unlimited.Rate, Rule: g.rule}
	g.closedD = admit.Decision{RetryAfter: o.retryAfter, ResetAfter: o.retryAfter, Rule: g.rule}
	return g, nil
}

// isNil reports whether l is nil or holds a nil pointer (or map, func...),
// on which calling Allow would panic.
func isNil(l any) bool {
	if l == nil {
		return true
	}
	switch v := reflect.ValueOf(l); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Allow decides whether r.N events may happen for r.Key: the primary
// decides, or the policy if the primary fails or, under an open Breaker,
// is not asked (see Guard). r goes as it is to the primary, and to
// Fallback's local limiter (a per-call r.Limit applies to both; a
// keyed.Shared ignores it and decides under its share). The error is
// non-nil only when the request itself was refused by the primary (see
// IsFailure), when the caller's context ended (its error), or when the
// local limiter of a Fallback failed; the Decision then denies.
func (g *Guard) Allow(ctx context.Context, r admit.Request) (admit.Decision, error) {
	if err := ctx.Err(); err != nil {
		g.stats.canceled.Add(1)
		return admit.Decision{Rule: g.name}, err
	}
	if g.state.Load() == stateOpen {
		return g.allowOpen(ctx, r)
	}
	var d admit.Decision
	var err error
	var timedOut bool
	if g.timeout == 0 {
		d, err = g.primary.Allow(ctx, r)
	} else if dc, ok := g.cachedFirst(ctx, r); ok {
		return dc, nil
	} else {
		d, timedOut, err = g.call(ctx, r)
	}
	if err != nil {
		d, _, err = g.failed(ctx, r, d, timedOut, err)
		return d, err
	}
	if g.state.Load() != stateClosed && g.primaryHealthy() {
		g.succeeded(false)
	}
	return d, nil
}

// primaryHealthy reports whether a success of the primary shows that its
// store answers: always, unless the primary has a Healthy method (as
// redisstore.Limiter does, whose deny cache answers some requests without
// Redis) that says otherwise.
func (g *Guard) primaryHealthy() bool {
	return g.healthy == nil || g.healthy.Healthy()
}

// call calls the primary under the Guard's timeout, and reports whether
// the call timed out (rather than the caller's context ending).
func (g *Guard) call(ctx context.Context, r admit.Request) (d admit.Decision, timedOut bool, err error) {
	tctx, cancel := g.bound(ctx)
	d, err = g.primary.Allow(tctx, r)
	timedOut = err != nil && tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	cancel()
	return d, timedOut, err
}

// cachedFirst asks a primary that can answer without its store (an
// admit.Cacher: a prefetching limiter's blocks, a deny cache) before a
// call the Guard would bound by a timer of its own: the answer then costs
// no timer. Such an answer says nothing of the store's health.
func (g *Guard) cachedFirst(ctx context.Context, r admit.Request) (admit.Decision, bool) {
	if g.cached == nil || g.boundedBy(ctx) {
		return admit.Decision{}, false
	}
	return g.cached.Cached(r)
}

// bound returns ctx bounded by the Guard's timeout, and its cancel: ctx
// itself (no timer, no child context) when there is no timeout or ctx's
// own deadline comes first (see boundedBy).
func (g *Guard) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.timeout == 0 || g.boundedBy(ctx) {
		return ctx, noCancel
	}
	return context.WithTimeout(ctx, g.timeout)
}

func noCancel() {}

// allowOpen decides while the breaker is open: the policy decides, except
// for the first request after each probe interval, the probe, which calls
// the primary.
func (g *Guard) allowOpen(ctx context.Context, r admit.Request) (admit.Decision, error) {
	now := g.now()
	next := g.nextProbe.Load()
	if now < next || !g.nextProbe.CompareAndSwap(next, now+g.interval) {
		g.stats.skipped.Add(1)
		if g.cached != nil {
			if d, ok := g.cached.Cached(r); ok {
				return d, nil
			}
		}
		return g.decide(ctx, r)
	}
	g.stats.probes.Add(1)
	d, timedOut, err := g.call(ctx, r)
	if err == nil {
		if g.primaryHealthy() {
			g.succeeded(true)
		} else {
			// Answered without the store: the probe tells nothing, so
			// the next request probes.
			g.nextProbe.CompareAndSwap(now+g.interval, now)
		}
		return d, nil
	}
	d, failure, err := g.failed(ctx, r, d, timedOut, err)
	if !failure {
		// The caller gave up, or the request was bad: the probe tells
		// nothing about the primary, so the next request probes.
		g.nextProbe.CompareAndSwap(now+g.interval, now)
	}
	return d, err
}

// failed handles an error of the primary. The caller's cancellation and
// errors about the request are returned as they are; failures are counted
// and decided by the policy, and failed reports them as such.
func (g *Guard) failed(ctx context.Context, r admit.Request, d admit.Decision, timedOut bool, err error) (admit.Decision, bool, error) {
	if cerr := ctx.Err(); cerr != nil {
		g.stats.canceled.Add(1)
		if !errors.Is(err, cerr) {
			err = cerr
		}
		return d, false, err
	}
	if !timedOut && !g.isFailure(err) {
		return d, false, err
	}
	g.stats.failures.Add(1)
	if timedOut {
		g.stats.timeouts.Add(1)
	}
	g.recordFailure(err, timedOut)
	d, err = g.decide(ctx, r)
	return d, true, err
}

// recordFailure counts a failure, and switches to the policy at the
// threshold.
func (g *Guard) recordFailure(err error, timedOut bool) {
	if st := g.state.Load(); st == stateOpen || st == stateActive {
		// Switched already: the count no longer matters. (A success that
		// switches back concurrently is after this failure.)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failures++
	if g.active || g.failures < g.threshold {
		if !g.active && g.state.Load() == stateClosed {
			g.state.Store(stateFailing)
		}
		return
	}
	g.active = true
	g.since = g.clock.Now()
	if g.breaker {
		g.nextProbe.Store(int64(g.since.Sub(g.base)) + g.interval)
		g.state.Store(stateOpen)
	} else {
		g.state.Store(stateActive)
	}
	if timedOut {
		err = fmt.Errorf("compose: the primary did not answer in time (%v): %w", g.timeout, err)
	}
	g.report(true, err)
}

// succeeded resets the failures after a success, and switches back to the
// primary if the Guard was switched to its policy. A success while the
// breaker is open switches back only if it is a probe's: a call that began
// before the breaker opened does not.
func (g *Guard) succeeded(probe bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.state.Load() {
	case stateClosed:
		return
	case stateOpen:
		if !probe {
			return
		}
	}
	g.failures = 0
	g.state.Store(stateClosed)
	if g.active {
		g.active = false
		g.report(false, nil)
	}
}

// report tells the observer and the logger of a switch. g.mu is held, so
// reports come in the order of the switches.
func (g *Guard) report(active bool, reason error) {
	g.stats.switches.Add(1)
	if g.obs != nil {
		g.obs.FallbackChanged(admit.FallbackEvent{Limiter: g.name, Active: active, Reason: reason})
	}
	if g.log == nil {
		return
	}
	if active {
		g.log.Warn("admit: primary limiter failing; the failure policy decides",
			"limiter", g.name, "policy", g.policy.String(), "failures", g.failures, "err", reason)
	} else {
		g.log.Info("admit: primary limiter back; it decides again",
			"limiter", g.name, "policy", g.policy.String(), "down", g.clock.Now().Sub(g.since))
	}
}

// decide is the policy's decision.
func (g *Guard) decide(ctx context.Context, r admit.Request) (admit.Decision, error) {
	var d admit.Decision
	switch {
	case g.kind == fallback:
		var err error
		d, err = g.local.Allow(ctx, r)
		d.Rule = g.rule
		if err != nil {
			return d, err
		}
	case r.N < 0:
		return admit.Decision{RetryAfter: admit.InfDuration, Rule: g.rule}, fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, r.N)
	case g.kind == failOpen:
		d = g.openD
	case r.N == 0:
		d = admit.Decision{Allowed: true, ResetAfter: g.closedD.ResetAfter, Rule: g.rule}
	default:
		d = g.closedD
	}
	g.stats.decided.Add(1)
	if g.obs != nil {
		g.obs.Decided(admit.DecisionEvent{Limiter: g.name, Key: r.Key, N: r.N, Decision: d})
	}
	return d, nil
}

// Refund gives back r.N events of r.Key that the Guard admitted, to the
// limiter that decides its requests now: the primary, unless a Breaker is open (the
// policy decides then) or the primary fails to take the refund (a failure,
// as IsFailure or a timeout says, which suggests that the policy decided
// the request too). Under Fallback the policy's refund goes to the local
// limiter; FailOpen's and FailClosed's decisions consumed nothing, so
// there is nothing to give back. compose.All calls it to undo a Guard
// layer before a layer that refused.
//
// The Guard does not remember which limiter admitted each request. If it
// switched between the admission and the refund (a refund follows its
// admission by a few layers' checks, so this is rare), the refund goes to
// the limiter that decides now: the one that admitted keeps the events,
// and the other gets them back, never beyond its full capacity. A probe
// of an open Breaker is refunded to the policy's limiter likewise.
//
// The primary's Refund runs under the Guard's timeout (GuardConfig.Timeout).
// Refunds count in no Stats and never switch the Guard. The error is
// non-nil for r.N < 0 (admit.ErrInvalidCost), when the limiter that should
// take the refund cannot (an error wrapping errors.ErrUnsupported, "compose:
// the limiter cannot give events back": the primary, or Fallback's local
// limiter, is not a Refunder), when the caller's context ends first, for
// an error of the primary about the request (see IsFailure), and for an
// error of the local limiter.
func (g *Guard) Refund(ctx context.Context, r admit.Request) error {
	if r.N < 0 {
		return fmt.Errorf("%w: n=%d", admit.ErrInvalidCost, r.N)
	}
	if r.N == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if g.state.Load() != stateOpen {
		if g.refund == nil {
			return fmt.Errorf("%w: the primary %T has no Refund", errNotRefunder, g.primary)
		}
		timedOut, err := g.callRefund(ctx, r)
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if !timedOut && !g.isFailure(err) {
			return err
		}
	}
	if g.kind != fallback {
		return nil
	}
	if g.lrefund == nil {
		return fmt.Errorf("%w: the local limiter %T has no Refund", errNotRefunder, g.local)
	}
	return g.lrefund.Refund(ctx, r)
}

// callRefund calls the primary's Refund under the Guard's timeout, and
// reports whether the call timed out.
func (g *Guard) callRefund(ctx context.Context, r admit.Request) (timedOut bool, err error) {
	tctx, cancel := g.bound(ctx)
	err = g.refund.Refund(tctx, r)
	timedOut = err != nil && tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	cancel()
	return timedOut, err
}

// boundedBy reports whether ctx's own deadline comes no later than the
// Guard's timeout would: the call is then bounded by the caller's deadline
// alone, and a context of its own (a timer and a child of ctx, the most
// costly part of a call to a fast store) would change nothing: when that
// deadline passes the caller has given up, which is not a failure of the
// primary. Envoy, for one, sends each rate-limit call with a deadline (20 ms
// by default) shorter than the Guard's default timeout.
func (g *Guard) boundedBy(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !dl.After(time.Now().Add(g.timeout))
}

// canRefund reports whether every limiter that may take a refund of g can
// give events back (see Refund).
func (g *Guard) canRefund() bool {
	return canRefund(g.primary) && (g.kind != fallback || canRefund(g.local))
}

// now reads the clock on the Guard's time line, in nanoseconds.
func (g *Guard) now() int64 { return int64(g.clock.Now().Sub(g.base)) }

// Stats counts what a Guard did since it was created. Failures, Canceled
// and Decided count requests; a request the breaker decides without the
// primary counts in Decided and Skipped only.
type Stats struct {
	// Failures counts the calls of the primary that failed: timeouts, and
	// errors that are failures of the primary (see IsFailure).
	Failures int64
	// Timeouts counts the failures that were timeouts (see GuardConfig.Timeout).
	Timeouts int64
	// Canceled counts the requests ended by the caller's context, before
	// or during the call of the primary. They are not failures.
	Canceled int64
	// Decided counts the requests the policy decided, after a failure or
	// under an open breaker.
	Decided int64
	// Skipped counts the requests the policy decided without calling the
	// primary, because the breaker was open.
	Skipped int64
	// Probes counts the calls of the primary an open breaker let through
	// to find out whether it was back.
	Probes int64
	// Switches counts the switches to the policy and back, each reported
	// once to the Observer and the logger.
	Switches int64
	// Active reports whether the Guard is switched to its policy now: the
	// primary failed GuardConfig.Threshold times in a row and has not succeeded
	// since.
	Active bool
}

// Stats returns the Guard's counts. Each is read atomically, but not all
// at one instant.
func (g *Guard) Stats() Stats {
	g.mu.Lock()
	active := g.active
	g.mu.Unlock()
	return Stats{
		Failures: g.stats.failures.Load(),
		Timeouts: g.stats.timeouts.Load(),
		Canceled: g.stats.canceled.Load(),
		Decided:  g.stats.decided.Load(),
		Skipped:  g.stats.skipped.Load(),
		Probes:   g.stats.probes.Load(),
		Switches: g.stats.switches.Load(),
		Active:   active,
	}
}
