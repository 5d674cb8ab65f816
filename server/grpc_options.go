package server

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/admit-go/admit"
)

// The defaults of the gRPC APIs' options.
const (
	// DefaultGRPCMaxDescriptors is the default number of descriptors a
	// request may carry (WithGRPCMaxDescriptors): the HTTP API's
	// (DefaultMaxDescriptors), so that every surface takes the same
	// requests.
	DefaultGRPCMaxDescriptors = DefaultMaxDescriptors
	// DefaultGRPCMaxEntries is the default number of entries a descriptor
	// may have (WithGRPCMaxEntries), on the HTTP API too.
	DefaultGRPCMaxEntries = 32
	// DefaultGRPCMaxValueBytes is the default length, in bytes, of the
	// longest domain, descriptor key or value (WithGRPCMaxValueBytes): the
	// HTTP API's (DefaultMaxValueLength).
	DefaultGRPCMaxValueBytes = DefaultMaxValueLength
	// DefaultGRPCQuotaTTL is how long, by default, the quota an Envoy
	// client is granted for a descriptor that nothing limits stays valid
	// (WithGRPCQuotaTTL).
	DefaultGRPCQuotaTTL = 10 * time.Second
	// MaxGRPCHits is the largest cost a gRPC request may give, 2^53 (the
	// largest integer a float64 holds exactly, the bound of admit's
	// limits): a larger one is INVALID_ARGUMENT.
	MaxGRPCHits = 1 << 53
)

// GRPCOption configures the gRPC APIs: NewRLS, NewAdmitService and
// RegisterGRPC. The zero set of options gives the defaults documented on
// each option; an invalid value makes the constructor fail with an error
// wrapping ErrInvalidGRPCOption.
type GRPCOption interface {
	applyGRPC(*grpcOptions)
}

type grpcOptions struct {
	maxDescriptors int
	maxEntries     int
	maxValue       int
	headers        RLSHeaders
	quotaTTL       time.Duration
	clock          admit.Clock
	leases         *Leases
	reset          bool
	log            *slog.Logger
	err            error
}

func defaultGRPCOptions() grpcOptions {
	return grpcOptions{
		maxDescriptors: DefaultGRPCMaxDescriptors,
		maxEntries:     DefaultGRPCMaxEntries,
		maxValue:       DefaultGRPCMaxValueBytes,
		headers:        RLSHeadersIETF,
		quotaTTL:       DefaultGRPCQuotaTTL,
		clock:          admit.SystemClock,
	}
}

// newGRPCOptions applies opts to the defaults and checks the result.
func newGRPCOptions(opts []GRPCOption) (grpcOptions, error) {
	o := defaultGRPCOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.applyGRPC(&o)
		}
	}
	return o, o.err
}

type grpcOptionFunc func(*grpcOptions)

func (f grpcOptionFunc) applyGRPC(o *grpcOptions) { f(o) }

func (o *grpcOptions) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidGRPCOption}, args...)...)
	}
}

// WithGRPCMaxDescriptors caps the descriptors of one request: a request
// with more is INVALID_ARGUMENT, before anything is decided. Envoy sends
// one descriptor per rate-limit action of a route, a handful. The default
// is DefaultGRPCMaxDescriptors; n must be positive.
func WithGRPCMaxDescriptors(n int) GRPCOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if n <= 0 {
			o.fail("WithGRPCMaxDescriptors(%d): want a positive cap", n)
			return
		}
		o.maxDescriptors = n
	})
}

// WithGRPCMaxEntries caps the entries of one descriptor: a descriptor with
// more is INVALID_ARGUMENT. The default is DefaultGRPCMaxEntries; n must
// be positive.
func WithGRPCMaxEntries(n int) GRPCOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if n <= 0 {
			o.fail("WithGRPCMaxEntries(%d): want a positive cap", n)
			return
		}
		o.maxEntries = n
	})
}

// WithGRPCMaxValueBytes caps the length in bytes of each descriptor key
// and value: a longer one is INVALID_ARGUMENT. The values of a descriptor
// make up its limiters' key, so the cap also bounds the memory a client
// can make the server keep. The default is DefaultGRPCMaxValueBytes; n
// must be positive.
func WithGRPCMaxValueBytes(n int) GRPCOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if n <= 0 {
			o.fail("WithGRPCMaxValueBytes(%d): want a positive cap", n)
			return
		}
		o.maxValue = n
	})
}

// WithGRPCHeaders sets whether Envoy's rate-limit service answers with
// the IETF RateLimit and RateLimit-Policy fields (and Retry-After when it
// refuses) in response_headers_to_add, for Envoy to add to the client's
// response: WithGRPCHeaderStyle(RLSHeadersIETF) or (RLSHeadersNone). The
// default is true.
func WithGRPCHeaders(on bool) GRPCOption {
	if on {
		return WithGRPCHeaderStyle(RLSHeadersIETF)
	}
	return WithGRPCHeaderStyle(RLSHeadersNone)
}

