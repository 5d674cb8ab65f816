package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/admit-go/admit"
)

// Transport is an http.RoundTripper that keeps a client within the limits
// of the services it calls: it waits for a token of its rate limits before
// each request, honours the pauses the services ask for, and optionally
// retries requests refused with 429 or 503 within a retry budget.
//
// Before a request is sent, it waits for three things: the end of its
// host's pause, a token of its host's limit (Config.HostLimit), and a token of
// the shared limit (Config.Limiter), reserved in that order for the instant
// the previous ones allow. The total wait is known before waiting: when it
// would exceed Config.MaxWait, or end after the request context's deadline,
// the request fails at once with an error wrapping admit.ErrWaitTooLong or
// admit.ErrDeadline (and ErrPaused when the host's pause is the reason),
// without being sent and without taking tokens. A wait ends early, with
// the context's error, when the context ends; its tokens are given back.
//
// A response pauses its host when it says so (see the package doc): a 429
// or 503 with Retry-After, a RateLimit field saying a policy has no quota
// left (r=0) for t seconds, or X-RateLimit-Remaining: 0 with
// X-RateLimit-Reset. Later requests to the host wait for the pause to end
// or fail fast by the same rule. Pauses are capped by Config.MaxPause.
//
// Retries (Config.Retries) are for idempotent requests whose body can be
// sent again, answered 429 or 503, while the retry budget allows: each
// retry waits for the pause and a jittered backoff by the same bounded-wait
// rule, and when a retry cannot be made the 429 or 503 is returned as it
// came. The bodies of responses that are not returned are drained (up to
// 64 KiB) and closed, so their connections can be reused.
//
// Time is read from the Transport's Clock (Config.Clock), which also times the
// waits; the deadline of a request's context is compared with it.
//
// The zero Transport is not usable; create one with New. A Transport is
// safe for concurrent use, and starts no goroutines.
type Transport struct {
	base       http.RoundTripper
	lim        reserver
	hosts      hostTable
	perHost    bool
	maxWait    time.Duration
	maxPause   time.Duration
	retries    int
	budget     *budget
	backoff    time.Duration
	maxBackoff time.Duration
	clock      admit.Clock
	base0      time.Time      // origin of the time line
	random     func() float64 // in [0, 1), for the jitter
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport sending requests through base
// (http.DefaultTransport if nil), configured by cfg (the zero Config gives
// the defaults). It fails with an error wrapping admit.ErrInvalidConfig,
// naming the field, for a field of cfg out of its domain.
func New(base http.RoundTripper, cfg Config) (*Transport, error) {
	o, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{
		base:       base,
		lim:        o.lim,
		hosts:      hostTable{m: make(map[string]*host), max: o.maxHosts, limit: o.hostLimit, clock: o.clock},
		perHost:    o.hostLimit != nil,
		maxWait:    o.maxWait,
		maxPause:   o.maxPause,
		retries:    o.retries,
		backoff:    o.backoff,
		maxBackoff: o.maxBackoff,
		clock:      o.clock,
		base0:      o.clock.Now(),
		random:     rand.Float64,
	}
	if o.retries > 0 {
		t.budget = newBudget(o.ratio, o.budgetMin, o.window)
	}
	return t, nil
}

// ns returns instant now on the Transport's time line.
func (t *Transport) ns(now time.Time) int64 { return int64(now.Sub(t.base0)) }

// RoundTrip sends req once its turn has come (see Transport), and returns
// the response of its last attempt. It fails without sending req when the
// wait would be too long, when req's context ends while it waits, or with
// an error wrapping admit.ErrTooManyKeys (see Config.MaxHosts); errors of
// the base RoundTripper are returned as they are. Like every RoundTripper,
// it closes req's body, even on errors.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("transport: nil Request.URL")
	}
	key := hostKey(req.URL)
	ctx := req.Context()
	retry := t.retries > 0 && idempotent(req) && replayable(req)
	if t.budget != nil {
		t.budget.request(t.ns(t.clock.Now()))
	}
	g, err := t.plan(ctx, key, 0)
	if err == nil {
		err = g.wait(ctx, t)
	}
	if err != nil {
		closeBody(req)
		return nil, err
	}
	r := req
	for attempt := 1; ; attempt++ {
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		t.observe(key, resp)
		if !retry || attempt > t.retries || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
			return resp, nil
		}
		g, err := t.plan(ctx, key, t.backoffFor(attempt))
		if err != nil {
			return resp, nil
		}
		if !t.budget.retry(t.ns(g.now)) {
			g.cancel(t)
			return resp, nil
		}
		var body io.ReadCloser
		if req.Body != nil && req.Body != http.NoBody {
			if body, err = req.GetBody(); err != nil {
				g.cancel(t)
				return resp, nil
			}
		}
		drain(resp)
		if err := g.wait(ctx, t); err != nil {
			if body != nil {
				body.Close()
			}
			return nil, err
		}
		r = req.Clone(ctx)
		if body != nil {
			r.Body = body
		}
	}
}

// CloseIdleConnections closes the idle connections of the base
// RoundTripper, if it has a CloseIdleConnections method (as
// *http.Transport does); http.Client.CloseIdleConnections calls it.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// grant is a planned wait: reservations, and when the request may go.
type grant struct {
	now   time.Time // when it was planned
	delay time.Duration
	res   [2]admit.Reservation
	n     int
	key   string
	limit time.Time // the latest instant the wait may reach
	lerr  error     // the error a wait past limit gets
}

