package compose

import (
	"errors"
	"fmt"

	"github.com/admit-go/admit"
)

// Errors returned by this package. Besides these, a construction refused
// (a nil limiter given to NewGuard, GuardSlots or Fallback, the zero
// Policy, no layers, an invalid layer, a GuardConfig field outside its
// domain) is an error wrapping admit.ErrInvalidConfig that says what is
// wrong, and a Refund or Reset that the limiter asked cannot do (it is not
// an admit.Refunder or admit.Resetter) is one wrapping
// errors.ErrUnsupported. A primary that did not answer within the Guard's
// timeout (GuardConfig.Timeout) is reported, as the Reason of the
// FallbackEvent when the timeout causes a switch, by an error that
// matches context.DeadlineExceeded and says "compose: the primary did not
// answer in time" and the timeout (a caller's own deadline is never
// reported so). They are wrapped with %w where a call has more to say, so
// test them with errors.Is.
var (
	// ErrNeedHeld reports a chain with Slots layers called without a Held
	// to record their slots in (see Chain.AllowKeys).
	ErrNeedHeld = errors.New("compose: a concurrency layer needs a Held")
)

// The refusals of a construction or of a chain's call, each returned
// from several places (wrapped with what is wrong).
var (
	// errNilLimiter reports a nil primary (NewGuard, GuardSlots) or a nil
	// local limiter (Fallback, FallbackSlots).
	errNilLimiter = fmt.Errorf("%w: compose: nil limiter", admit.ErrInvalidConfig)

	// errInvalidPolicy reports the zero Policy, which names no policy, or
	// a Policy for the other kind of limiter.
	errInvalidPolicy = fmt.Errorf("%w: compose: invalid policy", admit.ErrInvalidConfig)

	// errNoLayers reports a chain without layers.
	errNoLayers = fmt.Errorf("%w: compose: no layers", admit.ErrInvalidConfig)

	// errInvalidLayer reports a layer with neither or both of Limiter and
	// Slots, a layer that cannot be undone placed before another, or a
	// number of keys (requests, decisions) that is not the number of
	// layers.
	errInvalidLayer = fmt.Errorf("%w: compose: invalid layer", admit.ErrInvalidConfig)

	// errNotRefunder reports a refund asked of a Guard whose primary (or
	// Fallback's local limiter), which should take it, cannot give events
	// back: it is not a Refunder. All does not undo such a Guard, so it
	// must be the last layer of a chain.
	errNotRefunder = fmt.Errorf("%w: compose: the limiter cannot give events back", errors.ErrUnsupported)

	// errNotResetter reports a Reset of a Guard whose primary cannot
	// forget a key's state: it is not an admit.Resetter.
	errNotResetter = fmt.Errorf("%w: compose: the limiter cannot reset a key", errors.ErrUnsupported)
)
