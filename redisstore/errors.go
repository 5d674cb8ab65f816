package redisstore

import (
	"errors"
	"fmt"

	"github.com/admit-go/admit"
)

// Errors returned by this package, wrapped with %w where there is more to
// say: test them with errors.Is. Besides these, a key longer than
// Config.MaxKeyLength is an error wrapping admit.ErrKeyTooLong (nothing is
// sent to Redis), a call on a Store after Close (or on one of its
// limiters) one wrapping admit.ErrClosed, and a Config or an argument of a
// call outside its domain (a lease's duration, the layers of
// Store.AllowLayers) one wrapping admit.ErrInvalidConfig that says which.
var (
	// ErrStore reports that Redis could not decide: a connection failure,
	// a timeout, an error reply (a key of the wrong type, a missing slot),
	// or a malformed reply. The request was not decided; a failure policy
	// (package compose) chooses what happens instead.
	ErrStore = errors.New("redisstore: store failed")
)

// errInvalidArgument reports an argument of a call outside its domain: a
// lease's duration (Lease.ExtendFor, a lease set by admit serve's lease
// table), a lease record's name or leases, the layers of
// Store.AllowLayers.
var errInvalidArgument = fmt.Errorf("%w: redisstore: invalid argument", admit.ErrInvalidConfig)

// errClosed is the error of a call on a Store after Close.
var errClosed = fmt.Errorf("%w: redisstore: store closed", admit.ErrClosed)
