package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// Decider decides a whole request, as a policy engine does.
type Decider interface {
	// Decide decides r; the slots of concurrency limits it grants are recorded in h and
	// released by the middleware after the handler returns.
	Decide(r *http.Request, h *compose.Held) (admit.Decision, error)
}

// Outcome is what the middleware did with a request it decided.
type Outcome uint8

const (
	// Admitted: the limit admitted the request; it was served.
	Admitted Outcome = iota
	// Refused: the limit refused the request (429, or Config.Status).
	Refused
	// Unkeyed: the request could not be keyed (Event.Err says why: its
	// KeyFunc or cost function failed, or the key was too long, or the
	// limiter refused the key or cost as invalid); it was refused with 400
	// or 431.
	Unkeyed
	// Skipped: the request could not be keyed and was served without a
	// limit (Config.SkipUnkeyed).
	Skipped
	// FailedOpen: the limiter failed (Event.Err); the request was served
	// (failing open, the default).
	FailedOpen
	// FailedClosed: the limiter failed (Event.Err); the request was refused
	// with 503 (Config.FailClosed).
	FailedClosed
	// Canceled: the request's context ended while the limiter decided (the
	// client went away); it was answered 503 without being served.
	Canceled
)

var outcomeNames = [...]string{
	Admitted: "admitted", Refused: "refused", Unkeyed: "unkeyed", Skipped: "skipped",
	FailedOpen: "failed-open", FailedClosed: "failed-closed", Canceled: "canceled",
}

// String returns the outcome's name: "admitted", "refused", "unkeyed",
// "skipped", "failed-open", "failed-closed" or "canceled".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Event describes one request the middleware decided, for Config.Observe.
type Event struct {
	// Request is the request. It must not be kept after the observer
	// returns.
	Request *http.Request
	// Key is the request's key (for a Chain, the first layer's; empty for
	// a Decider, or when the request could not be keyed).
	Key string
	// Cost is the request's cost (1 unless Config.Cost; 0 for a Decider).
	Cost int64
	// Outcome is what the middleware did, or in shadow mode what it would
	// have done.
	Outcome Outcome
	// Shadow reports shadow mode (Config.Shadow): the request was served
	// whatever the Outcome says.
	Shadow bool
	// Decision is the limiter's decision (the zero Decision if there was
	// none).
	Decision admit.Decision
	// Err is the error of the key function, cost function or limiter, if
	// any.
	Err error
}

type mode uint8

const (
	modeKeyed mode = iota
	modeChain
	modeDecider
)

