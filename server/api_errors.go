package server

import "errors"

// Errors of the HTTP API, its lease table and its readiness check. They
// are wrapped with %w where there is more to say: test them with
// errors.Is.
var (
	// ErrInvalidAPIOption reports an option of NewAPI, NewLeases or
	// NewReadiness given an invalid value (a negative cap, a status that
	// is neither 200 nor an error status, a nil probe...).
	ErrInvalidAPIOption = errors.New("server: invalid option")

	// ErrNoEngine reports a request decided while the EngineSource holds
	// no engine (no policy loaded yet). The HTTP API answers it with 503
	// and /readyz reports it.
	ErrNoEngine = errors.New("server: no policy loaded")

	// ErrLeaseNotFound reports a lease id the lease table does not hold:
	// never issued, released already, or expired (and its slots given
	// back).
	ErrLeaseNotFound = errors.New("server: lease not found")

	// ErrTooManyLeases reports a lease table holding its maximum number of
	// leases (see WithMaxLeases): the request is refused before it is
	// checked, so it consumes nothing.
	ErrTooManyLeases = errors.New("server: lease table full")

	// ErrInvalidTTL reports a lease TTL outside (0, WithLeaseTTL's max].
	ErrInvalidTTL = errors.New("server: invalid lease TTL")

	// ErrLeaseStore reports a release or extension of a lease holding
	// slots kept in Redis that Redis could not be told of (it failed or
	// did not answer in time): the lease is as it was, here and in Redis,
	// and the call may be retried.
	ErrLeaseStore = errors.New("server: the store keeping the lease did not answer")

	// ErrLeasesClosed reports a use of a lease table after Close.
	ErrLeasesClosed = errors.New("server: lease table closed")

	// ErrNotReady reports a failed readiness check (see Readiness.Check):
	// no policy loaded, or a probe failing without a failure policy in
	// force.
	ErrNotReady = errors.New("server: not ready")
)
