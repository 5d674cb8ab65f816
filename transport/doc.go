// Package transport keeps an HTTP client within the limits of the services
// it calls: Transport is an http.RoundTripper that waits for a token of
// its rate limits before each request, honours the pauses the services ask
// for, and can retry requests refused with 429 or 503 within a retry
// budget, so that a limit never becomes a retry storm.
//
//	lim, _ := admit.NewGCRA(admit.PerSecond(10))
//	tr, _ := transport.New(nil, transport.Config{Limiter: lim, Retries: 2})
//	client := &http.Client{Transport: tr}
//
// Waits are bounded: a request whose wait (for tokens and for its host's
// pause) would pass Config.MaxWait (default 10 seconds) or its context's
// deadline fails at once, with an error wrapping admit.ErrWaitTooLong or
// admit.ErrDeadline, instead of waiting in vain; one whose context ends
// while it waits fails with the context's error and gives its tokens back.
//
// A response pauses its host when it says the host's limit is reached:
//
//   - a 429 or 503 with Retry-After, in delta-seconds ("120") or as an
//     HTTP-date;
//   - the IETF RateLimit field with a policy that has no quota left, for t
//     seconds (`RateLimit: "default";r=0;t=30`) or, without t, for the
//     window w of the RateLimit-Policy of the same name;
//   - X-RateLimit-Remaining: 0 (or RateLimit-Remaining: 0, of the older
//     drafts) with X-RateLimit-Reset (RateLimit-Reset) in delta-seconds, or
//     in Unix seconds for values from 10^9 on.
//
// Dates and Unix times are read against the response's Date field, so
// clock skew between client and server does not matter; values that do
// not parse are ignored, and pauses are capped (Config.MaxPause, default 5
// minutes), so a garbled or hostile header cannot stop a client for long.
// Later requests to the paused host wait for the end of the pause, or fail
// fast by the bounded-wait rule.
//
// # Which one should I use?
//
//   - Config.Limiter with an admit.GCRA (or admit.TokenBucket) when one quota
//     covers every call: a paid API with a per-account rate, a dependency
//     you promised not to overload. Set its rate a little under the
//     upstream's.
//   - Config.HostLimit when the client calls many hosts, each with its own
//     limit (webhook delivery, crawling, per-region endpoints): each host
//     gets its own GCRA, and a slow host never holds up the others.
//   - Neither, when the upstream tells its limits: the pauses alone keep
//     the client from sending requests that would be refused.
//   - Config.Retries only for calls worth retrying and safe to repeat; keep n
//     small (1 or 2). The retry budget (Config.RetryRatio, RetryMin) caps retries at a
//     share of the traffic, so an upstream that refuses most requests sees
//     at most that much more load, not a multiple of it.
//
// For limits on the requests a server receives, see package httplimit.
package transport
