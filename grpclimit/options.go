package grpclimit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/admit-go/admit"
)

// The defaults of the options.
const (
	// DefaultMaxKeyLength is the default length, in bytes, beyond which a
	// Server replaces a key by its digest (see WithMaxKeyLength).
	DefaultMaxKeyLength = 256

	// DefaultMaxRetries is the default number of times a Client retries a
	// refused call (see WithMaxRetries).
	DefaultMaxRetries = 2

	// DefaultMaxWait is the default longest RetryInfo delay a Client waits
	// before a retry (see WithMaxWait).
	DefaultMaxWait = 10 * time.Second
)

// HealthService is the gRPC health checking service, exempt from limits
// by default (see WithoutDefaultExempt): a load balancer's probes must never
// be refused, or an overloaded instance is taken out of service and its
// load moves to the others.
const HealthService = "/grpc.health.v1.Health/"

// ReflectionServices are the server reflection services (v1 and v1alpha).
// They are not exempt by default, since any client can call them; exempt
// them with WithExempt(ReflectionServices...) if tools such as grpcurl
// must work when the limit is reached.
var ReflectionServices = []string{
	"/grpc.reflection.v1.ServerReflection/",
	"/grpc.reflection.v1alpha.ServerReflection/",
}

// Option configures a Server (NewServer, NewServerDecider). The zero set of
// options gives the defaults documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	methods   []methodRule
	exempt    []string
	noDefault bool
	failOpen  bool
	headers   bool
	maxKeyLen int
	onError   func(ctx context.Context, fullMethod string, err error)
	failure   func(code codes.Code) bool
	err       error
}

