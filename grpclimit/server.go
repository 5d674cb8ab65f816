package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Decider decides calls for a Server built with NewServerDecider: a policy
// engine, a compose.Chain of several limits, anything that needs more than
// one keyed limiter per call.
type Decider interface {
	// Decide decides a call to fullMethod; slots of concurrency limits go into h and are
	// released after the handler (or the stream) ends.
	Decide(ctx context.Context, fullMethod string, h *compose.Held) (admit.Decision, error)
}

// DeciderFunc is a function that is a Decider.
type DeciderFunc func(ctx context.Context, fullMethod string, h *compose.Held) (admit.Decision, error)

// Decide returns f(ctx, fullMethod, h).
func (f DeciderFunc) Decide(ctx context.Context, fullMethod string, h *compose.Held) (admit.Decision, error) {
	return f(ctx, fullMethod, h)
}

// Server limits the calls a gRPC server accepts, through the interceptors
// it returns (UnaryServerInterceptor, StreamServerInterceptor). Each call
// not exempt (see Config.Exempt; the health service is exempt by default) is
// decided before its handler runs, as one event: a unary call when it
// arrives, a stream when it opens (its messages are not counted).
//
// A Server built with NewServer decides a call with the keyed limiter of
// its method (Config.Methods) or its default limiter, under the call's Key:
// the key the Key finds, or "" for calls without one (which therefore
// share one limit, never none). Keys longer than Config.MaxKeyLength are
// replaced by their SHA-256 digest. A Server built with NewServerDecider
// asks its Decider, and releases the concurrency slots the Decider held
// in its compose.Held when the handler returns (for a stream: when the
// stream ends). When a grant learns from the call's outcome
// (compose.Held.WantsOutcome: an adaptive limit), the Held is finished
// instead (compose.Held.Finish): the call failed if its handler panicked
// or returned a code that Config.Failure calls a failure (by
// default Unavailable, ResourceExhausted, DeadlineExceeded, Internal).
//
// A refused call fails with codes.ResourceExhausted, a message naming the
// limit, and two details: a google.rpc.RetryInfo whose retry_delay is the
// decision's RetryAfter rounded up to the millisecond (absent when the
// call can never be admitted, or not within a century, and when a
// concurrency limit cannot tell), and a google.rpc.QuotaFailure with one violation whose subject is the
// limit's name (the Decision's Rule, else the Method's Name or Pattern,
// else the full method) and whose description is the limit ("100/s burst
// 20", "10 in flight"). Its trailers carry the same figures, under these
// metadata names: "retry-after", in whole seconds rounded up, as HTTP's
// Retry-After (sent when, and only when, the refusal carries a
// RetryInfo); and the IETF fields "ratelimit",
// `"name";r=remaining;t=seconds` (such as `"api";r=0;t=5`; t is the
// retry-after, absent with it), and "ratelimit-policy",
// `"name";q=quota;w=window-seconds` (such as `"api";q=100;w=60`; for a
// concurrency limit, `"name";q=slots;qu="concurrent-requests"`).
// Config.RetryJitter spreads the retry times of refusals over [t, t+j]
// (see admit.Jitter; off by default): the RetryInfo and the trailers
// then say the jittered time. A limiter error fails the call with codes.Unavailable, unless
// Config.FailOpen admits it; a call whose context ended fails with its
// context's code.
//
// The zero Server is not usable. A Server is safe for concurrent use.
type Server struct {
	dec       Decider
	def       methodRule
	methods   map[string]methodRule
	exempt    map[string]bool
	key       Key
	failOpen  bool
	headers   bool
	maxKeyLen int
	onError   func(ctx context.Context, fullMethod string, err error)
	failure   func(code codes.Code) bool
	cache     partCache
	memo      refusalMemo
	jitter    admit.Jitter
}

