package redisstore

import (
	"errors"

	"github.com/admit-go/admit"
)

// Errors returned by this package, wrapped with %w where there is more to
// say: test them with errors.Is.
var (
	// ErrStore reports that Redis could not decide: a connection failure,
	// a timeout, an error reply (a key of the wrong type, a missing slot),
	// or a malformed reply. The request was not decided; a failure policy
	// (package compose) chooses what happens instead.
	ErrStore = errors.New("redisstore: store failed")

	// ErrClosed reports a check on a Store after Close.
	ErrClosed = errors.New("redisstore: store closed")

	// ErrKeyTooLong reports a key longer than the maximum (see
	// Config.MaxKeyLength). Nothing is sent to Redis. It is
	// admit.ErrKeyTooLong.
	ErrKeyTooLong = admit.ErrKeyTooLong

	// ErrInvalidArgument reports an argument of a call outside its
	// domain: a lease's duration (Lease.ExtendFor, compose.WithLeaseTTL),
	// a lease record's name or leases (Store.SaveLeases...), the layers of
	// Store.AllowLayers. (A Config outside its domain is an error wrapping
	// admit.ErrInvalidConfig.)
	ErrInvalidArgument = errors.New("redisstore: invalid argument")
)