// Middleware is net/http middleware that limits the requests it wraps, with
// any router: Handler has the signature func(http.Handler) http.Handler
// that routers' Use methods take.
//
// Each request is decided in one of three ways, fixed by the constructor:
// by a keyed limiter and a KeyFunc (New), by a compose.Chain with a
// KeyFunc per layer (NewChain), or by a Decider such as a policy engine
// (NewDecider). Requests on exempt paths (Config.ExemptPaths,
// ExemptPrefixes, Exempt) are served without a decision.
//
// An admitted request is served with the rate-limit fields of its decision
// (see Config.Fields): for a limit of 100 per minute named "api" with 42
// requests left, full again in 30 s,
//
//	RateLimit-Policy: "api";q=100;w=60
//	RateLimit: "api";r=42;t=30
//	X-RateLimit-Limit: 100
//	X-RateLimit-Remaining: 42
//	X-RateLimit-Reset: 30
//
// The policy's name is the decision's Rule ("default" if it has none); q
// is the limit's burst, the most it admits at once, and w the time its
// burst takes to come back, B×Period/Rate rounded up to whole seconds (for
// the default burst, Burst = Rate, that is the Period). t, like
// X-RateLimit-Reset, is the time until the limit is back to full capacity
// (ResetAfter), rounded up: exact for windows and calendar quotas,
// conservative for the buckets, whose capacity comes back continuously.
// A concurrency limit is sent as q=max;qu="concurrent-requests", without
// w or X-RateLimit-Reset, and without t but on a refusal. A decision without a finite limit (an unlimited
// limit, or a compose.Guard's fail-open) gets no rate-limit fields.
//
// A refused request is answered with status 429 (Config.Status), the same
// fields except that t is the Retry-After (so that Retry-After does not
// end before the effective window, as the draft asks), Retry-After in
// seconds (the decision's RetryAfter rounded up; at least 1 s, since a
// limit that cannot say, such as a concurrency limit, reports 0), and a
// JSON body:
//
//	{"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":1500}
//
// limit_dim is the Rule, retry_after_ms the RetryAfter in milliseconds,
// rounded up. Every duration the middleware sends (Retry-After, the
// RateLimit field's t, X-RateLimit-Reset and retry_after_ms) is at most a
// year, 365 days (31536000 s). Config.RetryJitter spreads the retry times
// of refusals over [t, t+j] (see admit.Jitter; off by default). A request
// that can never be admitted (its
// RetryAfter is admit.InfDuration: it costs more than the burst) is told
// so instead, without Retry-After or t: its body has "never":true in
// place of retry_after_ms. A refusal by a concurrency limit or a calendar
// quota adds "kind":"CONCURRENCY_LIMIT" or "kind":"QUOTA_EXCEEDED".
// Config.ProblemJSON sends RFC 9457 problem details instead, and
// Config.RefusalHandler writes whatever the caller likes.
//
// A request that cannot be keyed (the KeyFunc or cost function fails) is
// refused with 400 {"code":"KEY_MISSING"}, or served without a limit under
// Config.SkipUnkeyed; one whose key is repeated, empty or malformed (an error
// wrapping ErrBadKey) is refused with 400 {"code":"KEY_INVALID"} whatever
// Config.SkipUnkeyed says, so that repeating or emptying a header is never
// a way around the limit; a key longer than Config.MaxKeyLength (default 4 KiB)
// is refused with 431 {"code":"KEY_TOO_LONG"} without reaching the
// limiter.
// The limiter's errors about the request are treated alike: a key too long
// for it (admit.ErrKeyTooLong) gets 431, an invalid cost 400. Any other
// error of the limiter is a failure, decided by the failure policy:
// failing open (the default) serves the request, Config.FailClosed
// refuses it with 503 and Retry-After.
//
// The slots a Chain's or a Decider's concurrency limits grant (recorded in
// a compose.Held) are released when the handler returns, or panics: the
// panic goes on once they are released. When a grant learns from the
// request's outcome (compose.Held.WantsOutcome: an adaptive limit), the
// middleware captures the status the handler writes and finishes the Held
// instead (compose.Held.Finish): the request failed if the handler
// panicked or if Config.Failure says so of the status (by default, 429
// or 500 and more). The ResponseWriter the handler then gets
// wraps the original one: it implements http.Flusher, http.Hijacker and
// io.ReaderFrom by delegating (Flush does nothing, and Hijack fails with
// http.ErrNotSupported, where the original does not support them), and
// Unwrap, so http.ResponseController reaches the original's other
// methods.
//
// Per request, an admitted request costs the key function, the limiter's
// decision, one string and one []string for the field values (none with
// NoFields), and no closure. A refusal costs less than an admission: what
// its answer owes to the decision's Rule, Limit and Kind alone (the
// RateLimit-Policy and X-RateLimit-Limit values, the escaped name, the
// body's text) is built once and kept, for the last 16 of them; the
// values that change with the numbers are kept from the last refusal
// under the same answer, whose numbers a burst of refusals mostly repeats;
// and the body is written from a pooled buffer. A refusal whose numbers
// repeat allocates nothing, one whose numbers changed a string and its
// values' slice. See bench_test.go for the figures.
//
// The field values of a refusal the middleware answers itself (without a
// RefusalHandler), and the Content-Type of its other refusals (400, 431),
// are therefore shared between responses: a
// ResponseWriter wrapping the one the middleware writes to may replace a
// value (Header.Set, Header.Add and Header.Del do) but must not write into
// a value's slice, which net/http never does. The handler and a
// RefusalHandler get slices of their own.
//
// The zero Middleware is not usable; create one with New, NewChain or
// NewDecider. A Middleware is safe for concurrent use if its limiter, key
// functions and observer are.
type Middleware struct {
	mode    mode
	lim     admit.KeyedLimiter
	key     KeyFunc
	chain   *compose.Chain
	keys    []KeyFunc
	decider Decider
	exempts bool // any exemption is configured
	bad     [3]refusalBody
	answers answerCache
	options
}

// refusalBody is a precomputed answer to a request that cannot be keyed.
type refusalBody struct {
	status int
	ctype  []string // shared: see ctypeJSONValue
	body   string
}