// WithGRPCReset serves admit.v1's Reset, which makes the limits a request
// matches forget the state of its keys (policy.Engine.Reset), as the HTTP
// API's WithReset serves /v1/reset. Whoever reaches the service can then
// reset any limit. The default, false, answers Reset with
// PERMISSION_DENIED.
func WithGRPCReset(on bool) GRPCOption {
	return grpcOptionFunc(func(o *grpcOptions) { o.reset = on })
}

// WithGRPCLogger sets the logger told of the resets admit.v1 performs (see
// WithGRPCReset), one record each. The default, nil, logs nothing.
func WithGRPCLogger(l *slog.Logger) GRPCOption {
	return grpcOptionFunc(func(o *grpcOptions) { o.log = l })
}

// RLSHeaders selects the fields Envoy's rate-limit service asks Envoy to
// add to the client's response (response_headers_to_add).
type RLSHeaders uint8

const (
	// RLSHeadersIETF: the IETF fields of the deciding limit, as package
	// httplimit writes them: RateLimit-Policy, RateLimit, and Retry-After
	// when the request is refused. The default.
	RLSHeadersIETF RLSHeaders = iota
	// RLSHeadersEnvoy: envoyproxy/ratelimit's fields (its
	// LIMIT_RESPONSE_HEADERS_ENABLED): RateLimit-Limit (the requests per
	// unit), RateLimit-Remaining and RateLimit-Reset (seconds until the
	// limit resets) of the descriptor refused, else of the one with the
	// least remaining.
	RLSHeadersEnvoy
	// RLSHeadersNone: no fields, as envoyproxy/ratelimit by default.
	RLSHeadersNone
)

// String returns "ietf", "envoy" or "none".
func (h RLSHeaders) String() string {
	switch h {
	case RLSHeadersIETF:
		return "ietf"
	case RLSHeadersEnvoy:
		return "envoy"
	case RLSHeadersNone:
		return "none"
	}
	return fmt.Sprintf("RLSHeaders(%d)", uint8(h))
}

// ParseRLSHeaders returns the RLSHeaders named s: "ietf", "envoy" or
// "none". Another s is an error wrapping ErrInvalidGRPCOption.
func ParseRLSHeaders(s string) (RLSHeaders, error) {
	for _, h := range []RLSHeaders{RLSHeadersIETF, RLSHeadersEnvoy, RLSHeadersNone} {
		if s == h.String() {
			return h, nil
		}
	}
	return 0, fmt.Errorf("%w: response headers %q: want ietf, envoy or none", ErrInvalidGRPCOption, truncateString(s, 32))
}

// WithGRPCHeaderStyle sets the fields Envoy's rate-limit service answers
// with in response_headers_to_add (see RLSHeaders). The default is
// RLSHeadersIETF.
func WithGRPCHeaderStyle(h RLSHeaders) GRPCOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if h > RLSHeadersNone {
			o.err = fmt.Errorf("%w: %v", ErrInvalidGRPCOption, h)
			return
		}
		o.headers = h
	})
}

// WithGRPCQuotaTTL sets how long the quota that Envoy's rate-limit
// service grants for a descriptor nothing limits (see RLS) stays valid:
// a policy reload that limits such a descriptor takes effect on clients
// caching the grant within d. 0 grants no quota. The default is
// DefaultGRPCQuotaTTL; d must not be negative.
func WithGRPCQuotaTTL(d time.Duration) GRPCOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if d < 0 {
			o.fail("WithGRPCQuotaTTL(%v): want a duration >= 0", d)
			return
		}
		o.quotaTTL = d
	})
}

// WithGRPCClock sets the clock that dates quota grants and, unless
// WithGRPCLeases gives a table, ends leases: admittest.ManualClock drives
// them in tests. (The limits themselves
// decide on the engine's clock, policy.WithClock.) The default is
// admit.SystemClock; nil leaves the default.
func WithGRPCClock(c admit.Clock) GRPCOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithGRPCLeases makes admit.v1's Acquire and Release keep their leases
// in l, a lease table the HTTP API may share (see WithLeases), so that a
// lease taken through one API can be released through the other; its
// options (WithLeaseTTL, WithMaxLeases) bound the leases clients ask for.
// The caller keeps l and closes it. The default, nil, gives the
// AdmitService a table of its own with the defaults of NewLeases, on the
// clock of WithGRPCClock, which the service's Close closes.
func WithGRPCLeases(l *Leases) GRPCOption {
	return grpcOptionFunc(func(o *grpcOptions) { o.leases = l })
}
