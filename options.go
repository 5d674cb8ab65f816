package admit

import "fmt"

// Options are the settings every component of this module shares: the
// keyed, Redis, quota and concurrency limiters, the failure policies, the
// adaptive limits and lanes, the middleware. Each package's Config embeds
// them, so they are documented once, here. The zero Options are the
// defaults: the system clock, no name, no observer.
//
// The single-key limiters of this package (New, NewGCRA, NewTokenBucket,
// NewLeakyBucket, NewFixedWindow, NewSlidingWindow, NewSlidingLog) take
// them as an optional last argument, as in NewGCRA(l, Options{Clock: c}).
// They use the Clock and the Name and call no Observer (so that a decision
// stays one atomic operation): a non-nil Observer is an error wrapping
// ErrInvalidConfig, as is more than one Options. A Pacer takes them in its
// PacerConfig.
type Options struct {
	// Clock is the clock of the decisions that do not give an instant
	// (Request.At zero; the shorthands of a single-key limiter that take
	// no instant, such as Allow), of waits (WaitN, the Pacer) and of
	// timeouts. Nil means SystemClock; admittest.ManualClock makes tests
	// exact.
	Clock Clock

	// Name names the component: it is the Rule of the decisions it makes
	// (unless a layer names them) and the limiter of its events. Empty
	// means no name.
	Name string

	// Observer is told of decisions, evictions, store calls and failure
	// policy switches (see Observer). Nil means none. A component with an
	// observer copies the keys it reports, since an observer may keep
	// them.
	Observer Observer
}

// options are the settings of a single-key limiter, defaults filled in.
type options struct {
	clock Clock
	name  string
}

// buildOptions reads the optional Options given to the constructor fn of
// a single-key limiter.
func buildOptions(fn string, opts []Options) (options, error) {
	o := options{clock: SystemClock}
	if len(opts) == 0 {
		return o, nil
	}
	if err := checkOptions(fn, len(opts)); err != nil {
		return o, err
	}
	if opts[0].Observer != nil {
		return o, fmt.Errorf("%w: %s: Options.Observer: the single-key limiters call no Observer (the keyed limiters of package keyed do)", ErrInvalidConfig, fn)
	}
	if opts[0].Clock != nil {
		o.clock = opts[0].Clock
	}
	o.name = opts[0].Name
	return o, nil
}

// checkOptions refuses more than one settings value given to the
// constructor fn.
func checkOptions(fn string, n int) error {
	if n > 1 {
		return fmt.Errorf("%w: %s: %d settings values, want at most one", ErrInvalidConfig, fn, n)
	}
	return nil
}
