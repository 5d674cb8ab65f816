package httplimit

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/defaults"
)

// maxRetryAfter caps every duration the middleware sends (documented on
// Middleware).
const maxRetryAfter = 365 * 24 * time.Hour

// The problem types of the IETF draft draft-ietf-httpapi-ratelimit-headers
// that refusals under Config.ProblemJSON have by default (documented on
// Config.ProblemType).
const (
	quotaExceeded            = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	temporaryReducedCapacity = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
)

// Fields selects the rate-limit header fields the middleware sends on the
// responses it limits (Config.Fields). Combine IETFFields and
// LegacyFields with |; the zero Fields means both.
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
	// Retry-After). It cannot be combined with the others.
	NoFields
)

// RefusalHandler writes the response to a refused request: the status and
// the body. When it is called, the rate-limit fields and Retry-After have
// been set on w.Header() already. status is the status the middleware
// would send: Config.Status for a limit's refusal, 503 for a refusal of
// Config.FailClosed. d is the refusing decision; its Rule is "fail-closed"
// for a refusal of Config.FailClosed.
type RefusalHandler func(w http.ResponseWriter, r *http.Request, d admit.Decision, status int)

// Config configures a Middleware (New, NewChain, NewDecider): how it
// answers, which requests it exempts, what it does when a request cannot
// be keyed or its limiter fails. The zero Config is valid: refusals are
// 429 with the IETF and X-RateLimit fields and a JSON body, nothing is
// exempt, unkeyed requests are refused with 400, a failing limiter fails
// open, keys are at most 4 KiB.
type Config struct {
	// Status is the status of a refused request. 0 means 429 Too Many
	// Requests; 503 Service Unavailable suits a concurrency cap protecting
	// the server. It must be in 400-599.
	Status int

	// Fields selects the rate-limit header fields sent on the responses
	// the middleware limits, admitted or refused. The zero Fields means
	// IETFFields|LegacyFields; NoFields sends none. Values outside
	// IETFFields|LegacyFields, or NoFields with another, are an error.
	Fields Fields

	// ProblemJSON makes refusals answer with an RFC 9457 problem details
	// body (Content-Type application/problem+json) instead of the plain
	// JSON body: type, title, status, detail, and the extension members
	// violated-policies (as the IETF draft defines it) and the plain
	// body's code, limit_dim, retry_after_ms and kind. The default is the
	// plain JSON body (see Middleware).
	ProblemJSON bool
	// ProblemType and ProblemTitle name the problem type of ProblemJSON.
	// If ProblemType is empty, the type is the IETF draft's "quota
	// exceeded" problem type,
	// "https://iana.org/assignments/http-problem-types#quota-exceeded"
	// (title "Quota Exceeded"), or for a refusal with status 503 its
	// "temporary reduced capacity",
	// "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
	// (title "Temporary Reduced Capacity"), and ProblemTitle is ignored. A
	// ProblemType needs a ProblemTitle, and both need ProblemJSON.
	ProblemType  string
	ProblemTitle string

	// RefusalHandler writes refusals, in place of the JSON body. Nil
	// means the middleware writes the body itself.
	RefusalHandler RefusalHandler

	// ExemptPaths exempts requests whose URL path is exactly one of them
	// (such as "/healthz", "/readyz", "/metrics") from the limit: they
	// are served without a decision. Each path must begin with "/". A
	// request path that is not clean ("//", "/./", "/../", as path.Clean
	// would change it) is never exempt, so that "/healthz/../api" cannot
	// borrow an exemption from a router that cleans paths.
	ExemptPaths []string
	// ExemptPrefixes exempts requests whose clean URL path is under one of
	// them: a prefix matches itself and the paths below it at a segment
	// boundary, so "/debug" matches "/debug" and "/debug/pprof/" but not
	// "/debugger" (a prefix ending in "/" matches the paths below it
	// only). Each prefix must begin with "/".
	ExemptPrefixes []string
	// Exempt exempts the requests for which it reports true, in addition
	// to ExemptPaths and ExemptPrefixes. It is called on every request
	// that no path exempts, so it must be fast and safe for concurrent
	// use. Nil means none.
	Exempt func(r *http.Request) bool

	// Shadow turns shadow mode on. In shadow mode the middleware decides
	// every request and reports each decision to Observe (Event.Shadow
	// is true), but serves every request as if it were not there: no
	// refusal, and no rate-limit field or Retry-After on any response.
	// Use it to dark-launch a limit and watch what it would refuse. The
	// limiter still counts the requests it admits.
	Shadow bool

	// FailClosed makes the middleware refuse a request whose limiter
	// failed (returned an error that is not about the request: a store
	// that is down, a timeout) with 503 Service Unavailable and
	// Retry-After FailClosedRetryAfter; the refusal's Rule is
	// "fail-closed". The default, false, fails open: the request is
	// served, without rate-limit fields.
	//
	// These policies are the last resort: wrap a remote limiter in a
	// compose.Guard to fall back to a local limit, or to a circuit
	// breaker, before an error ever reaches the middleware.
	FailClosed bool
	// FailClosedRetryAfter is the Retry-After of the refusals of
	// FailClosed. 0 means 1 second; it must not be negative.
	FailClosedRetryAfter time.Duration

	// RetryJitter spreads the retry time of each refusal over [t, t+j]
	// (see admit.Jitter), so that the clients a window or quota reset
	// releases do not come back as one herd: Retry-After, the RateLimit
	// field's t, X-RateLimit-Reset (raised to at least the retry time) and
	// retry_after_ms all say the jittered time, which is never earlier
	// than the decision's. It changes what refusals say, not what the
	// limiter counts, so no client gets more than its limit from it. The
	// zero value is off (admit serve turns it on); a Fraction outside
	// [0, 1] or a negative Max is an error. Config.Observe is told the
	// limiter's exact decision.
	RetryJitter admit.Jitter

	// SkipUnkeyed makes the middleware serve, without a limit, a request
	// that cannot be keyed (its KeyFunc or cost function returned an
	// error, or its Decider an error wrapping ErrNoKey). The default
	// refuses such a request with 400 Bad Request, so that leaving out a
	// header is not a way around the limit. A key that is repeated, empty
	// or malformed (ErrBadKey) is refused with 400, and a key longer than
	// MaxKeyLength with 431, whatever SkipUnkeyed says.
	SkipUnkeyed bool

	// MaxKeyLength is the longest key, in bytes, the middleware passes to
	// its limiter; a request with a longer key is refused with 431
	// Request Header Fields Too Large, without a decision. 0 means 4096
	// (4 KiB); it must not be negative.
	MaxKeyLength int

	// Cost gives each request's cost, the n of the limiter's Allow (a
	// request that uploads a file may cost its size in kilobytes). An
	// error or a negative cost refuses the request with 400
	// {"code":"KEY_INVALID"}, even under SkipUnkeyed. A cost of 0 is a
	// peek: the request is admitted and consumes nothing. Nil means every
	// request costs 1. A Decider decides the cost itself, so NewDecider
	// refuses a Config with a Cost.
	Cost func(r *http.Request) (int64, error)

	// MaxDelay turns on the delay mode of New's limiter, as nginx's
	// limit_req does with burst= and delay=: a request beyond the limit
	// whose slot comes within MaxDelay (and before its context's
	// deadline) is admitted, held until its slot (Decision.Delay), then
	// served; beyond, it is refused as usual (see admit.Request.MaxDelay
	// and admit.Wait). A request whose client goes away while it waits is
	// not served, and its slot is given back if the limiter can (it is a
	// Refunder and no later request relies on the slot). The limiter must
	// delay (keyed.Limiter or redisstore.Limiter by GCRA or a bucket),
	// else every request fails with admit.ErrInvalidDelay. 0, the default,
	// never delays. A Decider (a policy's, whose rules say their delay)
	// and a Chain decide their own: NewChain and NewDecider refuse a
	// MaxDelay. In shadow mode nothing waits. It must not be negative.
	MaxDelay time.Duration

	// Observe is told of every request the middleware decides (not of
	// the exempt ones): what it decided and why (see Event). It is called
	// on the request's goroutine before the handler runs, so it must be
	// fast and safe for concurrent use; it must not keep the Event's
	// Request past its return. Use it for metrics and logs, and to count
	// what shadow mode would refuse. Nil means none.
	Observe func(Event)

	// Failure tells, from the status its handler wrote (200 if it wrote
	// none), whether an admitted request failed in a way that says what
	// it protects is overloaded. The middleware reports that outcome to
	// the limits that learn from it (compose.Held.Finish: the adaptive
	// limits of package adaptive, and the adaptive rules of a policy); a
	// handler that panics has failed, whatever Failure says. The status
	// is captured, by wrapping the ResponseWriter, only for requests
	// whose grants want the outcome (compose.Held.WantsOutcome). Nil
	// means a status of 429 Too Many Requests (what the handler calls is
	// saturated) or of 500 and more (an error of the server or of what it
	// calls: 502, 503 and 504 are overload) is a failure.
	Failure func(status int) bool
}