// New returns middleware configured by cfg that decides each request by
// asking lim for the request's key (key(r)) and cost (1, or cfg.Cost's).
// lim is any keyed limiter (an admit.KeyedLimiter): a keyed.Limiter, a
// redisstore.Limiter, a compose.Guard, a compose.Chain whose layers share
// the key. New fails with an error wrapping admit.ErrInvalidConfig for a
// nil lim or key, or a field of cfg out of its domain.
func New(lim admit.KeyedLimiter, key KeyFunc, cfg Config) (*Middleware, error) {
	if isNil(lim) || key == nil {
		return nil, fmt.Errorf("%w: httplimit: New needs a limiter and a key function", admit.ErrInvalidConfig)
	}
	return build(&Middleware{mode: modeKeyed, lim: lim, key: key}, &cfg)
}

// NewChain returns middleware configured by cfg that decides each request
// by chain c, with keys[i](r) the key of the chain's layer i, and the cost
// of cfg.Cost (default 1). The slots of the chain's concurrency layers are
// held until the handler returns. NewChain fails with an error wrapping
// admit.ErrInvalidConfig for a nil c or key function, or if len(keys) is not the number of layers or a field of cfg is out of its
// domain.
func NewChain(c *compose.Chain, keys []KeyFunc, cfg Config) (*Middleware, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: httplimit: NewChain needs a chain", admit.ErrInvalidConfig)
	}
	if n := len(c.Layers()); len(keys) != n {
		return nil, fmt.Errorf("%w: httplimit: NewChain: %d key functions for %d layers", admit.ErrInvalidConfig, len(keys), n)
	}
	for i, k := range keys {
		if k == nil {
			return nil, fmt.Errorf("%w: httplimit: key function %d is nil", admit.ErrInvalidConfig, i)
		}
	}
	if cfg.MaxDelay != 0 {
		return nil, fmt.Errorf("%w: httplimit: MaxDelay: a chain is asked without one (give its layers' limiters to New, or use a policy)", admit.ErrInvalidConfig)
	}
	return build(&Middleware{mode: modeChain, chain: c, keys: append([]KeyFunc(nil), keys...)}, &cfg)
}

// NewDecider returns middleware configured by cfg that decides each
// request by d, a policy engine or any Decider: d works out the keys and
// the cost itself, so a cfg.Cost is an error here (wrapping
// admit.ErrInvalidConfig, as is a field of cfg out of its domain). The slots d records in the Held are released
// when the handler returns (or at once if d refuses or fails); grants that
// learn from the outcome are finished with it (see Middleware). An error of
// d wrapping ErrNoKey is treated as a request that cannot be keyed.
// NewDecider fails with an error wrapping admit.ErrInvalidConfig for a
// nil d.
func NewDecider(d Decider, cfg Config) (*Middleware, error) {
	if isNil(d) {
		return nil, fmt.Errorf("%w: httplimit: NewDecider needs a Decider", admit.ErrInvalidConfig)
	}
	if cfg.Cost != nil {
		return nil, fmt.Errorf("%w: httplimit: Cost: a Decider decides the cost itself", admit.ErrInvalidConfig)
	}
	if cfg.MaxDelay != 0 {
		return nil, fmt.Errorf("%w: httplimit: MaxDelay: a Decider decides the delay itself", admit.ErrInvalidConfig)
	}
	return build(&Middleware{mode: modeDecider, decider: d}, &cfg)
}

func build(m *Middleware, cfg *Config) (*Middleware, error) {
	var err error
	if m.options, err = cfg.resolve(); err != nil {
		return nil, err
	}
	m.exempts = len(m.exactPaths) > 0 || len(m.prefixes) > 0 || m.exemptFunc != nil
	m.bad[0] = m.badBody(http.StatusBadRequest, "KEY_MISSING", "the request carries no usable key for its rate limit")
	m.bad[1] = m.badBody(http.StatusRequestHeaderFieldsTooLarge, "KEY_TOO_LONG", "the request's rate-limit key is too long")
	m.bad[2] = m.badBody(http.StatusBadRequest, "KEY_INVALID", "the request's rate-limit key is repeated, empty or malformed")
	return m, nil
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// Handler returns next wrapped in the middleware. m.Handler has the type
// func(http.Handler) http.Handler, so it can be given to a router's Use:
//
//	r.Use(m.Handler)                        // a router with Use (chi, ...)
//	mux.Handle("POST /login", m.Handler(h)) // one route of a ServeMux
//	http.ListenAndServe(addr, m.Handler(mux))
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return &handler{m: m, next: next}
}