// plan reserves tokens for a request to host key that must not go before
// minWait from now, and returns the grant, or the error to fail the
// request with at once if the wait would be too long.
func (t *Transport) plan(ctx context.Context, key string, minWait time.Duration) (grant, error) {
	if err := ctx.Err(); err != nil {
		return grant{}, err
	}
	now := t.clock.Now()
	ns := t.ns(now)
	g := grant{now: now, key: key, limit: now.Add(t.maxWait), lerr: admit.ErrWaitTooLong}
	if dl, ok := ctx.Deadline(); ok && dl.Before(g.limit) {
		g.limit, g.lerr = dl, admit.ErrDeadline
	}
	h, err := t.hosts.get(key, t.perHost, now, ns)
	if err != nil {
		return grant{}, fmt.Errorf("transport: %s: %w", key, err)
	}
	var pause time.Duration
	if h != nil {
		if u := h.until.Load(); u > ns {
			pause = time.Duration(u - ns)
		}
	}
	delay := max(minWait, pause)
	if err := g.check(delay, pause); err != nil {
		return grant{}, err
	}
	reserve := func(lim reserver, what string) error {
		r := lim.ReserveN(now.Add(delay), 1)
		g.res[g.n], g.n = r, g.n+1
		if !r.OK() {
			return fmt.Errorf("transport: %s: the %s never admits a request: %w", key, what, admit.ErrWaitTooLong)
		}
		delay = max(delay, r.DelayFrom(now))
		return g.check(delay, pause)
	}
	if h != nil && h.lim != nil {
		if err := reserve(h.lim, "host limit"); err != nil {
			g.cancel(t)
			return grant{}, err
		}
	}
	if t.lim != nil {
		if err := reserve(t.lim, "limiter"); err != nil {
			g.cancel(t)
			return grant{}, err
		}
	}
	g.delay = delay
	return g, nil
}

// check returns the error of a wait of delay, of which pause is the
// host's pause, if it would pass the grant's limit.
func (g *grant) check(delay, pause time.Duration) error {
	if delay == 0 {
		return nil
	}
	// A request may wait the maximum wait, but must go before its
	// deadline.
	if end := g.now.Add(delay); g.lerr == admit.ErrDeadline && end.Before(g.limit) || g.lerr != admit.ErrDeadline && !end.After(g.limit) {
		return nil
	}
	what := "the rate limit"
	if pause > 0 && pause >= delay {
		what = "the host's pause"
	}
	bound := "the maximum wait " + g.limit.Sub(g.now).String()
	if g.lerr == admit.ErrDeadline {
		bound = "the request's deadline in " + g.limit.Sub(g.now).String()
	}
	if pause > 0 {
		return fmt.Errorf("transport: %s: waiting %v for %s would pass %s: %w (%w)", g.key, delay, what, bound, g.lerr, ErrPaused)
	}
	return fmt.Errorf("transport: %s: waiting %v for %s would pass %s: %w", g.key, delay, what, bound, g.lerr)
}

// cancel gives back the grant's tokens.
func (g *grant) cancel(t *Transport) {
	now := t.clock.Now()
	for i := range g.n {
		g.res[i].CancelAt(now)
	}
}

// wait waits until the grant's time, then for any pause of its host set
// meanwhile, within the grant's limit. It returns ctx's error if ctx ends
// first, giving the tokens back.
func (g *grant) wait(ctx context.Context, t *Transport) error {
	delay := g.delay
	for delay > 0 {
		tm := t.clock.NewTimer(delay)
		select {
		case <-tm.C():
		case <-ctx.Done():
			tm.Stop()
			g.cancel(t)
			return ctx.Err()
		}
		// A response may have paused the host while we waited.
		now := t.clock.Now()
		ns := t.ns(now)
		h, _ := t.hosts.get(g.key, false, now, ns)
		if h == nil {
			return nil
		}
		u := h.until.Load()
		if u <= ns {
			return nil
		}
		delay = time.Duration(u - ns)
		if err := g.check(now.Sub(g.now)+delay, delay); err != nil {
			return err
		}
	}
	return nil
}

// observe pauses the host of a response that asks for it.
func (t *Transport) observe(key string, resp *http.Response) {
	if t.maxPause == 0 || !mayPause(resp.Header, resp.StatusCode) {
		return
	}
	now := t.clock.Now()
	d, ok := pauseOf(resp.Header, resp.StatusCode, now)
	if !ok || d <= 0 {
		return
	}
	ns := t.ns(now)
	t.hosts.pause(key, now, ns, ns+int64(min(d, t.maxPause)))
}

// backoffFor returns the jittered backoff before retry k (from 1): a
// random duration between half and all of base×2^(k-1), capped.
func (t *Transport) backoffFor(k int) time.Duration {
	b := t.backoff
	for i := 1; i < k && b < t.maxBackoff; i++ {
		if b > t.maxBackoff/2 {
			b = t.maxBackoff
			break
		}
		b *= 2
	}
	b = min(b, t.maxBackoff)
	return b/2 + time.Duration(t.random()*float64(b/2))
}

// idempotent reports whether req may be sent twice, as net/http judges
// it: a GET, HEAD, OPTIONS or TRACE, or a request with an Idempotency-Key
// or X-Idempotency-Key header.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	if _, ok := req.Header["Idempotency-Key"]; ok {
		return true
	}
	_, ok := req.Header["X-Idempotency-Key"]
	return ok
}

// replayable reports whether req's body can be sent again.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// drainLimit bounds what is read of a discarded response's body: a longer
// body costs more to read than a new connection.
const drainLimit = 64 << 10

// drain reads what is left of resp's body, up to drainLimit, and closes it.
func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	resp.Body.Close()
}
