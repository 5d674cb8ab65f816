package transport

import "errors"

// ErrPaused is wrapped, with admit.ErrWaitTooLong or admit.ErrDeadline, by
// the error of a request refused because its host is paused: the host
// answered a recent request with 429 or 503 and Retry-After, or said in
// RateLimit or X-RateLimit-* fields that its quota is exhausted.
//
// The other errors of a Transport wrap the root package's sentinels, with
// a message naming this package and the host: admit.ErrWaitTooLong (a
// wait past Config.MaxWait), admit.ErrDeadline (a wait past the request's
// deadline; it matches context.DeadlineExceeded) and admit.ErrTooManyKeys
// (a new host beyond Config.MaxHosts). Test them with errors.Is.
var ErrPaused = errors.New("transport: the host asked to wait")
