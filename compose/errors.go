package compose

import (
	"context"
	"errors"
	"fmt"
)

// Errors returned by this package, besides admit.ErrInvalidConfig for a
// GuardConfig field outside its domain. They are wrapped with %w where a call
// has more to say, so test them with errors.Is.
var (
	// ErrNilLimiter reports a nil primary (NewGuard) or a nil local
	// limiter (Fallback).
	ErrNilLimiter = errors.New("compose: nil limiter")

	// ErrInvalidPolicy reports the zero Policy, which names no policy: pick
	// FailOpen, FailClosed or Fallback.
	ErrInvalidPolicy = errors.New("compose: invalid policy")

	// ErrTimeout reports a primary that did not answer within the Guard's
	// timeout (see GuardConfig.Timeout). It is the Reason of the FallbackEvent
	// when a timeout causes a switch. It matches context.DeadlineExceeded
	// under errors.Is.
	ErrTimeout = fmt.Errorf("compose: the primary did not answer in time: %w", context.DeadlineExceeded)
)

// Errors of All, Chain and Admit.
var (
	// ErrNoLayers reports a chain without layers.
	ErrNoLayers = errors.New("compose: no layers")

	// ErrInvalidLayer reports a layer with neither or both of Limiter and
	// Slots, a layer that cannot be undone placed before another, or a
	// number of keys that is not the number of layers.
	ErrInvalidLayer = errors.New("compose: invalid layer")

	// ErrNeedHeld reports a chain with Slots layers called without a Held
	// to record their slots in (see Chain.AllowKeys).
	ErrNeedHeld = errors.New("compose: a concurrency layer needs a Held")

	// ErrNotRefunder reports a refund asked of a Guard whose primary (or
	// Fallback's local limiter), which should take it, cannot give events
	// back: it is not a Refunder. All does not undo such a Guard, so it
	// must be the last layer of a chain.
	ErrNotRefunder = errors.New("compose: the limiter cannot give events back")
)
