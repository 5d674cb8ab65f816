package server

import "errors"

// Errors of the HTTP API, its lease table and its readiness check,
// answered as HTTP statuses and gRPC codes. They are wrapped with %w where there is more to say: test them with
// errors.Is.
var (

	// errNoEngine reports a request decided while the EngineSource holds
	// no engine (no policy loaded yet). The HTTP API answers it with 503
	// and /readyz reports it.
	errNoEngine = errors.New("server: no policy loaded")

	// errLeaseNotFound reports a lease id the lease table does not hold:
	// never issued, released already, or expired (and its slots given
	// back).
	errLeaseNotFound = errors.New("server: lease not found")

	// errTooManyLeases reports a lease table holding its maximum number of
	// leases (see WithMaxLeases): the request is refused before it is
	// checked, so it consumes nothing.
	errTooManyLeases = errors.New("server: lease table full")

	// errInvalidTTL reports a lease TTL outside (0, WithLeaseTTL's max].
	errInvalidTTL = errors.New("server: invalid lease TTL")

	// errLeaseStore reports a release or extension of a lease holding
	// slots kept in Redis that Redis could not be told of (it failed or
	// did not answer in time): the lease is as it was, here and in Redis,
	// and the call may be retried.
	errLeaseStore = errors.New("server: the store keeping the lease did not answer")

	// errLeasesClosed reports a use of a lease table after Close.
	errLeasesClosed = errors.New("server: lease table closed")

	// errNotReady reports a failed readiness check (see Readiness.Check):
	// no policy loaded, or a probe failing without a failure policy in
	// force.
	errNotReady = errors.New("server: not ready")
)
