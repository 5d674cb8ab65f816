package admit

// Option configures a limiter. The zero set of options gives the defaults
// documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	clock Clock
	name  string
}

func buildOptions(opts []Option) options {
	o := options{clock: SystemClock}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o
}

// WithClock sets the clock used by the blocking calls (WaitN, the Pacer) and
// by the shorthands that read the current time (Allow, Decide, Reserve...).
// The default is SystemClock.
func WithClock(c Clock) interface {
	Option
	PacerOption
} {
	return clockOption{c}
}

type clockOption struct{ c Clock }

func (o clockOption) apply(opts *options) {
	if o.c != nil {
		opts.clock = o.c
	}
}

func (o clockOption) applyPacer(opts *pacerOptions) {
	if o.c != nil {
		opts.clock = o.c
	}
}

// WithName names the limiter; the name appears as Decision.Rule. The
// default is no name.
func WithName(name string) Option { return nameOption(name) }

type nameOption string

func (o nameOption) apply(opts *options) { opts.name = string(o) }

// Options are the settings every component of this module shares: the
// keyed, Redis, quota and concurrency limiters, the failure policies, the
// adaptive limits and lanes, the middleware. Each package's Config embeds
// them, so they are documented once, here. The zero Options are the
// defaults: the system clock, no name, no observer.
//
// The single-key limiters of this package take the same settings as
// options (WithClock, WithName); they call no Observer.
type Options struct {
	// Clock is the clock of the decisions that do not give an instant
	// (Request.At zero), of waits and of timeouts. Nil means SystemClock;
	// admittest.ManualClock makes tests exact.
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
