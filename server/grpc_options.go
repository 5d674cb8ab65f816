package server

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/admit-go/admit"
)

// The defaults of the gRPC APIs' options.
const (
	// defaultGRPCMaxDescriptors is the default number of descriptors a
	// request may carry (WithGRPCMaxDescriptors): the HTTP API's
	// (DefaultMaxDescriptors), so that every surface takes the same
	// requests.
	defaultGRPCMaxDescriptors = defaultMaxDescriptors
	// defaultGRPCMaxEntries is the default number of entries a descriptor
	// may have (WithGRPCMaxEntries), on the HTTP API too.
	defaultGRPCMaxEntries = 32
	// defaultGRPCMaxValueBytes is the default length, in bytes, of the
	// longest domain, descriptor key or value (WithGRPCMaxValueBytes): the
	// HTTP API's (DefaultMaxValueLength).
	defaultGRPCMaxValueBytes = defaultMaxValueLength
	// defaultGRPCQuotaTTL is how long, by default, the quota an Envoy
	// client is granted for a descriptor that nothing limits stays valid
	// (WithGRPCQuotaTTL).
	defaultGRPCQuotaTTL = 10 * time.Second
	// maxGRPCHits is the largest cost a gRPC request may give, 2^53 (the
	// largest integer a float64 holds exactly, the bound of admit's
	// limits): a larger one is INVALID_ARGUMENT.
	maxGRPCHits = 1 << 53
)

// grpcOption configures the gRPC APIs: NewRLS, NewAdmitService and
// RegisterGRPC. The zero set of options gives the defaults documented on
// each option; an invalid value makes the constructor fail with an error
// wrapping admit.ErrInvalidConfig.
type grpcOption interface {
	applyGRPC(*grpcOptions)
}

type grpcOptions struct {
	maxDescriptors int
	maxEntries     int
	maxValue       int
	headers        rlsHeaderStyle
	quotaTTL       time.Duration
	clock          admit.Clock
	leases         *leaseTable
	reset          bool
	log            *slog.Logger
	err            error
}

func defaultGRPCOptions() grpcOptions {
	return grpcOptions{
		maxDescriptors: defaultGRPCMaxDescriptors,
		maxEntries:     defaultGRPCMaxEntries,
		maxValue:       defaultGRPCMaxValueBytes,
		headers:        rlsHeadersIETF,
		quotaTTL:       defaultGRPCQuotaTTL,
		clock:          admit.SystemClock,
	}
}

// newGRPCOptions applies opts to the defaults and checks the result.
func newGRPCOptions(opts []grpcOption) (grpcOptions, error) {
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
		o.err = fmt.Errorf("%w: "+format, append([]any{errInvalidConfig}, args...)...)
	}
}

// withGRPCMaxDescriptors caps the descriptors of one request: a request
// with more is INVALID_ARGUMENT, before anything is decided. Envoy sends
// one descriptor per rate-limit action of a route, a handful. The default
// is DefaultGRPCMaxDescriptors; n must be positive.
func withGRPCMaxDescriptors(n int) grpcOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if n <= 0 {
			o.fail("WithGRPCMaxDescriptors(%d): want a positive cap", n)
			return
		}
		o.maxDescriptors = n
	})
}

// withGRPCMaxEntries caps the entries of one descriptor: a descriptor with
// more is INVALID_ARGUMENT. The default is DefaultGRPCMaxEntries; n must
// be positive.
func withGRPCMaxEntries(n int) grpcOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if n <= 0 {
			o.fail("WithGRPCMaxEntries(%d): want a positive cap", n)
			return
		}
		o.maxEntries = n
	})
}

// withGRPCMaxValueBytes caps the length in bytes of each descriptor key
// and value: a longer one is INVALID_ARGUMENT. The values of a descriptor
// make up its limiters' key, so the cap also bounds the memory a client
// can make the server keep. The default is DefaultGRPCMaxValueBytes; n
// must be positive.
func withGRPCMaxValueBytes(n int) grpcOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if n <= 0 {
			o.fail("WithGRPCMaxValueBytes(%d): want a positive cap", n)
			return
		}
		o.maxValue = n
	})
}

// withGRPCHeaders sets whether Envoy's rate-limit service answers with
// the IETF RateLimit and RateLimit-Policy fields (and Retry-After when it
// refuses) in response_headers_to_add, for Envoy to add to the client's
// response: WithGRPCHeaderStyle(RLSHeadersIETF) or (RLSHeadersNone). The
// default is true.
func withGRPCHeaders(on bool) grpcOption {
	if on {
		return withGRPCHeaderStyle(rlsHeadersIETF)
	}
	return withGRPCHeaderStyle(rlsHeadersNone)
}

