package server

import (
	"fmt"
	"log/slog"
	"net/http"
)

// Defaults of the HTTP API's options.
const (
	// defaultMaxBodyBytes is the default cap on a request body (see
	// WithMaxBodyBytes): 1 MiB.
	defaultMaxBodyBytes = 1 << 20
	// defaultMaxDescriptors is the default cap on the descriptors of one
	// request (see WithMaxDescriptors).
	defaultMaxDescriptors = 1000
	// defaultMaxValueLength is the default cap on the length of a domain,
	// an entry's key or value, in bytes (see WithMaxValueLength). A
	// descriptor's key is made of its values; the engine stores one
	// longer than the limiters take by its SHA-256 (see policy.Engine).
	defaultMaxValueLength = 4096
	// maxHits is the largest cost a request or a descriptor may carry:
	// 2^32-1, the largest hits_addend Envoy's API can send. A cost above
	// it is refused with 422 before anything is checked.
	maxHits = 1<<32 - 1
)

// apiOption configures an API (see NewAPI). The zero set of options gives
// the defaults documented on each option.
type apiOption interface {
	apply(*apiOptions)
}

type apiOptions struct {
	leases         *leaseTable
	ready          *readiness
	rls            *rlsService
	metrics        http.Handler
	maxBody        int64
	maxDescriptors int
	maxEntries     int
	maxValue       int
	refusalStatus  int
	fields         bool
	strictDomains  bool
	reset          bool
	log            *slog.Logger
	err            error
}

func defaultAPIOptions() apiOptions {
	return apiOptions{
		maxBody:        defaultMaxBodyBytes,
		maxDescriptors: defaultMaxDescriptors,
		maxEntries:     defaultGRPCMaxEntries,
		maxValue:       defaultMaxValueLength,
		refusalStatus:  http.StatusOK,
		fields:         true,
	}
}

type apiOptionFunc func(*apiOptions)

func (f apiOptionFunc) apply(o *apiOptions) { f(o) }

func (o *apiOptions) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{errInvalidConfig}, args...)...)
	}
}

// withLeases makes the API keep the leases of /v1/acquire in l, which the
// caller shares (with the gRPC API, say) and closes. The default is a
// lease table of the API's own, with NewLeases's defaults, closed by
// API.Close.
func withLeases(l *leaseTable) apiOption {
	return apiOptionFunc(func(o *apiOptions) {
		if l == nil {
			o.fail("WithLeases(nil)")
			return
		}
		o.leases = l
	})
}

// withReadiness makes the API answer /readyz with r. The default is
// NewReadiness(src) without probes: ready iff a policy is loaded.
func withReadiness(r *readiness) apiOption {
	return apiOptionFunc(func(o *apiOptions) {
		if r == nil {
			o.fail("WithReadiness(nil)")
			return
		}
		o.ready = r
	})
}

// withRLS makes the API decide /json, envoyproxy/ratelimit's JSON
// endpoint, with r, Envoy's rate-limit service that the gRPC server
// serves too, so that both answer with the same options. The default is
// NewRLS(src) with this API's caps (WithMaxDescriptors,
// WithMaxValueLength) and fields (WithRateLimitFields).
func withRLS(r *rlsService) apiOption {
	return apiOptionFunc(func(o *apiOptions) {
		if r == nil {
			o.fail("WithRLS(nil)")
			return
		}
		o.rls = r
	})
}

// withMetrics makes the API serve h (promhttp.HandlerFor, say) on
// /metrics. The default is none: /metrics is not found.
func withMetrics(h http.Handler) apiOption {
	return apiOptionFunc(func(o *apiOptions) {
		if h == nil {
			o.fail("WithMetrics(nil)")
			return
		}
		o.metrics = h
	})
}

// withMaxBodyBytes caps the size of a request body, in bytes: a larger
// body is refused with 413 before it is decoded further. The default is
// DefaultMaxBodyBytes; n must be positive.
func withMaxBodyBytes(n int64) apiOption {
	return apiOptionFunc(func(o *apiOptions) {
		if n <= 0 {
			o.fail("WithMaxBodyBytes(%d): want a positive size", n)
			return
		}
		o.maxBody = n
	})
}

// withMaxDescriptors caps the descriptors of one request: more are refused
// with 413. The default is DefaultMaxDescriptors; n must be positive.
func withMaxDescriptors(n int) apiOption {
	return apiOptionFunc(func(o *apiOptions) {
		if n <= 0 {
			o.fail("WithMaxDescriptors(%d): want a positive cap", n)
			return
		}
		o.maxDescriptors = n
	})
}

// withMaxValueLength caps the length in bytes of a domain and of each
// entry's key and value: a longer one is refused with 422. The default is
// DefaultMaxValueLength; n must be positive. (The limiters have a cap of
// their own on the key made of a descriptor's values, 4 KiB by default; a
// request exceeding it is refused with 422 too.)
func withMaxValueLength(n int) apiOption {
	return apiOptionFunc(func(o *apiOptions) {
		if n <= 0 {
			o.fail("WithMaxValueLength(%d): want a positive length", n)
			return
		}
		o.maxValue = n
	})
}

// withRefusalStatus sets the HTTP status of a refused check or acquire
// (the body is the same): 429 suits clients that only look at the status,
// and adds a Retry-After field. The default is 200, the decision being in
// the body. code must be 200 or an error status (400 to 599). The
// envoyproxy/ratelimit endpoint /json keeps its own rule (429).
func withRefusalStatus(code int) apiOption {
	return apiOptionFunc(func(o *apiOptions) {
		if code != http.StatusOK && (code < 400 || code > 599) {
			o.fail("WithRefusalStatus(%d): want 200 or a status from 400 to 599", code)
			return
		}
		o.refusalStatus = code
	})
}

// withRateLimitFields sets whether the responses of /v1/check and
// /v1/acquire carry the IETF RateLimit and RateLimit-Policy fields of the
// decision (draft-ietf-httpapi-ratelimit-headers, as package httplimit
// writes them). The default is true.
func withRateLimitFields(on bool) apiOption {
	return apiOptionFunc(func(o *apiOptions) { o.fields = on })
}

// withStrictDomains makes the API refuse a request naming a domain the
// policy does not have, with 422 UNKNOWN_DOMAIN. The default is false:
// such a request matches no rule and is admitted, as envoyproxy/ratelimit
// admits it.
func withStrictDomains(on bool) apiOption {
	return apiOptionFunc(func(o *apiOptions) { o.strictDomains = on })
}

// withReset serves POST /v1/reset, which makes the limits a request
// matches forget the state of its keys (policy.Engine.Reset): an operator
// unblocking a client. Whoever reaches the API can then reset any limit,
// so serve it only where clients are trusted (an admin listener, a private
// network). The default, false, answers /v1/reset with 403 FORBIDDEN.
func withReset(on bool) apiOption {
	return apiOptionFunc(func(o *apiOptions) { o.reset = on })
}

// withAPILogger sets the logger told of the requests the API could not
// decide (a store failing without a failure policy to absorb it, an
// engine closed). The default, nil, logs nothing.
func withAPILogger(l *slog.Logger) apiOption {
	return apiOptionFunc(func(o *apiOptions) { o.log = l })
}
