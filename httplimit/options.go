package httplimit

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/admit-go/admit"
)

// The defaults of the middleware's options.
const (
	// DefaultStatus is the default status of a refusal (see WithStatus).
	DefaultStatus = http.StatusTooManyRequests
	// DefaultMaxKeyLength is the default maximum length of a key, in bytes
	// (see WithMaxKeyLength).
	DefaultMaxKeyLength = 4096
	// DefaultFailClosedRetryAfter is the Retry-After of the 503 responses
	// of WithFailClosed(0).
	DefaultFailClosedRetryAfter = time.Second
	// MaxRetryAfter caps every duration the middleware sends: Retry-After,
	// the RateLimit field's t, X-RateLimit-Reset and retry_after_ms. A
	// request that can never be admitted (its RetryAfter is
	// admit.InfDuration: it costs more than the burst) is told so instead,
	// without Retry-After or t: its body has "never":true in place of
	// retry_after_ms.
	MaxRetryAfter = 365 * 24 * time.Hour
)

// Problem types of the IETF draft draft-ietf-httpapi-ratelimit-headers,
// for WithProblemJSON.
const (
	// QuotaExceeded is the problem type of a request that exceeds a quota
	// policy, and the default type of refusals under WithProblemJSON.
	QuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	// TemporaryReducedCapacity is the problem type of a request refused
	// because the server's capacity is reduced; WithProblemJSON uses it by
	// default for refusals with status 503.
	TemporaryReducedCapacity = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
)

// Fields selects the rate-limit header fields the middleware sends on the
// responses it limits. Combine them with |.
type Fields uint8

const (
	// IETFFields are RateLimit-Policy and RateLimit, the structured fields
	// of draft-ietf-httpapi-ratelimit-headers-11:
	//
	//	RateLimit-Policy: "api";q=100;w=60
	//	RateLimit: "api";r=42;t=30
	IETFFields Fields = 1 << iota
	// LegacyFields are X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (seconds until the limit is back to full capacity,
	// not a Unix time).
	LegacyFields
	// NoFields sends no rate-limit fields (refusals still carry
	// Retry-After).
	NoFields Fields = 0
)

// RefusalHandler writes the response to a refused request: the status and
// the body. When it is called, the rate-limit fields and Retry-After have
// been set on w.Header() already. status is the status the middleware
// would send: WithStatus's for a limit's refusal, 503 for WithFailClosed's.
// d is the refusing decision; its Rule is "fail-closed" for a refusal of
// WithFailClosed.
type RefusalHandler func(w http.ResponseWriter, r *http.Request, d admit.Decision, status int)

// Option configures a Middleware. The zero set of options gives the
// defaults documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	status      int
	fields      Fields
	problem     bool
	problemType string
	problemText string
	refusal     RefusalHandler
	exactPaths  map[string]struct{}
	prefixes    []string
	exemptFunc  func(*http.Request) bool
	shadow      bool
	failClosed  bool
	failRetry   time.Duration
	skipUnkeyed bool
	maxKeyLen   int
	cost        func(*http.Request) (int64, error)
	observer    func(Event)
	failure     func(status int) bool
	err         error
}

