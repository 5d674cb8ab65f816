// Package grpclimit limits gRPC calls: server interceptors that decide
// each call (unary) or stream with admit's limiters and refuse the excess
// with codes.ResourceExhausted, google.rpc.RetryInfo and
// google.rpc.QuotaFailure, and client interceptors that honour RetryInfo.
//
// On the server, build a Server and install both interceptors:
//
//	lim, _ := keyed.New(keyed.Config{Limit: admit.PerSecond(100)})
//	s, _ := grpclimit.NewServer(lim, grpclimit.FirstKey(
//		grpclimit.MetadataKey("x-api-key"), grpclimit.PeerKey()), grpclimit.Config{})
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(auth, s.UnaryServerInterceptor()),
//		grpc.ChainStreamInterceptor(auth, s.StreamServerInterceptor()))
//
// A call is one event, decided before its handler; a stream is one event,
// decided when it opens. The health service is exempt by default, so load
// balancers' probes are never refused (Config.Exempt, Config.LimitHealth).
//
// On the client, a Client's interceptors wait for the delay a refusal's
// RetryInfo gives and retry, a bounded number of times, never past the
// call's deadline or a maximum wait, and never for another code:
//
//	c, _ := grpclimit.NewClient(grpclimit.ClientConfig{})
//	conn, _ := grpc.NewClient(target,
//		grpc.WithChainUnaryInterceptor(c.UnaryClientInterceptor()),
//		grpc.WithChainStreamInterceptor(c.StreamClientInterceptor()))
//
// # Which one should I use?
//
//   - NewServer with a keyed limiter and a Key for per-client limits: a
//     keyed.Limiter for one instance, a redisstore.Limiter for a fleet
//     (wrapped in a compose.Guard to choose what an outage does). Key by
//     the authenticated caller where you can (FuncKey reading what your
//     authentication interceptor put in the context, with the limiter
//     installed after it), by an API key in the metadata (MetadataKey),
//     and by address (PeerKey, IPv6 by /64) for anonymous callers. Use
//     Config.Methods for methods that cost more than the others (a search, an
//     export) or per service.
//   - NewServerDecider when a call must pass several limits (per client,
//     per tenant, a global concurrency cap: a compose.Chain's AllowKeys in
//     a DeciderFunc) or when a policy chooses the limits per call. Slots
//     of concurrency limits are held until the handler or stream ends.
//     Adaptive limits (package adaptive, a policy's adaptive rules) learn
//     from each call's outcome: the code its handler returns, a failure
//     for Unavailable, ResourceExhausted, DeadlineExceeded and Internal
//     by default (Config.Failure), or a panic.
//   - NewClient's interceptors in clients of any server that sends
//     RetryInfo (ours does; so do Google's APIs). Keep MaxRetries small:
//     a limit that is reached is an answer, and retries add load to a
//     server that is already refusing it.
//
// A limiter that fails (a Redis that is down) fails the call closed, with
// codes.Unavailable, unless Config.FailOpen; a compose.Guard in front of the
// limiter gives finer policies (a local fallback, a circuit breaker).
package grpclimit