type handler struct {
	m    *Middleware
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := h.m
	if m.exempts && m.exempt(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	if m.mode == modeKeyed {
		m.serveKeyed(h.next, w, r)
	} else {
		m.serveHeld(h.next, w, r)
	}
}

// serveKeyed decides r by m.lim, under the key of m.key.
func (m *Middleware) serveKeyed(next http.Handler, w http.ResponseWriter, r *http.Request) {
	var (
		n   int64 = 1
		key string
		err error
	)
	if m.cost != nil {
		n, err = m.costOf(r)
	}
	if err == nil {
		key, err = m.key(r)
	}
	if err != nil {
		m.unkeyed(next, w, r, "", n, err)
		return
	}
	if len(key) > m.maxKeyLen {
		m.unkeyed(next, w, r, "", n, errKeyTooLong)
		return
	}
	d, gone, err := m.allowKeyed(r, key, n)
	if gone {
		return
	}
	if err != nil {
		m.failed(next, w, r, key, n, &d, err)
		return
	}
	if !d.Allowed {
		m.refused(next, w, r, key, n, &d)
		return
	}
	if m.observer != nil {
		m.observer(Event{Request: r, Key: key, Cost: n, Outcome: Admitted, Shadow: m.shadow, Decision: d})
	}
	if m.fields != 0 && !m.shadow {
		m.setFields(w.Header(), &d)
	}
	next.ServeHTTP(w, r)
}

func (m *Middleware) costOf(r *http.Request) (int64, error) {
	n, err := m.cost(r)
	if err != nil {
		return 0, fmt.Errorf("httplimit: cost: %w: %w", ErrBadKey, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: %d", errNegativeCost, n)
	}
	return n, nil
}

var heldPool = sync.Pool{New: func() any { return new(compose.Held) }}

// maxStackKeys is the number of chain layers whose keys are kept on the
// stack.
const maxStackKeys = 8

// serveHeld decides r by m.chain or m.decider, which may grant slots.
func (m *Middleware) serveHeld(next http.Handler, w http.ResponseWriter, r *http.Request) {
	var (
		d   admit.Decision
		err error
		n   int64
		key string
	)
	h := heldPool.Get().(*compose.Held)
	if m.mode == modeDecider {
		d, err = m.decider.Decide(r, h)
		if err != nil && errors.Is(err, ErrNoKey) {
			release(h)
			m.unkeyed(next, w, r, "", 0, err)
			return
		}
	} else {
		n = 1
		if m.cost != nil {
			n, err = m.costOf(r)
		}
		var buf [maxStackKeys]string
		keys := buf[:0]
		if len(m.keys) > maxStackKeys {
			keys = make([]string, 0, len(m.keys))
		}
		for _, kf := range m.keys {
			if err != nil {
				break
			}
			var k string
			if k, err = kf(r); err == nil && len(k) > m.maxKeyLen {
				err = errKeyTooLong
			}
			keys = append(keys, k)
		}
		if err != nil {
			release(h)
			m.unkeyed(next, w, r, "", n, err)
			return
		}
		key = keys[0]
		d, err = m.chain.AllowKeys(r.Context(), keys, n, h)
	}
	if err != nil || !d.Allowed {
		release(h)
		if err != nil {
			m.failed(next, w, r, key, n, &d, err)
		} else {
			m.refused(next, w, r, key, n, &d)
		}
		return
	}
	if d.Delay > 0 && !m.shadow && !sleep(r, d.Delay) {
		// The client went away while it waited. Its slots are released;
		// its delayed rate slots stay held (a Decider gives no way back).
		release(h)
		return
	}
	if m.observer != nil {
		m.observer(Event{Request: r, Key: key, Cost: n, Outcome: Admitted, Shadow: m.shadow, Decision: d})
	}
	if m.fields != 0 && !m.shadow {
		m.setFields(w.Header(), &d)
	}
	if h.WantsOutcome() {
		m.serveOutcome(next, w, r, h)
		return
	}
	serveHolding(next, w, r, h)
}

// serveHolding serves r and releases h when the handler returns or panics
// (the panic goes on after the release).
func serveHolding(next http.Handler, w http.ResponseWriter, r *http.Request, h *compose.Held) {
	defer release(h)
	next.ServeHTTP(w, r)
}

// serveOutcome serves r through a statusWriter and finishes h with the
// outcome when the handler returns or panics (the panic goes on after).
func (m *Middleware) serveOutcome(next http.Handler, w http.ResponseWriter, r *http.Request, h *compose.Held) {
	sw := statusPool.Get().(*statusWriter)
	sw.ResponseWriter = w
	panicked := true
	defer func() {
		h.Finish(panicked || m.failure(sw.Status()))
		heldPool.Put(h)
		*sw = statusWriter{}
		statusPool.Put(sw)
	}()
	next.ServeHTTP(sw, r)
	panicked = false
}

func release(h *compose.Held) {
	h.Release()
	heldPool.Put(h)
}

// unkeyed answers a request that cannot be keyed (err says why).
func (m *Middleware) unkeyed(next http.Handler, w http.ResponseWriter, r *http.Request, key string, n int64, err error) {
	tooLong := errors.Is(err, admit.ErrKeyTooLong)
	bad := errors.Is(err, ErrBadKey) || errors.Is(err, admit.ErrInvalidCost)
	out := Unkeyed
	if m.skipUnkeyed && !tooLong && !bad {
		out = Skipped
	}
	if m.observer != nil {
		m.observer(Event{Request: r, Key: key, Cost: n, Outcome: out, Shadow: m.shadow, Err: err})
	}
	if out == Skipped || m.shadow {
		next.ServeHTTP(w, r)
		return
	}
	b := &m.bad[0]
	switch {
	case tooLong:
		b = &m.bad[1]
	case bad:
		b = &m.bad[2]
	}
	w.Header()[keyCType] = b.ctype
	w.WriteHeader(b.status)
	writeString(w, b.body)
}

// failed answers a request whose limiter returned err.
func (m *Middleware) failed(next http.Handler, w http.ResponseWriter, r *http.Request, key string, n int64, d *admit.Decision, err error) {
	switch {
	case errors.Is(err, admit.ErrKeyTooLong), errors.Is(err, admit.ErrInvalidCost):
		m.unkeyed(next, w, r, key, n, err)
		return
	}
	if ctxErr := r.Context().Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		if m.observer != nil {
			m.observer(Event{Request: r, Key: key, Cost: n, Outcome: Canceled, Shadow: m.shadow, Decision: *d, Err: err})
		}
		if m.shadow {
			next.ServeHTTP(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	out := FailedOpen
	if m.failClosed {
		out = FailedClosed
	}
	if m.observer != nil {
		m.observer(Event{Request: r, Key: key, Cost: n, Outcome: out, Shadow: m.shadow, Decision: *d, Err: err})
	}
	if out == FailedOpen || m.shadow {
		next.ServeHTTP(w, r)
		return
	}
	fd := admit.Decision{RetryAfter: m.failRetry, Rule: "fail-closed"}
	m.refuse(w, r, &fd, http.StatusServiceUnavailable)
}

// refused answers a request the limit refused.
func (m *Middleware) refused(next http.Handler, w http.ResponseWriter, r *http.Request, key string, n int64, d *admit.Decision) {
	if m.observer != nil {
		m.observer(Event{Request: r, Key: key, Cost: n, Outcome: Refused, Shadow: m.shadow, Decision: *d})
	}
	if m.shadow {
		next.ServeHTTP(w, r)
		return
	}
	m.refuse(w, r, d, m.status)
}

// exempt reports whether r is exempt from the limit.
func (m *Middleware) exempt(r *http.Request) bool {
	p := r.URL.Path
	if (len(m.exactPaths) > 0 || len(m.prefixes) > 0) && cleanPath(p) {
		if _, ok := m.exactPaths[p]; ok {
			return true
		}
		for _, pre := range m.prefixes {
			if len(p) >= len(pre) && p[:len(pre)] == pre &&
				(len(p) == len(pre) || pre[len(pre)-1] == '/' || p[len(pre)] == '/') {
				return true
			}
		}
	}
	return m.exemptFunc != nil && m.exemptFunc(r)
}

// cleanPath reports whether p is as path.Clean leaves it, but for a
// trailing slash: no empty, "." or ".." segment.
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	start := 1
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		seg := p[start:i]
		if (seg == "" && i < len(p)) || seg == "." || seg == ".." {
			return false
		}
		start = i + 1
	}
	return true
}
