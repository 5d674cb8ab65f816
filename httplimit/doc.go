// Package httplimit is net/http middleware that rate-limits requests with
// any of admit's limiters, in front of any router: a Middleware's Handler
// is a func(http.Handler) http.Handler.
//
//	lim, _ := keyed.New(keyed.Config{Options: admit.Options{Name: "api"}, Limit: admit.PerMinute(100)})
//	m, _ := httplimit.New(lim, httplimit.RemoteIP, httplimit.Config{
//		ExemptPaths: []string{"/healthz", "/metrics"},
//	})
//	http.ListenAndServe(":8080", m.Handler(mux))
//
// Every limited response carries the limit's state in the IETF draft's
// structured fields (draft-ietf-httpapi-ratelimit-headers-11) and in the
// X-RateLimit-* fields clients already read; a refusal is a 429 with
// Retry-After in seconds and a JSON body naming the limit that refused
// (or RFC 9457 problem details). See Middleware for the exact values.
//
// # Which one should I use?
//
// The decision:
//
//   - New(limiter, key) for one limit per key: a keyed.Limiter in one
//     process, a redisstore.Limiter for a fleet (wrapped in a compose.Guard,
//     which decides what happens when Redis is down: the middleware's own
//     failing open and Config.FailClosed are a last resort).
//   - NewChain(chain, keys) for hierarchical limits: per client address, per
//     API key, per tenant and a global concurrency cap at once, each layer
//     with its own KeyFunc; a request refused by one layer consumes nothing
//     from the others.
//   - NewDecider(d) for a policy engine (package policy) that works out the
//     descriptors, limits and cost of a request itself.
//
// The key:
//
//   - RemoteIP when clients connect directly. Behind a load balancer or
//     CDN, NewClientIP with TrustedProxies (the proxies' addresses) or
//     TrustedHops (how many proxies append to X-Forwarded-For): never
//     read a forwarding header from an untrusted peer, since any client
//     can send one. IPv6 clients are grouped by /64.
//   - Bearer, Header or Query for an API key (wrapped in Hashed, to keep
//     secrets out of the limiter), or FromContext (the user an
//     authentication middleware found) to limit what clients are, rather
//     than where they connect from; First to look in several places, and
//     to fall back to the address for anonymous requests.
//   - Route, with the middleware wrapping each route of a ServeMux, for one
//     limit per endpoint; Join(RemoteIP, Route()) for one per client and
//     endpoint.
//
// Exempt health checks and metrics scrapes (Config.ExemptPaths), and start
// a new limit in shadow mode (Config.Shadow) to see what it would refuse
// before it refuses anything.
//
// # Adaptive limits
//
// A Chain or a Decider may hold limits that learn from how requests went
// (package adaptive's, and a policy's adaptive_rate and
// adaptive_concurrency rules). For those requests the middleware
// captures the status the handler writes and reports the outcome through
// compose.Held.Finish when the handler returns: a panic, or a status that
// Config.Failure calls a failure (by default 429 and 500 and more), is a
// failure; anything else a success. Requests without such
// limits are served as they are, without the capture.
package httplimit