func defaultOptions() options {
	return options{
		status:    DefaultStatus,
		fields:    IETFFields | LegacyFields,
		maxKeyLen: DefaultMaxKeyLength,
		failRetry: DefaultFailClosedRetryAfter,
		failure:   DefaultFailure,
	}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func (o *options) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithStatus sets the status of a refused request. The default is
// DefaultStatus (429 Too Many Requests); 503 Service Unavailable suits a
// concurrency cap protecting the server. code must be in 400-599.
func WithStatus(code int) Option {
	return optionFunc(func(o *options) {
		if code < 400 || code > 599 {
			o.fail("WithStatus(%d): want a status in 400-599", code)
			return
		}
		o.status = code
	})
}

// WithFields selects the rate-limit header fields sent on the responses
// the middleware limits, admitted or refused. The default is
// IETFFields|LegacyFields; NoFields sends none. Fields outside
// IETFFields|LegacyFields are an error.
func WithFields(f Fields) Option {
	return optionFunc(func(o *options) {
		if f&^(IETFFields|LegacyFields) != 0 {
			o.fail("WithFields(%d): unknown fields", f)
			return
		}
		o.fields = f
	})
}

// WithProblemJSON makes refusals answer with an RFC 9457 problem details
// body (Content-Type application/problem+json) instead of the plain JSON
// body: type, title, status, detail, and the extension members
// violated-policies (as the IETF draft defines it) and the plain body's
// code, limit_dim, retry_after_ms and kind. typeURI and title name the
// problem type; if typeURI is empty, the type is QuotaExceeded ("Quota
// Exceeded"), or TemporaryReducedCapacity ("Temporary Reduced Capacity")
// for a refusal with status 503, and title is ignored. The default is the
// plain JSON body (see Middleware).
func WithProblemJSON(typeURI, title string) Option {
	return optionFunc(func(o *options) {
		o.problem = true
		o.problemType = typeURI
		o.problemText = title
		if typeURI != "" && title == "" {
			o.fail("WithProblemJSON(%q, %q): a problem type needs a title", typeURI, title)
		}
	})
}

// WithRefusalHandler sets the handler that writes refusals, in place of the
// JSON body. The default is nil: the middleware writes the body itself.
func WithRefusalHandler(h RefusalHandler) Option {
	return optionFunc(func(o *options) { o.refusal = h })
}

// WithExemptPaths exempts requests whose URL path is exactly one of paths
// (such as "/healthz", "/readyz", "/metrics") from the limit: they are
// served without a decision. Each path must begin with "/". A path that is
// not clean ("//", "/./", "/../", as path.Clean would change it) is never
// exempt, so that "/healthz/../api" cannot borrow an exemption from a
// router that cleans paths. The default is no exempt path; the option adds
// to the paths of earlier ones.
func WithExemptPaths(paths ...string) Option {
	return optionFunc(func(o *options) {
		for _, p := range paths {
			if !strings.HasPrefix(p, "/") {
				o.fail("WithExemptPaths(%q): a path must begin with /", p)
				return
			}
			if o.exactPaths == nil {
				o.exactPaths = make(map[string]struct{})
			}
			o.exactPaths[p] = struct{}{}
		}
	})
}

// WithExemptPrefixes exempts requests whose clean URL path is under one of
// prefixes: a prefix matches itself and the paths below it at a segment
// boundary, so "/debug" matches "/debug" and "/debug/pprof/" but not
// "/debugger" (a prefix ending in "/" matches the paths below it only).
// Each prefix must begin with "/". The default is none; the option adds to
// the prefixes of earlier ones.
func WithExemptPrefixes(prefixes ...string) Option {
	return optionFunc(func(o *options) {
		for _, p := range prefixes {
			if !strings.HasPrefix(p, "/") {
				o.fail("WithExemptPrefixes(%q): a prefix must begin with /", p)
				return
			}
			o.prefixes = append(o.prefixes, p)
		}
	})
}

// WithExempt exempts the requests for which f reports true, in addition to
// the exempt paths and prefixes. f is called on every request that no path
// exempts, so it must be fast and safe for concurrent use. The default is
// nil.
func WithExempt(f func(r *http.Request) bool) Option {
	return optionFunc(func(o *options) { o.exemptFunc = f })
}

// WithShadow turns shadow mode on or off. In shadow mode the middleware
// decides every request and reports each decision to the observer (see
// WithObserver; Event.Shadow is true), but serves every request as if it
// were not there: no refusal, and no rate-limit field or Retry-After on
// any response. Use it to dark-launch a limit and watch what it would
// refuse. The limiter still counts the requests it admits. The default is
// off.
func WithShadow(on bool) Option {
	return optionFunc(func(o *options) { o.shadow = on })
}

// WithFailOpen makes the middleware serve a request whose limiter failed
// (returned an error that is not about the request: a store that is down,
// a timeout), without rate-limit fields. It is the default.
//
// These policies are the last resort: wrap a remote limiter in a
// compose.Guard to fall back to a local limit, or to a circuit breaker,
// before an error ever reaches the middleware.
func WithFailOpen() Option {
	return optionFunc(func(o *options) { o.failClosed = false })
}

// WithFailClosed makes the middleware refuse a request whose limiter
// failed, with 503 Service Unavailable and Retry-After retryAfter (0: the
// default, DefaultFailClosedRetryAfter); the refusal's Rule is
// "fail-closed". The default is WithFailOpen. A negative retryAfter is an
// error.
func WithFailClosed(retryAfter time.Duration) Option {
	return optionFunc(func(o *options) {
		if retryAfter < 0 {
			o.fail("WithFailClosed(%v): want a duration >= 0", retryAfter)
			return
		}
		if retryAfter == 0 {
			retryAfter = DefaultFailClosedRetryAfter
		}
		o.failClosed = true
		o.failRetry = retryAfter
	})
}

// WithSkipUnkeyed makes the middleware serve, without a limit, a request
// that cannot be keyed (its KeyFunc or cost function returned an error, or
// its Decider an error wrapping ErrNoKey). The default refuses such a
// request with 400 Bad Request, so that leaving out a header is not a way
// around the limit. A key that is repeated, empty or malformed (ErrBadKey)
// is refused with 400, and a key longer than the maximum with 431,
// whatever this option says.
func WithSkipUnkeyed() Option {
	return optionFunc(func(o *options) { o.skipUnkeyed = true })
}

// WithMaxKeyLength sets the longest key, in bytes, the middleware passes to
// its limiter; a request with a longer key is refused with 431 Request
// Header Fields Too Large, without a decision. The default is
// DefaultMaxKeyLength (4 KiB); n must be positive.
func WithMaxKeyLength(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			o.fail("WithMaxKeyLength(%d): want a positive length", n)
			return
		}
		o.maxKeyLen = n
	})
}

