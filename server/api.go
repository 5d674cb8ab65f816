package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/policy"
)

// API is the HTTP JSON API of the rate-limit service, an http.Handler
// serving:
//
//	POST /v1/check     decide a request: {domain, descriptors, hits}
//	POST /v1/acquire   decide it and hold its concurrency slots under a lease
//	POST /v1/release   give a lease's slots back: {lease_id}
//	POST /v1/extend    push a lease's expiry back: {lease_id, ttl_ms}
//	POST /json         envoyproxy/ratelimit's JSON endpoint, same shapes
//	GET  /healthz      the process is up (always 200)
//	GET  /readyz       a policy is loaded and the store reachable (200/503)
//	GET  /metrics      WithMetrics's handler, if any
//
// docs/API.md documents every field, status and error with examples.
//
// A check is decided by the engine of the API's EngineSource, asked once
// per request, so a policy reload takes effect at the next request. Its
// answer is 200 whether the request is admitted or refused (the decision
// is in the body; WithRefusalStatus makes refusals 429), with the IETF
// RateLimit and RateLimit-Policy fields of the decision. /json is decided
// by Envoy's rate-limit service (an RLS, see WithRLS), so that it answers
// as the gRPC service does. A request the API cannot decide gets an error
// status and the body {"code":"...","message":"..."}: 400 for a body that
// is not a valid request (malformed JSON, a value of the wrong type, an
// unknown field, a required field missing or empty), 413 for a body or a
// list of descriptors over its cap, 415 for a Content-Type other than
// JSON, 422 for values outside their domain (a cost above MaxHits, a
// value longer than WithMaxValueLength, an invalid inline limit or TTL),
// 404 and 405 for unknown paths and methods (and leases), 503 when no
// policy is loaded, the lease table or the engine's limiters are full,
// or a store fails without a failure policy to absorb it.
//
// Leases are kept by the API that granted them (in its Leases): behind a
// load balancer, send /v1/release and /v1/extend to the instance that
// answered /v1/acquire, or let the lease expire.
//
// The zero API is not usable; create one with NewAPI. An API is safe for
// concurrent use. Close it when done: it closes its lease table (unless
// given one with WithLeases).
type API struct {
	src       EngineSource
	o         apiOptions
	leases    *leaseTable
	ownLeases bool
	ready     *readiness
	rls       *rlsService
	pool      sync.Pool // *apiCall
}

// apiCall is the per-request state of a check, pooled: the decoded body,
// the engine's request and result (which keeps the engine's scratch
// space), the Held of a check's concurrency slots, and the answer.
type apiCall struct {
	body    apiBody
	req     policy.Request
	entries []policy.Entry
	limits  []admit.Limit
	res     policy.Result
	held    compose.Held
	buf     []byte
}

// apiMaxPooledBuffer is the capacity beyond which an answer's buffer is not
// kept for the next request, apiMaxPooledDescriptors the number of
// descriptors.
const (
	apiMaxPooledBuffer      = 64 << 10
	apiMaxPooledDescriptors = 64
)

// NewAPI returns the HTTP API deciding with the engines of src, for a
// server of your own, configured by cfg's MaxRequestBytes, AllowReset,
// RLSHeaders and Logger (it ignores the other fields; see Config). It
// keeps the leases of /v1/acquire in a table of its own, which Close
// gives back. The error is cfg.Validate's, or wraps admit.ErrInvalidConfig
// (a nil src).
func NewAPI(src EngineSource, cfg Config) (*API, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.resolved()
	return newAPI(src, withMaxBodyBytes(c.MaxRequestBytes), withReset(c.AllowReset), withAPILogger(c.Logger))
}

// newAPI returns the HTTP API deciding with the engines of src. The error
// wraps admit.ErrInvalidConfig for an invalid option (or nil src).
func newAPI(src EngineSource, opts ...apiOption) (*API, error) {
	o := defaultAPIOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if src == nil {
		o.fail("NewAPI: nil EngineSource")
	}
	if o.err != nil {
		return nil, o.err
	}
	a := &API{src: src, o: o, leases: o.leases, ready: o.ready, rls: o.rls}
	a.pool.New = func() any { return new(apiCall) }
	if a.ready == nil {
		r, err := newReadiness(src)
		if err != nil {
			return nil, err
		}
		a.ready = r
	}
	if a.rls == nil {
		r, err := newRLS(src, withGRPCMaxDescriptors(o.maxDescriptors), withGRPCMaxValueBytes(o.maxValue), withGRPCHeaders(o.fields))
		if err != nil {
			return nil, err
		}
		a.rls = r
	}
	if a.leases == nil {
		l, err := newLeases()
		if err != nil {
			return nil, err
		}
		a.leases, a.ownLeases = l, true
	}
	return a, nil
}

