package transport

import (
	"context"
	"errors"
	"fmt"
)

// Errors returned by this package. They are wrapped with %w where a call
// has more to say, so test them with errors.Is.
var (
	// ErrWaitTooLong reports a request that would have to wait longer than
	// the Transport's maximum wait (Config.MaxWait) for its turn: for a token
	// of the rate limit, for the end of a pause the upstream asked for, or
	// both. The request is failed at once, without waiting or sending it.
	ErrWaitTooLong = errors.New("transport: the wait would exceed the maximum wait")

	// ErrDeadline reports a request whose wait would end after its
	// context's deadline; it is failed at once, without waiting or
	// sending it. It matches context.DeadlineExceeded under errors.Is.
	ErrDeadline = fmt.Errorf("transport: the wait would exceed the request's deadline: %w", context.DeadlineExceeded)

	// ErrPaused is wrapped, with ErrWaitTooLong or ErrDeadline, by the
	// error of a request refused because its host is paused: the host
	// answered a recent request with 429 or 503 and Retry-After, or said
	// in RateLimit or X-RateLimit-* fields that its quota is exhausted.
	ErrPaused = errors.New("transport: the host asked to wait")

	// ErrTooManyHosts reports a request to a new host when the Transport
	// already tracks Config.MaxHosts hosts, none of which can be forgotten
	// (each has a limit in use or a pause in force).
	ErrTooManyHosts = errors.New("transport: too many hosts")
)