// WithCost sets the function giving each request's cost, the n of the
// limiter's Allow (a request that uploads a file may cost its size in
// kilobytes). An error or a negative cost refuses the request with 400
// {"code":"KEY_INVALID"}, even under WithSkipUnkeyed. A cost of 0 is a peek: the request is
// admitted and consumes nothing. The default is nil: every request costs 1.
// A Decider decides the cost itself, so NewDecider refuses this option.
func WithCost(f func(r *http.Request) (int64, error)) Option {
	return optionFunc(func(o *options) { o.cost = f })
}

// WithObserver sets a function told of every request the middleware
// decides (not of the exempt ones): what it decided and why (see Event).
// It is called on the request's goroutine before the handler runs, so it
// must be fast and safe for concurrent use; it must not keep the Event's
// Request past its return. Use it for metrics and logs, and to count what
// shadow mode would refuse. The default is nil.
func WithObserver(f func(Event)) Option {
	return optionFunc(func(o *options) { o.observer = f })
}

// DefaultFailure is the default of WithFailure: a response status of 429
// Too Many Requests (what the handler calls is saturated) or of 500 and
// more (an error of the server or of what it calls: 502, 503 and 504
// are overload) is a failure.
func DefaultFailure(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// WithFailure sets the function that tells, from the status its handler
// wrote (200 if it wrote none), whether an admitted request failed in a
// way that says what it protects is overloaded. The middleware reports
// that outcome to the limits that learn from it (compose.Held.Finish:
// the adaptive limits of package adaptive, and the adaptive rules of a
// policy); a handler that panics has failed, whatever the function says.
// The status is captured, by wrapping the ResponseWriter, only for
// requests whose grants want the outcome (compose.Held.WantsOutcome). The
// default is DefaultFailure; a nil f keeps it.
func WithFailure(f func(status int) bool) Option {
	return optionFunc(func(o *options) {
		if f != nil {
			o.failure = f
		}
	})
}