// withGRPCReset serves admit.v1's Reset, which makes the limits a request
// matches forget the state of its keys (policy.Engine.Reset), as the HTTP
// API's WithReset serves /v1/reset. Whoever reaches the service can then
// reset any limit. The default, false, answers Reset with
// PERMISSION_DENIED.
func withGRPCReset(on bool) grpcOption {
	return grpcOptionFunc(func(o *grpcOptions) { o.reset = on })
}

// withGRPCLogger sets the logger told of the resets admit.v1 performs (see
// WithGRPCReset), one record each. The default, nil, logs nothing.
func withGRPCLogger(l *slog.Logger) grpcOption {
	return grpcOptionFunc(func(o *grpcOptions) { o.log = l })
}

// rlsHeaderStyle selects the fields Envoy's rate-limit service asks Envoy to
// add to the client's response (response_headers_to_add).
type rlsHeaderStyle uint8

const (
	// rlsHeadersIETF: the IETF fields of the deciding limit, as package
	// httplimit writes them: RateLimit-Policy, RateLimit, and Retry-After
	// when the request is refused. The default.
	rlsHeadersIETF rlsHeaderStyle = iota
	// rlsHeadersEnvoy: envoyproxy/ratelimit's fields (its
	// LIMIT_RESPONSE_HEADERS_ENABLED): RateLimit-Limit (the requests per
	// unit), RateLimit-Remaining and RateLimit-Reset (seconds until the
	// limit resets) of the descriptor refused, else of the one with the
	// least remaining.
	rlsHeadersEnvoy
	// rlsHeadersNone: no fields, as envoyproxy/ratelimit by default.
	rlsHeadersNone
)

// String returns "ietf", "envoy" or "none".
func (h rlsHeaderStyle) String() string {
	switch h {
	case rlsHeadersIETF:
		return "ietf"
	case rlsHeadersEnvoy:
		return "envoy"
	case rlsHeadersNone:
		return "none"
	}
	return fmt.Sprintf("RLSHeaders(%d)", uint8(h))
}

// parseRLSHeaders returns the RLSHeaders named s: "ietf", "envoy" or
// "none". Another s is an error wrapping admit.ErrInvalidConfig.
func parseRLSHeaders(s string) (rlsHeaderStyle, error) {
	for _, h := range []rlsHeaderStyle{rlsHeadersIETF, rlsHeadersEnvoy, rlsHeadersNone} {
		if s == h.String() {
			return h, nil
		}
	}
	return 0, fmt.Errorf("%w: response headers %q: want ietf, envoy or none", errInvalidConfig, truncateString(s, 32))
}

// withGRPCHeaderStyle sets the fields Envoy's rate-limit service answers
// with in response_headers_to_add (see RLSHeaders). The default is
// RLSHeadersIETF.
func withGRPCHeaderStyle(h rlsHeaderStyle) grpcOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if h > rlsHeadersNone {
			o.err = fmt.Errorf("%w: %v", errInvalidConfig, h)
			return
		}
		o.headers = h
	})
}

// withGRPCQuotaTTL sets how long the quota that Envoy's rate-limit
// service grants for a descriptor nothing limits (see RLS) stays valid:
// a policy reload that limits such a descriptor takes effect on clients
// caching the grant within d. 0 grants no quota. The default is
// DefaultGRPCQuotaTTL; d must not be negative.
func withGRPCQuotaTTL(d time.Duration) grpcOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if d < 0 {
			o.fail("WithGRPCQuotaTTL(%v): want a duration >= 0", d)
			return
		}
		o.quotaTTL = d
	})
}

// withGRPCClock sets the clock that dates quota grants and, unless
// WithGRPCLeases gives a table, ends leases: admittest.ManualClock drives
// them in tests. (The limits themselves
// decide on the engine's clock, policy.Config.Clock.) The default is
// admit.SystemClock; nil leaves the default.
func withGRPCClock(c admit.Clock) grpcOption {
	return grpcOptionFunc(func(o *grpcOptions) {
		if c != nil {
			o.clock = c
		}
	})
}

// withGRPCLeases makes admit.v1's Acquire and Release keep their leases
// in l, a lease table the HTTP API may share (see WithLeases), so that a
// lease taken through one API can be released through the other; its
// options (WithLeaseTTL, WithMaxLeases) bound the leases clients ask for.
// The caller keeps l and closes it. The default, nil, gives the
// AdmitService a table of its own with the defaults of NewLeases, on the
// clock of WithGRPCClock, which the service's Close closes.
func withGRPCLeases(l *leaseTable) grpcOption {
	return grpcOptionFunc(func(o *grpcOptions) { o.leases = l })
}