// NewServer returns a Server configured by cfg deciding each call with lim
// (or the limiter cfg.Methods gives its method) under the key found by
// key. lim may be nil if cfg.Methods gives limiters: calls to other methods are then not
// limited. lim is typically a keyed.Limiter, a redisstore.Limiter, or
// either wrapped in a compose.Guard; a compose.Chain of rate layers works
// too, but a chain with concurrency (Slots) layers needs somewhere to hold
// its slots: use NewServerDecider with the chain's AllowKeys.
//
// A call for which key finds nothing (no such metadata, an empty value,
// no IP peer) is limited under the empty key, which all such calls share:
// leaving out, emptying or repeating the metadata a caller is keyed by
// (a repeated entry is keyed by its first value) never gets it more than
// its limit.
//
// NewServer fails with an error wrapping admit.ErrInvalidConfig for an
// invalid key (see Key.Err), without any limiter, or for a field of cfg
// out of its domain (such as an invalid method pattern); the message
// names the problem.
func NewServer(lim admit.KeyedLimiter, key Key, cfg Config) (*Server, error) {
	if err := key.Err(); err != nil {
		return nil, err
	}
	s, err := newServer(&cfg)
	if err != nil {
		return nil, err
	}
	if lim == nil && len(cfg.Methods) == 0 {
		return nil, fmt.Errorf("%w: grpclimit: NewServer without a default limiter or Config.Methods", admit.ErrInvalidConfig)
	}
	s.key = key
	s.def = methodRule{lim: lim}
	s.methods = make(map[string]methodRule, len(cfg.Methods))
	for _, m := range cfg.Methods {
		s.methods[m.Pattern] = methodRule{pattern: m.Pattern, name: m.Name, lim: m.Limiter}
	}
	return s, nil
}

// NewServerDecider returns a Server configured by cfg deciding each call
// with d. The Held
// given to d.Decide belongs to the call until it ends and is reused
// after: d must not keep it. NewServerDecider fails with an error wrapping
// admit.ErrInvalidConfig for a nil d or if cfg.Methods is given (d routes
// calls itself), and as NewServer for the other fields.
func NewServerDecider(d Decider, cfg Config) (*Server, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: grpclimit: NewServerDecider(nil)", admit.ErrInvalidConfig)
	}
	if len(cfg.Methods) > 0 {
		return nil, invalid("Methods: do not apply to a Decider")
	}
	s, err := newServer(&cfg)
	if err != nil {
		return nil, err
	}
	s.dec = d
	return s, nil
}

func newServer(cfg *Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Server{
		exempt:    make(map[string]bool, len(cfg.Exempt)+1),
		failOpen:  cfg.FailOpen,
		headers:   cfg.Headers,
		maxKeyLen: cfg.MaxKeyLength,
		onError:   cfg.OnError,
		failure:   cfg.Failure,
		jitter:    cfg.RetryJitter,
	}
	if s.maxKeyLen == 0 {
		s.maxKeyLen = defaultMaxKeyLength
	}
	if s.failure == nil {
		s.failure = defaultFailure
	}
	s.memo.seed = maphash.MakeSeed()
	if !cfg.LimitHealth {
		s.exempt[healthService] = true
	}
	for _, p := range cfg.Exempt {
		s.exempt[p] = true
	}
	return s, nil
}

// service returns the service part of a full method, "/package.Service/",
// or "" if fullMethod is not of that form.
func service(fullMethod string) string {
	if i := strings.LastIndexByte(fullMethod, '/'); i > 0 {
		return fullMethod[:i+1]
	}
	return ""
}

// Exempt reports whether calls to fullMethod are exempt from limits.
func (s *Server) Exempt(fullMethod string) bool {
	if len(s.exempt) == 0 {
		return false
	}
	return s.exempt[fullMethod] || s.exempt[service(fullMethod)]
}

// rule returns the rule limiting fullMethod.
func (s *Server) rule(fullMethod string) methodRule {
	if len(s.methods) > 0 {
		if r, ok := s.methods[fullMethod]; ok {
			return r
		}
		if r, ok := s.methods[service(fullMethod)]; ok {
			return r
		}
	}
	return s.def
}

// Decide decides a call to fullMethod with context ctx as the interceptors
// do, without the exemptions, recording concurrency slots in h (which the
// caller releases when the call ends). A call no limiter applies to is
// admitted with the zero Decision but Allowed. The Decision's Rule is the
// subject a refusal names.
func (s *Server) Decide(ctx context.Context, fullMethod string, h *compose.Held) (admit.Decision, error) {
	if s.dec != nil {
		d, err := s.dec.Decide(ctx, fullMethod, h)
		if d.Rule == "" {
			d.Rule = fullMethod
		}
		return d, err
	}
	r := s.rule(fullMethod)
	if r.lim == nil {
		return admit.Decision{Allowed: true, Limit: admit.Unlimited}, nil
	}
	key, _ := s.key.Of(ctx, fullMethod)
	if len(key) > s.maxKeyLen {
		key = digest(key)
	}
	d, err := r.lim.Allow(ctx, admit.Request{Key: key, N: 1})
	switch {
	case r.name != "":
		d.Rule = r.name
	case d.Rule != "":
	case r.pattern != "":
		d.Rule = r.pattern
	default:
		d.Rule = fullMethod
	}
	return d, err
}