// table returns the API's lease table.
func (a *API) table() *leaseTable { return a.leases }

// paths returns the paths the API serves, for a server that routes only
// them to it (a gateway proxying every other path, say).
func (a *API) paths() []string {
	p := []string{"/v1/check", "/v1/acquire", "/v1/release", "/v1/extend", "/json", "/healthz", "/readyz"}
	if a.o.metrics != nil {
		p = append(p, "/metrics")
	}
	return p
}

// Close closes the API's own lease table, giving back the slots of its
// leases. It is idempotent and returns nil.
func (a *API) Close() error {
	if a.ownLeases {
		return a.leases.Close()
	}
	return nil
}

// ServeHTTP answers the API's requests.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/check":
		a.post(w, r, true, a.check)
	case "/v1/acquire":
		a.post(w, r, true, a.acquire)
	case "/v1/release":
		a.post(w, r, true, a.release)
	case "/v1/extend":
		a.post(w, r, true, a.extend)
	case "/v1/reset":
		a.post(w, r, true, a.reset)
	case "/json":
		a.post(w, r, false, a.apiEnvoyJSON)
	case "/healthz":
		healthz().ServeHTTP(w, r)
	case "/readyz":
		a.ready.ServeHTTP(w, r)
	case "/metrics":
		if a.o.metrics != nil {
			a.o.metrics.ServeHTTP(w, r)
			return
		}
		fallthrough
	default:
		apiWriteError(w, &apiError{http.StatusNotFound, apiCodeNotFound, "no such endpoint: see docs/API.md"})
	}
}

// post checks the method (and the Content-Type, if json) of a request
// before passing it to serve.
func (a *API) post(w http.ResponseWriter, r *http.Request, json bool, serve func(http.ResponseWriter, *http.Request)) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		apiWriteError(w, &apiError{http.StatusMethodNotAllowed, apiCodeMethodNotAllowed, r.Method + " is not allowed: use POST"})
		return
	}
	if json {
		if e := apiCheckContentType(r); e != nil {
			apiWriteError(w, e)
			return
		}
	}
	serve(w, r)
}

