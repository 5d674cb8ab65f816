package promlimit

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	// DefaultNamespace is the default first component of the metrics'
	// names (see WithNamespace).
	DefaultNamespace = "admit"
	// DefaultMaxSeries is the default cap on the label combinations of
	// each metric (see WithMaxSeries).
	DefaultMaxSeries = 10000
)

// DefaultBuckets returns the default buckets of
// admit_store_duration_seconds, in seconds: 100µs to 1s, about three per
// factor of ten, which resolves a Redis round trip on a local network
// (a few hundred µs) as well as one across zones or under load (a few ms)
// and a store that is timing out. It returns a new slice on each call.
func DefaultBuckets() []float64 {
	return []float64{
		0.0001, 0.00025, 0.0005,
		0.001, 0.0025, 0.005,
		0.01, 0.025, 0.05,
		0.1, 0.25, 0.5,
		1,
	}
}

// Option configures an Observer (see New). The zero set of options gives
// the defaults documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	namespace   string
	constLabels prometheus.Labels
	buckets     []float64
	keyLabel    bool
	maxSeries   int
	err         error
}

func defaultOptions() options {
	return options{
		namespace: DefaultNamespace,
		buckets:   DefaultBuckets(),
		maxSeries: DefaultMaxSeries,
	}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func (o *options) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// legacyName is a metric or label name every version of Prometheus and its
// tools accept (colons are for recording rules).
var legacyName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// WithNamespace sets the first component of the metrics' names:
// WithNamespace("shop") gives shop_decisions_total and so on. Two Observers
// on one registry need different namespaces, or different values of the
// same const labels (see WithConstLabels). The default is DefaultNamespace ("admit"); ns must
// be a name of letters, digits and underscores that does not start with a
// digit.
func WithNamespace(ns string) Option {
	return optionFunc(func(o *options) {
		if !legacyName.MatchString(ns) {
			o.fail("WithNamespace(%q): want letters, digits and '_', not starting with a digit", ns)
			return
		}
		o.namespace = ns
	})
}

// WithConstLabels adds labels with fixed values to every series, such as
// {"component": "gateway"}. Observers of one namespace on one registry
// must have the same const label names (Prometheus wants one set of label
// names per metric name), with different values. The map is copied. The
// default is none. Each
// name must be a label name of letters, digits and underscores that starts
// with neither a digit nor "__" and is none of the Observer's own labels
// (limiter, rule, kind, decision, key, op, reason, le); each value must be
// valid UTF-8.
func WithConstLabels(labels prometheus.Labels) Option {
	return optionFunc(func(o *options) {
		for _, name := range slices.Sorted(maps.Keys(labels)) {
			switch value := labels[name]; {
			case !legacyName.MatchString(name) || strings.HasPrefix(name, "__"):
				o.fail("WithConstLabels: label name %q: want letters, digits and '_', starting with neither a digit nor \"__\"", name)
				return
			case slices.Contains(ownLabels, name):
				o.fail("WithConstLabels: label name %q is one of the Observer's own labels %q", name, ownLabels)
				return
			case !utf8.ValidString(value):
				o.fail("WithConstLabels: the value of label %q is not valid UTF-8", name)
				return
			}
		}
		o.constLabels = maps.Clone(labels)
	})
}

// ownLabels are the variable labels of the Observer's metrics, and "le",
// which histograms use.
var ownLabels = []string{"limiter", "rule", "kind", "decision", "key", "op", "reason", "le"}

// WithBuckets sets the upper bounds, in seconds, of the buckets of
// admit_store_duration_seconds (a bucket up to +Inf is always added). The
// slice is copied. The default is DefaultBuckets(): 100µs to 1s. The
// bounds must be at least one, finite, positive and strictly increasing.
func WithBuckets(bounds ...float64) Option {
	return optionFunc(func(o *options) {
		if len(bounds) == 0 {
			o.fail("WithBuckets(): want at least one bucket")
			return
		}
		for i, b := range bounds {
			if math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 {
				o.fail("WithBuckets(%v): bound %v: want a finite, positive number of seconds", bounds, b)
				return
			}
			if i > 0 && b <= bounds[i-1] {
				o.fail("WithBuckets(%v): want strictly increasing bounds", bounds)
				return
			}
		}
		o.buckets = slices.Clone(bounds)
	})
}

// WithKeyLabel sets whether admit_decisions_total has a key label: the key
// each decision was about (DecisionEvent.Key). The default is false, and
// should stay so unless the keys are few and fixed (a dozen tenants, a
// handful of backends): every key is a series of its own, each costing
// memory in this process and, more, in every Prometheus server that
// scrapes it, for as long as it is kept; keys that are client addresses,
// users or API keys number in the millions and would turn the metrics
// into a denial of service of the monitoring. The cap of WithMaxSeries
// still applies: keys beyond it are counted under key="other".
func WithKeyLabel(on bool) Option {
	return optionFunc(func(o *options) { o.keyLabel = on })
}

// WithMaxSeries caps, for each metric (the admit_store_ metrics together),
// the label combinations that get a
// series of their own (for admit_decisions_total: the combinations of
// limiter, rule, kind and decision, and key under WithKeyLabel). Label
// values come from configuration (limiters' names, rules), but a program
// that puts request data into them (a rule per client, say) would
// otherwise grow the metrics, and this process's memory, without bound.
// Beyond the cap a new combination is counted under "other": see Observer
// for how. The default is DefaultMaxSeries (10,000); n must be positive.
func WithMaxSeries(n int) Option {
	return optionFunc(func(o *options) {
		if n < 1 {
			o.fail("WithMaxSeries(%d): want a positive number of series", n)
			return
		}
		o.maxSeries = n
	})
}