// check decides a call; it returns nil to admit it, or the error to fail
// it with and the trailers to send. Admitted calls' headers, if any, are
// returned as md with a nil error.
func (s *Server) check(ctx context.Context, fullMethod string, h *compose.Held) (metadata.MD, error) {
	d, err := s.Decide(ctx, fullMethod, h)
	if err != nil {
		if h != nil {
			h.Release()
		}
		if s.onError != nil {
			s.onError(ctx, fullMethod, err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, status.FromContextError(cerr).Err()
		}
		if s.failOpen && compose.IsFailure(err) {
			return nil, nil
		}
		return nil, status.Error(codes.Unavailable, "grpclimit: the rate limiter could not decide the call")
	}
	if !d.Allowed {
		if h != nil {
			h.Release()
		}
		if s.jitter.Fraction > 0 {
			d = s.jitter.Apply(d)
		}
		return s.memo.refusal(&d, d.Rule, &s.cache)
	}
	if s.headers && d.Limit.Rate > 0 && d.Limit.Rate != admit.Inf {
		// (A decision without a limit, or with an unlimited one, has no
		// figures to send.)
		p := s.cache.parts(d, d.Rule)
		md := make(metadata.MD, 2)
		md[rateLimitMD] = []string{p.name + ";r=" + strconv.FormatInt(max(d.Remaining, 0), 10)}
		if p.policy != "" {
			md[rateLimitPolicyMD] = []string{p.policy}
		}
		return md, nil
	}
	return nil, nil
}

var heldPool = sync.Pool{New: func() any { return new(compose.Held) }}

// UnaryServerInterceptor returns the interceptor deciding unary calls.
func (s *Server) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if s.Exempt(info.FullMethod) {
			return handler(ctx, req)
		}
		if s.dec == nil {
			md, err := s.check(ctx, info.FullMethod, nil)
			if err != nil {
				sendTrailer(ctx, md)
				return nil, err
			}
			sendHeader(ctx, md)
			return handler(ctx, req)
		}
		h := heldPool.Get().(*compose.Held)
		md, err := s.check(ctx, info.FullMethod, h)
		if err != nil {
			heldPool.Put(h)
			sendTrailer(ctx, md)
			return nil, err
		}
		sendHeader(ctx, md)
		return s.serveUnary(ctx, req, handler, h)
	}
}

// serveUnary runs handler holding h, and gives h back when it returns or
// panics (the panic goes on after).
func (s *Server) serveUnary(ctx context.Context, req any, handler grpc.UnaryHandler, h *compose.Held) (resp any, err error) {
	panicked := true
	defer func() {
		s.done(h, panicked, err)
		heldPool.Put(h)
	}()
	resp, err = handler(ctx, req)
	panicked = false
	return resp, err
}

// serveStream is serveUnary for a stream.
func (s *Server) serveStream(srv any, ss grpc.ServerStream, handler grpc.StreamHandler, h *compose.Held) (err error) {
	panicked := true
	defer func() {
		s.done(h, panicked, err)
		heldPool.Put(h)
	}()
	err = handler(srv, ss)
	panicked = false
	return err
}

// done gives back what h holds at the end of a call that returned err (or
// panicked): Finish with the outcome if a grant wants it, else Release.
func (s *Server) done(h *compose.Held, panicked bool, err error) {
	if !h.WantsOutcome() {
		h.Release()
		return
	}
	h.Finish(panicked || s.failure(codeOf(err)))
}

// codeOf returns the code of a handler's error: its status's, or that of a
// context error.
func codeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Unknown
}

// StreamServerInterceptor returns the interceptor deciding streams when
// they open.
func (s *Server) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if s.Exempt(info.FullMethod) {
			return handler(srv, ss)
		}
		var h *compose.Held
		if s.dec != nil {
			h = heldPool.Get().(*compose.Held)
		}
		md, err := s.check(ss.Context(), info.FullMethod, h)
		if err != nil {
			if h != nil {
				heldPool.Put(h)
			}
			if md != nil {
				ss.SetTrailer(md)
			}
			return err
		}
		if md != nil {
			_ = ss.SetHeader(md)
		}
		if h != nil {
			return s.serveStream(srv, ss, handler, h)
		}
		return handler(srv, ss)
	}
}

// sendTrailer sets md as trailers of the unary call of ctx, if any.
func sendTrailer(ctx context.Context, md metadata.MD) {
	if md != nil {
		_ = grpc.SetTrailer(ctx, md)
	}
}

// sendHeader sets md as headers of the unary call of ctx, if any.
func sendHeader(ctx context.Context, md metadata.MD) {
	if md != nil {
		_ = grpc.SetHeader(ctx, md)
	}
}
