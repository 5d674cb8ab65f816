package server

import (
	"errors"
	"fmt"

	"github.com/admit-go/admit"
)

// The errors of the package, wrapped with %w where there is more to say:
// test them with errors.Is. Besides these, a Config that Validate refuses
// (a *ConfigError names the field) or that New, NewGateway, NewAPI or
// RegisterGRPC cannot use, a policy path that names no policy file (a
// directory without *.yaml or *.yml files) among them, is an error
// wrapping admit.ErrInvalidConfig that says what is wrong; a Start,
// Reload or Run after Close or Shutdown is one wrapping admit.ErrClosed.
var (
	// ErrStarted reports a second Start of a Server.
	ErrStarted = errors.New("server: already started")

	// ErrShutdownTimeout reports a graceful shutdown whose requests in
	// flight did not finish within the deadline: they were cut off.
	ErrShutdownTimeout = errors.New("server: shutdown deadline passed with requests in flight")
)

// errInvalidConfig reports a Config that Validate refuses or that New,
// NewGateway, NewAPI or RegisterGRPC cannot use; errNoPolicyFiles a
// policy path that names no policy file.
var (
	errInvalidConfig = fmt.Errorf("%w: server", admit.ErrInvalidConfig)
	errNoPolicyFiles = fmt.Errorf("%w: server: no policy files", admit.ErrInvalidConfig)
)

// errInvalidRedisURL reports a Redis URL (Config.Redis) that cannot be
// used; errInvalidDescriptor a gateway descriptor (Config.Descriptors)
// that does not parse. Both reach callers inside a *ConfigError.
var (
	errInvalidRedisURL   = errors.New("invalid Redis URL")
	errInvalidDescriptor = errors.New("invalid gateway descriptor")
)

// errClosed reports a Start, Reload or Run of a Server after Close or
// Shutdown.
var errClosed = fmt.Errorf("%w: server: closed", admit.ErrClosed)
