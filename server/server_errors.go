package server

import "errors"

// Errors of the Server, the Gateway and their helpers, wrapped with %w
// where there is more to say: test them with errors.Is.
var (
	// ErrInvalidOption reports an option of New or NewGateway given an
	// invalid value, or options that contradict each other.
	ErrInvalidOption = errors.New("server: invalid option")

	// ErrInvalidRedisURL reports a Redis URL NewRedisClient cannot use.
	ErrInvalidRedisURL = errors.New("server: invalid Redis URL")

	// ErrInvalidDescriptor reports a gateway descriptor specification
	// ParseDescriptor cannot read.
	ErrInvalidDescriptor = errors.New("server: invalid gateway descriptor")

	// ErrNoPolicyFiles reports a policy path that names no policy file (a
	// directory without *.yaml or *.yml files).
	ErrNoPolicyFiles = errors.New("server: no policy files")

	// ErrStarted reports a second Start of a Server.
	ErrStarted = errors.New("server: already started")

	// ErrClosed reports a Start, Reload or Run of a Server after Close or
	// Shutdown.
	ErrClosed = errors.New("server: closed")

	// ErrShutdownTimeout reports a graceful shutdown whose requests in
	// flight did not finish within the deadline: they were cut off.
	ErrShutdownTimeout = errors.New("server: shutdown deadline passed with requests in flight")
)