// The defaults of Config's fields.
const (
	defaultStatus               = http.StatusTooManyRequests
	defaultMaxKeyLength         = 4096
	defaultFailClosedRetryAfter = time.Second
)

// options are a valid Config with its defaults filled in, as the
// Middleware reads them.
type options struct {
	status      int
	fields      Fields // IETFFields|LegacyFields, or 0 for none
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
	jitter      admit.Jitter
	skipUnkeyed bool
	maxKeyLen   int
	cost        func(*http.Request) (int64, error)
	maxDelay    time.Duration
	observer    func(Event)
	failure     func(status int) bool
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: httplimit: "+format, append([]any{admit.ErrInvalidConfig}, args...)...)
}

// defaultFailure is the default Config.Failure.
func defaultFailure(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// resolve checks cfg and returns its options, defaults filled in.
func (cfg *Config) resolve() (options, error) {
	o := options{
		status:      cfg.Status,
		problem:     cfg.ProblemJSON,
		problemType: cfg.ProblemType,
		problemText: cfg.ProblemTitle,
		refusal:     cfg.RefusalHandler,
		exemptFunc:  cfg.Exempt,
		shadow:      cfg.Shadow,
		failClosed:  cfg.FailClosed,
		failRetry:   cfg.FailClosedRetryAfter,
		jitter:      cfg.RetryJitter,
		skipUnkeyed: cfg.SkipUnkeyed,
		maxKeyLen:   cfg.MaxKeyLength,
		cost:        cfg.Cost,
		maxDelay:    cfg.MaxDelay,
		observer:    cfg.Observe,
		failure:     cfg.Failure,
	}
	switch {
	case o.status == 0:
		o.status = defaultStatus
	case o.status < 400 || o.status > 599:
		return o, invalid("Status %d: want a status in 400-599", o.status)
	}
	switch f := cfg.Fields; {
	case f == 0:
		o.fields = IETFFields | LegacyFields
	case f == NoFields:
		o.fields = 0
	case f&^(IETFFields|LegacyFields) != 0:
		return o, invalid("Fields %d: want IETFFields, LegacyFields, both, or NoFields", f)
	default:
		o.fields = f
	}
	if (o.problemType != "" || o.problemText != "") && !o.problem {
		return o, invalid("ProblemType %q, ProblemTitle %q: want ProblemJSON too", o.problemType, o.problemText)
	}
	if o.problemType != "" && o.problemText == "" {
		return o, invalid("ProblemType %q: a problem type needs a ProblemTitle", o.problemType)
	}
	for _, p := range cfg.ExemptPaths {
		if !strings.HasPrefix(p, "/") {
			return o, invalid("ExemptPaths: %q: a path must begin with /", p)
		}
		if o.exactPaths == nil {
			o.exactPaths = make(map[string]struct{}, len(cfg.ExemptPaths))
		}
		o.exactPaths[p] = struct{}{}
	}
	for _, p := range cfg.ExemptPrefixes {
		if !strings.HasPrefix(p, "/") {
			return o, invalid("ExemptPrefixes: %q: a prefix must begin with /", p)
		}
	}
	o.prefixes = slices.Clone(cfg.ExemptPrefixes)
	switch {
	case o.failRetry < 0:
		return o, invalid("FailClosedRetryAfter %v: want a duration >= 0", o.failRetry)
	case o.failRetry == 0:
		o.failRetry = defaultFailClosedRetryAfter
	}
	if p := defaults.JitterProblem(o.jitter); p != "" {
		return o, invalid("RetryJitter: %s", p)
	}
	switch {
	case o.maxKeyLen < 0:
		return o, invalid("MaxKeyLength %d: want >= 0", o.maxKeyLen)
	case o.maxKeyLen == 0:
		o.maxKeyLen = defaultMaxKeyLength
	}
	if o.maxDelay < 0 {
		return o, invalid("MaxDelay %v: want a duration >= 0", o.maxDelay)
	}
	if o.failure == nil {
		o.failure = defaultFailure
	}
	return o, nil
}
