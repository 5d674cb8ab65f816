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
	// WithMaxKeyLength). Nothing is sent to Redis. It is
	// admit.ErrKeyTooLong.
	ErrKeyTooLong = admit.ErrKeyTooLong

	// ErrInvalidOption reports an option or name outside its domain.
	ErrInvalidOption = errors.New("redisstore: invalid option")
)
