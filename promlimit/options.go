package promlimit

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/admit-go/admit"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures an Observer (see New). The zero Config is valid: the
// namespace "admit", no const labels, the default buckets, no key label,
// 10,000 series per metric.
type Config struct {
	// Namespace is the first component of the metrics' names: "shop"
	// gives shop_decisions_total and so on. Two Observers on one registry
	// need different namespaces, or different values of the same const
	// labels (see ConstLabels). Empty means "admit"; otherwise it must be
	// a name of letters, digits and underscores that does not start with
	// a digit.
	Namespace string

	// ConstLabels are labels with fixed values added to every series,
	// such as {"component": "gateway"}. Observers of one namespace on one
	// registry must have the same const label names (Prometheus wants one
	// set of label names per metric name), with different values. The map
	// is copied. Nil means none. Each name must be a label name of
	// letters, digits and underscores that starts with neither a digit
	// nor "__" and is none of the Observer's own labels (limiter, rule,
	// kind, decision, key, op, reason, stat, le); each value must be valid
	// UTF-8.
	ConstLabels prometheus.Labels

	// Buckets are the upper bounds, in seconds, of the buckets of
	// admit_store_duration_seconds (a bucket up to +Inf is always added).
	// The slice is copied. Empty means 100µs to 1s, about three per
	// factor of ten (0.0001, 0.00025, 0.0005, 0.001, ... 0.5, 1), which
	// resolves a Redis round trip on a local network (a few hundred µs)
	// as well as one across zones or under load (a few ms) and a store
	// that is timing out. The bounds must be finite, positive and
	// strictly increasing.
	Buckets []float64

	// KeyLabel gives admit_decisions_total a key label: the key each
	// decision was about (DecisionEvent.Key). Leave it false unless the
	// keys are few and fixed (a dozen tenants, a handful of backends):
	// every key is a series of its own, each costing memory in this
	// process and, more, in every Prometheus server that scrapes it, for
	// as long as it is kept; keys that are client addresses, users or API
	// keys number in the millions and would turn the metrics into a
	// denial of service of the monitoring. The cap of MaxSeries still
	// applies: keys beyond it are counted under key="other".
	KeyLabel bool

	// MaxSeries caps, for each metric (the admit_store_ metrics
	// together), the label combinations that get a series of their own
	// (for admit_decisions_total: the combinations of limiter, rule, kind
	// and decision, and key under KeyLabel). Label values come from
	// configuration (limiters' names, rules), but a program that puts
	// request data into them (a rule per client, say) would otherwise
	// grow the metrics, and this process's memory, without bound. Beyond
	// the cap a new combination is counted under "other": see Observer
	// for how. 0 means 10,000; it must not be negative.
	MaxSeries int
}

// The defaults of Config's fields.
const (
	defaultNamespace = "admit"
	defaultMaxSeries = 10000
)

// defaultBuckets returns the default Config.Buckets, a new slice on each
// call.
func defaultBuckets() []float64 {
	return []float64{
		0.0001, 0.00025, 0.0005,
		0.001, 0.0025, 0.005,
		0.01, 0.025, 0.05,
		0.1, 0.25, 0.5,
		1,
	}
}

// options are a valid Config with its defaults filled in.
type options struct {
	namespace   string
	constLabels prometheus.Labels
	buckets     []float64
	keyLabel    bool
	maxSeries   int
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: promlimit: "+format, append([]any{admit.ErrInvalidConfig}, args...)...)
}

// legacyName is a metric or label name every version of Prometheus and its
// tools accept (colons are for recording rules).
var legacyName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ownLabels are the variable labels of the Observer's metrics, and "le",
// which histograms use.
var ownLabels = []string{"limiter", "rule", "kind", "decision", "key", "op", "reason", "stat", "le"}

// resolve checks cfg and returns its options, defaults filled in.
func (cfg *Config) resolve() (options, error) {
	o := options{
		namespace: cfg.Namespace,
		keyLabel:  cfg.KeyLabel,
		maxSeries: cfg.MaxSeries,
	}
	if o.namespace == "" {
		o.namespace = defaultNamespace
	} else if !legacyName.MatchString(o.namespace) {
		return o, invalid("Namespace %q: want letters, digits and '_', not starting with a digit", o.namespace)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.ConstLabels)) {
		switch value := cfg.ConstLabels[name]; {
		case !legacyName.MatchString(name) || strings.HasPrefix(name, "__"):
			return o, invalid("ConstLabels: label name %q: want letters, digits and '_', starting with neither a digit nor \"__\"", name)
		case slices.Contains(ownLabels, name):
			return o, invalid("ConstLabels: label name %q is one of the Observer's own labels %q", name, ownLabels)
		case !utf8.ValidString(value):
			return o, invalid("ConstLabels: the value of label %q is not valid UTF-8", name)
		}
	}
	o.constLabels = maps.Clone(cfg.ConstLabels)
	if len(cfg.Buckets) == 0 {
		o.buckets = defaultBuckets()
	} else {
		for i, b := range cfg.Buckets {
			if math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 {
				return o, invalid("Buckets %v: bound %v: want a finite, positive number of seconds", cfg.Buckets, b)
			}
			if i > 0 && b <= cfg.Buckets[i-1] {
				return o, invalid("Buckets %v: want strictly increasing bounds", cfg.Buckets)
			}
		}
		o.buckets = slices.Clone(cfg.Buckets)
	}
	switch {
	case o.maxSeries < 0:
		return o, invalid("MaxSeries %d: want >= 0", o.maxSeries)
	case o.maxSeries == 0:
		o.maxSeries = defaultMaxSeries
	}
	return o, nil
}
