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