// apiWriteError writes an error answer.
func apiWriteError(w http.ResponseWriter, e *apiError) {
	b := make([]byte, 0, 64+len(e.message))
	b = append(b, `{"code":"`...)
	b = append(b, e.code...)
	b = append(b, `","message":`...)
	b = apiAppendJSONString(b, e.message)
	b = append(b, "}\n"...)
	h := w.Header()
	h[apiKeyContentType] = apiJSONContentType
	h["X-Content-Type-Options"] = []string{"nosniff"}
	if e.status == http.StatusServiceUnavailable {
		h[apiKeyRetryAfter] = []string{"1"}
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}

func (a *API) getCall() *apiCall {
	c := a.pool.Get().(*apiCall)
	c.body.reset()
	return c
}

func (a *API) putCall(c *apiCall) {
	if cap(c.buf) > apiMaxPooledBuffer {
		c.buf = nil
	}
	c.req.Domain = ""
	clear(c.req.Descriptors)
	clear(c.entries[:cap(c.entries)])
	if cap(c.body.Descriptors) > apiMaxPooledDescriptors || cap(c.entries) > 4*apiMaxPooledDescriptors {
		// A request of many descriptors: not worth keeping.
		c.body.Descriptors, c.req.Descriptors, c.entries, c.limits = nil, nil, nil, nil
	}
	if cap(c.res.Statuses) > apiMaxPooledDescriptors {
		c.res = policy.Result{}
	}
	a.pool.Put(c)
}

// engine returns the engine deciding the request, or an error answer.
func (a *API) engine() (*policy.Engine, *apiError) {
	e := a.src.Engine()
	if e == nil {
		return nil, &apiError{http.StatusServiceUnavailable, apiCodeNoPolicy, "no policy is loaded yet"}
	}
	return e, nil
}

// decodeRequest decodes and checks the body of /v1/check or /v1/acquire
// into c.req, and returns the engine to decide it with.
func (a *API) decodeRequest(w http.ResponseWriter, r *http.Request, c *apiCall, acquire bool) (*policy.Engine, *apiError) {
	if e := apiDecodeJSON(w, r, a.o.maxBody, &c.body); e != nil {
		return nil, e
	}
	if !acquire && c.body.TTL.set {
		return nil, apiBadRequest(apiCodeUnknownField, `unknown field "ttl_ms" (leases are for /v1/acquire)`)
	}
	if e := a.request(&c.body, &c.req, &c.entries, &c.limits); e != nil {
		return nil, e
	}
	e, ae := a.engine()
	if ae != nil {
		return nil, ae
	}
	if a.o.strictDomains && !e.HasDomain(c.req.Domain) {
		return nil, &apiError{http.StatusUnprocessableEntity, apiCodeUnknownDomain, "the policy has no domain " + strconv.Quote(apiEcho(c.req.Domain))}
	}
	return e, nil
}

// checkError turns an error of Engine.Check (or Leases.Acquire) into an
// answer.
func (a *API) checkError(r *http.Request, err error) *apiError {
	switch {
	case errors.Is(err, policy.ErrInvalidRequest), errors.Is(err, admit.ErrKeyTooLong),
		errors.Is(err, admit.ErrInvalidCost), errors.Is(err, admit.ErrInvalidLimit):
		return apiUnprocessable("%s", err.Error())
	case errors.Is(err, admit.ErrTooManyKeys): // keyed's arena, policy's inline limits and adaptive keys too
		return &apiError{http.StatusServiceUnavailable, apiCodeResourceExhausted, err.Error()}
	case errors.Is(err, errInvalidTTL):
		return apiUnprocessable("ttl_ms: %s", err.Error())
	case errors.Is(err, errTooManyLeases):
		return &apiError{http.StatusServiceUnavailable, apiCodeTooManyLeases, err.Error()}
	case errors.Is(err, errLeasesClosed):
		return &apiError{http.StatusServiceUnavailable, apiCodeUnavailable, "the service is shutting down"}
	case r.Context().Err() != nil:
		return &apiError{http.StatusServiceUnavailable, apiCodeUnavailable, "the request was cancelled"}
	}
	if a.o.log != nil {
		a.o.log.LogAttrs(r.Context(), slog.LevelWarn, "admit: request not decided", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	if errors.Is(err, admit.ErrClosed) {
		return &apiError{http.StatusServiceUnavailable, apiCodeUnavailable, "the policy is being replaced: retry"}
	}
	return &apiError{http.StatusServiceUnavailable, apiCodeUnavailable, "a limit's store failed and its failure policy let the error through"}
}

// checkWith decides c.req with e: if e was closed by a reload meanwhile,
// once more with the source's new engine.
func (a *API) checkWith(ctx context.Context, e *policy.Engine, c *apiCall, h *compose.Held) error {
	err := e.Check(ctx, &c.req, h, &c.res)
	if err != nil && errors.Is(err, admit.ErrClosed) {
		if e2 := a.src.Engine(); e2 != nil && e2 != e {
			err = e2.Check(ctx, &c.req, h, &c.res)
		}
	}
	return err
}

// check serves /v1/check. The slots of concurrency caps are taken and
// given back at once: such a cap admits iff a slot is free.
func (a *API) check(w http.ResponseWriter, r *http.Request) {
	c := a.getCall()
	defer a.putCall(c)
	e, ae := a.decodeRequest(w, r, c, false)
	if ae != nil {
		apiWriteError(w, ae)
		return
	}
	err := a.checkWith(r.Context(), e, c, &c.held)
	c.held.Release()
	if err != nil {
		apiWriteError(w, a.checkError(r, err))
		return
	}
	b := append(c.buf[:0], `{"allowed":`...)
	b = strconv.AppendBool(b, c.res.Decision.Allowed)
	b = apiAppendResult(b, &c.res)
	c.buf = append(b, "}\n"...)
	a.answer(w, &c.res.Decision, c.buf)
}

// reset serves /v1/reset: the body of a check; the answer is
// {"reset":N}, the number of limits reset.
func (a *API) reset(w http.ResponseWriter, r *http.Request) {
	if !a.o.reset {
		apiWriteError(w, &apiError{http.StatusForbidden, apiCodeForbidden, "reset is not enabled on this server (admit serve --allow-reset)"})
		return
	}
	c := a.getCall()
	defer a.putCall(c)
	e, ae := a.decodeRequest(w, r, c, false)
	if ae != nil {
		apiWriteError(w, ae)
		return
	}
	n, err := e.Reset(r.Context(), &c.req)
	if err != nil {
		if errors.Is(err, policy.ErrInvalidRequest) || errors.Is(err, admit.ErrClosed) {
			apiWriteError(w, a.checkError(r, err))
			return
		}
		if a.o.log != nil {
			a.o.log.LogAttrs(r.Context(), slog.LevelWarn, "admit: reset incomplete", slog.Int("reset", n), slog.String("error", err.Error()))
		}
		apiWriteError(w, &apiError{http.StatusServiceUnavailable, apiCodeUnavailable,
			fmt.Sprintf("%d limits reset, but not all: a store failed; retry (%s)", n, apiEcho(err.Error()))})
		return
	}
	auditReset(r.Context(), a.o.log, "http", r.RemoteAddr, &c.req, n)
	b := append(c.buf[:0], `{"reset":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	c.buf = append(b, "}\n"...)
	w.Header()[apiKeyContentType] = apiJSONContentType
	_, _ = w.Write(c.buf)
}

// answer writes a decision's answer.
func (a *API) answer(w http.ResponseWriter, d *admit.Decision, body []byte) {
	h := w.Header()
	h[apiKeyContentType] = apiJSONContentType
	status := http.StatusOK
	if !d.Allowed {
		status = a.o.refusalStatus
	}
	retry := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
	switch {
	case a.o.fields:
		apiSetFields(h, d, retry)
	case retry && d.RetryAfter != admit.InfDuration:
		h[apiKeyRetryAfter] = []string{strconv.FormatInt(max(apiCeilSeconds(d.RetryAfter), 1), 10)}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// acquire serves /v1/acquire.
func (a *API) acquire(w http.ResponseWriter, r *http.Request) {
	c := a.getCall()
	defer a.putCall(c)
	e, ae := a.decodeRequest(w, r, c, true)
	if ae != nil {
		apiWriteError(w, ae)
		return
	}
	var ttl time.Duration
	if c.body.TTL.set {
		if c.body.TTL.big || c.body.TTL.v <= 0 || c.body.TTL.v > int64(a.leases.MaxTTL()/time.Millisecond) {
			apiWriteError(w, apiUnprocessable("ttl_ms: %s is outside [1, %d]", apiIntText(c.body.TTL), int64(a.leases.MaxTTL()/time.Millisecond)))
			return
		}
		ttl = time.Duration(c.body.TTL.v) * time.Millisecond
	}
	ls, err := a.leases.Acquire(r.Context(), e, &c.req, ttl, &c.res)
	if err != nil && errors.Is(err, admit.ErrClosed) {
		if e2 := a.src.Engine(); e2 != nil && e2 != e {
			ls, err = a.leases.Acquire(r.Context(), e2, &c.req, ttl, &c.res)
		}
	}
	if err != nil {
		apiWriteError(w, a.checkError(r, err))
		return
	}
	b := append(c.buf[:0], `{"allowed":`...)
	b = strconv.AppendBool(b, c.res.Decision.Allowed)
	b = apiAppendLease(b, &ls)
	b = apiAppendResult(b, &c.res)
	c.buf = append(b, "}\n"...)
	a.answer(w, &c.res.Decision, c.buf)
}

// apiAppendLease appends the members describing a lease, if there is one.
func apiAppendLease(b []byte, ls *grant) []byte {
	if ls.ID == "" {
		return b
	}
	b = append(b, `,"lease_id":"`...)
	b = append(b, ls.ID...)
	b = append(b, '"')
	b = apiAppendInt(b, "ttl_ms", apiCeilMillis(ls.TTL))
	b = append(b, `,"expires_at":"`...)
	b = ls.Expires.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	return append(b, '"')
}

// leaseRequest decodes the body of /v1/release or /v1/extend.
func (a *API) leaseRequest(w http.ResponseWriter, r *http.Request, release bool) (*apiLeaseBody, *apiError) {
	var body apiLeaseBody
	if e := apiDecodeJSON(w, r, a.o.maxBody, &body); e != nil {
		return nil, e
	}
	switch {
	case release && body.TTL.set:
		return nil, apiBadRequest(apiCodeUnknownField, `unknown field "ttl_ms" (for /v1/extend)`)
	case !release && body.Failed != nil:
		return nil, apiBadRequest(apiCodeUnknownField, `unknown field "failed" (for /v1/release)`)
	case body.LeaseID == "":
		return nil, apiBadRequest(apiCodeMissingField, "lease_id is required")
	}
	return &body, nil
}

// apiLeaseError turns an error of the lease table into an answer.
func apiLeaseError(err error) *apiError {
	switch {
	case errors.Is(err, errLeaseNotFound):
		return &apiError{http.StatusNotFound, apiCodeLeaseNotFound, "no such lease: never issued, released already, or expired"}
	case errors.Is(err, errInvalidTTL):
		return apiUnprocessable("ttl_ms: %s", err.Error())
	case errors.Is(err, errLeaseStore):
		return &apiError{http.StatusServiceUnavailable, apiCodeUnavailable, "the store keeping the lease's slots did not answer: the lease is as it was; retry"}
	}
	return &apiError{http.StatusServiceUnavailable, apiCodeUnavailable, "the service is shutting down"}
}

// release serves /v1/release.
func (a *API) release(w http.ResponseWriter, r *http.Request) {
	body, ae := a.leaseRequest(w, r, true)
	if ae != nil {
		apiWriteError(w, ae)
		return
	}
	var err error
	if body.Failed != nil {
		err = a.leases.Finish(r.Context(), body.LeaseID, *body.Failed)
	} else {
		err = a.leases.Release(r.Context(), body.LeaseID)
	}
	if err != nil {
		apiWriteError(w, apiLeaseError(err))
		return
	}
	w.Header()[apiKeyContentType] = apiJSONContentType
	_, _ = w.Write([]byte("{\"released\":true}\n"))
}

// extend serves /v1/extend.
func (a *API) extend(w http.ResponseWriter, r *http.Request) {
	body, ae := a.leaseRequest(w, r, false)
	if ae != nil {
		apiWriteError(w, ae)
		return
	}
	var ttl time.Duration
	if body.TTL.set {
		if body.TTL.big || body.TTL.v <= 0 || body.TTL.v > int64(a.leases.MaxTTL()/time.Millisecond) {
			apiWriteError(w, apiUnprocessable("ttl_ms: %s is outside [1, %d]", apiIntText(body.TTL), int64(a.leases.MaxTTL()/time.Millisecond)))
			return
		}
		ttl = time.Duration(body.TTL.v) * time.Millisecond
	}
	ls, err := a.leases.Extend(r.Context(), body.LeaseID, ttl)
	if err != nil {
		apiWriteError(w, apiLeaseError(err))
		return
	}
	b := append([]byte(nil), `{"extended":true`...)
	b = apiAppendLease(b, &ls)
	b = append(b, "}\n"...)
	w.Header()[apiKeyContentType] = apiJSONContentType
	_, _ = w.Write(b)
}

// auditReset logs a reset (an operator's action, worth a record): through
// which API, from which peer, the domain and descriptors, how many limits.
func auditReset(ctx context.Context, log *slog.Logger, api, peer string, req *policy.Request, n int) {
	if log == nil {
		return
	}
	var b strings.Builder
	for i, d := range req.Descriptors {
		if i > 0 {
			b.WriteString("; ")
		}
		for j, e := range d.Entries {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(e.Key)
			b.WriteByte('=')
			b.WriteString(e.Value)
		}
		if b.Len() > 512 {
			break
		}
	}
	log.LogAttrs(ctx, slog.LevelInfo, "limits reset", slog.String("api", api), slog.String("peer", peer),
		slog.String("domain", apiEcho(req.Domain)), slog.String("descriptors", apiEcho(b.String())), slog.Int("reset", n))
}
