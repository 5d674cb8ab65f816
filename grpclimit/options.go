package grpclimit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/defaults"
)

// healthService is the gRPC health checking service, exempt from limits
// by default (see Config.LimitHealth).
const healthService = "/grpc.health.v1.Health/"

// Config configures a Server (NewServer, NewServerDecider). The zero
// Config is valid: no per-method limiter, the health service exempt,
// failing closed, the figures sent with refusals only, keys of more than
// 256 bytes hashed.
type Config struct {
	// Methods limit the calls to their patterns with their own limiters
	// instead of the Server's default limiter; a full method's takes
	// precedence over its service's. Only NewServer takes them (a
	// Decider routes calls itself). Nil means none: every method not
	// exempt is limited by the default limiter.
	Methods []Method

	// Exempt exempts the calls to each pattern (a full method or a
	// service, as in Method.Pattern) from every limit, in addition to the
	// health service (unless LimitHealth). The server reflection services,
	// "/grpc.reflection.v1.ServerReflection/" and
	// "/grpc.reflection.v1alpha.ServerReflection/", are not exempt by
	// default, since any client can call them; add them here if tools
	// such as grpcurl must work when the limit is reached.
	Exempt []string

	// LimitHealth limits the gRPC health checking service,
	// "/grpc.health.v1.Health/", too. The default exempts it: a load
	// balancer's probes must never be refused, or an overloaded instance
	// is taken out of service and its load moves to the others.
	LimitHealth bool

	// FailOpen admits the calls the limiter fails to decide (a store that
	// is down or slow). The default fails closed: such calls are refused
	// with codes.Unavailable. Errors about the call itself (see
	// compose.IsFailure, such as a key the limiter refuses) are refused
	// either way, so a client cannot get past the limit by sending a bad
	// key. For finer policies (a local fallback, a circuit breaker), wrap
	// the limiter in a compose.Guard; FailOpen then only sees what the
	// Guard passes on.
	FailOpen bool

	// Headers sends the IETF "ratelimit" (`"name";r=remaining`) and
	// "ratelimit-policy" (`"name";q=quota;w=window-seconds`) metadata
	// entries (see Server) in the response header metadata of admitted
	// calls too.
	// The default sends them only with refusals, as trailers: sending
	// them on every call costs a few allocations per call.
	Headers bool

	// RetryJitter spreads the retry time of each refusal over [t, t+j]
	// (see admit.Jitter), so that the callers a window or quota reset
	// releases do not come back as one herd: the RetryInfo's delay and the
	// retry-after and ratelimit trailers say the jittered time, never
	// earlier than the decision's. It changes what refusals say, not what
	// the limiter counts. The zero value is off; a Fraction outside [0, 1]
	// or a negative Max is an error.
	RetryJitter admit.Jitter

	// MaxKeyLength is the length, in bytes, beyond which a key is
	// replaced by "sha256:" and the hex SHA-256 digest of the key, so
	// huge metadata values neither fill the limiter's memory nor fail its
	// key length check (which would refuse the call). 0 means 256;
	// otherwise it must be at least 71 (the digest's length).
	MaxKeyLength int

	// OnError is told of every error of the limiter (before the call is
	// failed open or closed), for logs and metrics. It must be safe for
	// concurrent use. Nil means none.
	OnError func(ctx context.Context, fullMethod string, err error)

	// Failure tells, from the code its handler returned (codes.OK for
	// none), whether an admitted call failed in a way that says what it
	// protects is overloaded. A Server built with NewServerDecider
	// reports that outcome to the grants that learn from it
	// (compose.Held.Finish: the adaptive limits of package adaptive, and
	// the adaptive rules of a policy) when the handler returns (a
	// stream's, when the stream ends); a handler that panics has failed,
	// whatever Failure says. Nil means Unavailable, ResourceExhausted,
	// DeadlineExceeded (or a context deadline error) and Internal are
	// failures; other codes (NotFound, InvalidArgument, Canceled by the
	// client...) say nothing about load, and count as successes.
	Failure func(code codes.Code) bool
}

// Method limits the calls to Pattern with Limiter (Config.Methods).
type Method struct {
	// Pattern is a full method ("/package.Service/Method") or a service
	// ("/package.Service/", every method of it).
	Pattern string
	// Name names the limit in refusals (QuotaFailure's subject, the
	// Decision's Rule); if empty, the Rule of Limiter's decisions is
	// used, or else the Pattern.
	Name string
	// Limiter decides the calls to Pattern. Not nil.
	Limiter admit.KeyedLimiter
}

// The defaults of the Config and ClientConfig fields.
const (
	defaultMaxKeyLength = 256
	defaultMaxRetries   = 2
	defaultMaxWait      = 10 * time.Second
	defaultStreamBuffer = 16
)

type methodRule struct {
	pattern string
	name    string
	lim     admit.KeyedLimiter
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: grpclimit: "+format, append([]any{admit.ErrInvalidConfig}, args...)...)
}

// defaultFailure is the default Config.Failure.
func defaultFailure(code codes.Code) bool {
	switch code {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Internal:
		return true
	}
	return false
}

// check checks cfg, but for the Methods' limiters.
func (cfg *Config) check() error {
	if p := defaults.JitterProblem(cfg.RetryJitter); p != "" {
		return invalid("RetryJitter: %s", p)
	}
	for _, m := range cfg.Methods {
		if err := checkPattern(m.Pattern); err != nil {
			return invalid("Methods: %w", err)
		}
		if m.Limiter == nil {
			return fmt.Errorf("%w: grpclimit: Methods: %q with a nil limiter", admit.ErrInvalidConfig, m.Pattern)
		}
	}
	for _, p := range cfg.Exempt {
		if err := checkPattern(p); err != nil {
			return invalid("Exempt: %w", err)
		}
	}
	if n := cfg.MaxKeyLength; n != 0 && n < len(digestPrefix)+64 {
		return invalid("MaxKeyLength %d: want 0 or at least %d", n, len(digestPrefix)+64)
	}
	return nil
}

// checkPattern checks a full method or service pattern.
func checkPattern(p string) error {
	if len(p) < 3 || p[0] != '/' {
		return fmt.Errorf("invalid method pattern %q: want \"/package.Service/Method\" or \"/package.Service/\"", p)
	}
	i := strings.IndexByte(p[1:], '/') + 1
	if i <= 1 || strings.IndexByte(p[i+1:], '/') >= 0 {
		return fmt.Errorf("invalid method pattern %q: want \"/package.Service/Method\" or \"/package.Service/\"", p)
	}
	return nil
}

// ClientConfig configures a Client (see NewClient). The zero ClientConfig
// is valid: 2 retries, waits of up to 10 seconds, 16 messages kept to
// replay a stream, the system clock.
type ClientConfig struct {
	// Clock is the clock a Client reads and waits on (see
	// admit.Options.Clock). Nil means admit.SystemClock; tests use
	// admittest.ManualClock.
	Clock admit.Clock

	// MaxRetries is how many times a Client retries a call refused with
	// RetryInfo: a call is tried at most MaxRetries+1 times. 0 means 2; a
	// negative MaxRetries turns retries off.
	MaxRetries int

	// MaxWait is the longest delay a Client waits before a retry: a
	// refusal asking for longer is returned at once. 0 means 10 seconds;
	// it must not be negative.
	MaxWait time.Duration

	// StreamBuffer is how many sent messages a Client keeps to replay on
	// a retried stream; a stream that sent more before it was refused is
	// not retried. 0 means 16; a negative StreamBuffer keeps none, so
	// that only streams refused before their first message are retried.
	StreamBuffer int
}
