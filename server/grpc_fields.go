package server

// The IETF rate-limit fields (draft-ietf-httpapi-ratelimit-headers), as
// package httplimit writes them on HTTP responses, for Envoy's rate-limit
// service to hand to Envoy in response_headers_to_add: the same values a
// client of the gateway (httplimit) would see.
const (
	grpcFieldRateLimit       = "RateLimit"
	grpcFieldRateLimitPolicy = "RateLimit-Policy"
	grpcFieldRetryAfter      = "Retry-After"
)