type methodRule struct {
	pattern string
	name    string
	lim     admit.KeyedLimiter
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func (o *options) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

// WithMethod limits the calls to pattern with lim instead of the Server's
// default limiter. pattern is a full method ("/package.Service/Method") or
// a service ("/package.Service/", every method of it); a full method's
// limiter takes precedence over its service's. name names the limit in
// refusals (QuotaFailure's subject, the Decision's Rule); if empty, the
// Rule of lim's decisions is used, or else the pattern. Only NewServer
// takes it (a Decider routes calls itself). The default is none: every
// method not exempt is limited by the default limiter.
func WithMethod(pattern, name string, lim admit.KeyedLimiter) Option {
	return optionFunc(func(o *options) {
		if err := checkPattern(pattern); err != nil {
			o.fail(fmt.Errorf("WithMethod: %w", err))
			return
		}
		if lim == nil {
			o.fail(fmt.Errorf("%w: WithMethod(%q) with a nil limiter", ErrNilLimiter, pattern))
			return
		}
		o.methods = append(o.methods, methodRule{pattern: pattern, name: name, lim: lim})
	})
}

// WithExempt exempts the calls to each pattern (a full method or a service,
// as in WithMethod) from every limit. HealthService is exempt by default.
func WithExempt(patterns ...string) Option {
	return optionFunc(func(o *options) {
		for _, p := range patterns {
			if err := checkPattern(p); err != nil {
				o.fail(fmt.Errorf("WithExempt: %w", err))
				return
			}
		}
		o.exempt = append(o.exempt, patterns...)
	})
}

// WithoutDefaultExempt limits the health service too (see HealthService).
// The default exempts it.
func WithoutDefaultExempt() Option {
	return optionFunc(func(o *options) { o.noDefault = true })
}

// WithFailOpen admits the calls the limiter fails to decide (a store that
// is down or slow). The default fails closed: such calls are refused with
// codes.Unavailable. Errors about the call itself (see compose.IsFailure,
// such as a key the limiter refuses) are refused either way, so a client
// cannot get past the limit by sending a bad key. For finer policies
// (a local fallback, a circuit breaker), wrap the limiter in a
// compose.Guard; WithFailOpen then only sees what the Guard passes on.
func WithFailOpen() Option {
	return optionFunc(func(o *options) { o.failOpen = true })
}

// WithHeaders sends the IETF "ratelimit" and "ratelimit-policy" figures
// (see Server) in the response header metadata of admitted calls too. The
// default sends them only with refusals, as trailers: sending them on every
// call costs a few allocations per call.
func WithHeaders() Option {
	return optionFunc(func(o *options) { o.headers = true })
}

// WithMaxKeyLength sets the length, in bytes, beyond which a key is
// replaced by "sha256:" and the hex SHA-256 digest of the key, so huge
// metadata values neither fill the limiter's memory nor fail its key
// length check (which would refuse the call). The default is
// DefaultMaxKeyLength; n must be at least 71 (the digest's length).
func WithMaxKeyLength(n int) Option {
	return optionFunc(func(o *options) {
		if n < len(digestPrefix)+64 {
			o.fail(fmt.Errorf("%w: WithMaxKeyLength(%d): want at least %d", ErrInvalidOption, n, len(digestPrefix)+64))
			return
		}
		o.maxKeyLen = n
	})
}

// WithErrorHandler sets a function told of every error of the limiter
// (before the call is failed open or closed), for logs and metrics. It
// must be safe for concurrent use. The default is none.
func WithErrorHandler(f func(ctx context.Context, fullMethod string, err error)) Option {
	return optionFunc(func(o *options) { o.onError = f })
}

// DefaultFailure is the default of WithFailure: a call whose handler
// returned Unavailable, ResourceExhausted, DeadlineExceeded (or a context
// deadline error) or Internal failed in a way that says what it protects
// is overloaded. Other codes (NotFound, InvalidArgument, Canceled by the
// client...) say nothing about load, and count as successes.
func DefaultFailure(code codes.Code) bool {
	switch code {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Internal:
		return true
	}
	return false
}

// WithFailure sets the function that tells, from the code its handler
// returned (codes.OK for none), whether an admitted call failed in a way
// that says what it protects is overloaded. A Server built with
// NewServerDecider reports that outcome to the grants that learn from it
// (compose.Held.Finish: the adaptive limits of package adaptive, and the
// adaptive rules of a policy) when the handler returns (a stream's, when
// the stream ends); a handler that panics has failed, whatever the
// function says. The default is DefaultFailure; a nil f keeps it.
func WithFailure(f func(code codes.Code) bool) Option {
	return optionFunc(func(o *options) {
		if f != nil {
			o.failure = f
		}
	})
}

// checkPattern checks a full method or service pattern.
func checkPattern(p string) error {
	if len(p) < 3 || p[0] != '/' {
		return fmt.Errorf("%w: %q: want \"/package.Service/Method\" or \"/package.Service/\"", ErrInvalidMethod, p)
	}
	i := strings.IndexByte(p[1:], '/') + 1
	if i <= 1 || strings.IndexByte(p[i+1:], '/') >= 0 {
		return fmt.Errorf("%w: %q: want \"/package.Service/Method\" or \"/package.Service/\"", ErrInvalidMethod, p)
	}
	return nil
}

// ClientOption configures a Client. The zero set of options gives the
// defaults documented on each option.
type ClientOption interface {
	applyClient(*clientOptions)
}

type clientOptions struct {
	retries int
	maxWait time.Duration
	clock   admit.Clock
	buffer  int
	err     error
}

type clientOptionFunc func(*clientOptions)

func (f clientOptionFunc) applyClient(o *clientOptions) { f(o) }

// DefaultStreamBuffer is the default number of messages a Client keeps to
// replay on a retried stream (see WithStreamBuffer).
const DefaultStreamBuffer = 16

// WithMaxRetries sets how many times a Client retries a call refused with
// RetryInfo: a call is tried at most n+1 times. 0 turns retries off. The
// default is DefaultMaxRetries; n must not be negative.
func WithMaxRetries(n int) ClientOption {
	return clientOptionFunc(func(o *clientOptions) {
		if n < 0 {
			o.err = fmt.Errorf("%w: WithMaxRetries(%d): want n >= 0", ErrInvalidOption, n)
			return
		}
		o.retries = n
	})
}

// WithMaxWait sets the longest delay a Client waits before a retry: a
// refusal asking for longer is returned at once. The default is
// DefaultMaxWait; d must be positive.
func WithMaxWait(d time.Duration) ClientOption {
	return clientOptionFunc(func(o *clientOptions) {
		if d <= 0 {
			o.err = fmt.Errorf("%w: WithMaxWait(%v): want a positive duration", ErrInvalidOption, d)
			return
		}
		o.maxWait = d
	})
}

// WithClock sets the clock a Client reads and waits on. The default is
// admit.SystemClock; tests use admittest.ManualClock.
func WithClock(c admit.Clock) ClientOption {
	return clientOptionFunc(func(o *clientOptions) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithStreamBuffer sets how many sent messages a Client keeps to replay on
// a retried stream; a stream that sent more before it was refused is not
// retried. 0 retries only streams refused before their first message. The
// default is DefaultStreamBuffer; n must not be negative.
func WithStreamBuffer(n int) ClientOption {
	return clientOptionFunc(func(o *clientOptions) {
		if n < 0 {
			o.err = fmt.Errorf("%w: WithStreamBuffer(%d): want n >= 0", ErrInvalidOption, n)
			return
		}
		o.buffer = n
	})
}
