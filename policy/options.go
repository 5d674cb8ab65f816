package policy

import (
	"fmt"
	"log/slog"
	"maps"
	"reflect"

	"github.com/admit-go/admit"
	optdefaults "github.com/admit-go/admit/internal/defaults"
)

// Config configures an Engine. Backends is required in practice: the zero
// Config gives the engine no store, so that only rules limiting nothing
// can be enforced (give at least StoreLocal). Every other zero field is
// the default stated in its comment.
type Config struct {
	// Options are the clock and observer (see admit.Options). The clock
	// is that of the limiters the backends build (Spec.Clock: those kept
	// in memory; a shared store decides on its own clock), of adaptive
	// limits and lanes and of the failure policies' breakers:
	// admittest.ManualClock decides at explicit instants in tests. The
	// observer is that of every limiter the engine builds and of their
	// failure policies; with one, keys are allocated strings (an
	// observer may keep them), without, a check of limiters kept in
	// memory allocates nothing. Name is not used: each limiter is named
	// after its rule (see KeyPrefix).
	admit.Options

	// Backends are the engine's stores, by name: the rules whose store
	// (Rule.Store) is a name keep their state in its Backend. StoreLocal
	// (policy/backends.Memory) must be given for the rules kept in
	// memory, which are those of this package's YAML format without a
	// store, adaptive limits and lanes, and the local limiters of
	// Fallback failure policies; policy/backends.Stores gives the stores
	// of admit serve. A name is made of lower-case letters, digits, '-'
	// and '_', starting with a letter (see Rule.Store), and a Backend is
	// not nil; otherwise NewEngine fails. The engine copies the map and
	// does not own the backends: closing it leaves them open. A rule
	// naming a store that is not here is an Errors entry at its store
	// field, wrapping ErrNoStore.
	Backends map[string]Backend

	// DefaultStore names the store of the rules that name none
	// (Rule.Store empty: the rules of envoyproxy/ratelimit's files, and
	// inline limits unless a domain's Override names a store): a shared
	// store when the engine has one, so that a fleet enforces one limit.
	// Empty means StoreLocal.
	DefaultStore string

	// Logger is told of the failure policies' switches (see
	// compose.GuardConfig.Logger). Nil logs nothing.
	Logger *slog.Logger

	// KeyPrefix is put in front of the name of every limiter the engine
	// builds (Spec.Name), and so in the keys its rules have in a shared
	// store, so that engines sharing a Redis with rules of the same names
	// keep apart. Empty means none; it is at most 256 bytes.
	KeyPrefix string

	// Previous is the engine of the policy this one replaces (a reload),
	// whose limiters it takes over: each limiter whose definition did not
	// change (same rule name and tier, same limit, algorithm, store,
	// failure policy, prefetch) is reused with its state (a prefetching
	// one with its blocks, then closed by this engine's Close, not
	// Previous's), so a reload neither
	// refills the keys of unchanged rules nor forgets the slots in
	// flight; the others start afresh. Limiters are reused only if both
	// engines have the same stores (the same backends by the same names,
	// and the same default), clock, observer, logger, key prefix and
	// MaxKeys. Previous keeps working until it is closed, sharing the
	// reused limiters. Nil reuses nothing.
	Previous *Engine

	// Shadow puts every rule in shadow mode (envoyproxy/ratelimit's
	// global SHADOW_MODE): the engine decides, counts and reports, and
	// never refuses.
	Shadow bool

	// MaxKeys caps the keys each limiter kept in memory holds (see
	// keyed.Config.MaxKeys, quota.Config.MaxKeys,
	// concurrency.Config.MaxKeys), and the keys each rule's adaptive limit
	// or lanes hold (a new key beyond it, when none is idle, is refused
	// with an error wrapping admit.ErrTooManyKeys). 0 means each package's
	// default, and 10,000 for adaptive limits and lanes; a negative value
	// is an error.
	MaxKeys int

	// MaxOverrides caps the distinct inline limits (Descriptor.Limit) the
	// engine builds limiters for, per domain: a request bringing one more
	// is refused with an error wrapping admit.ErrTooManyKeys ("policy: too
	// many distinct inline limits"). Inline limits come from a proxy's
	// configuration, so they are few; the cap keeps a client that invents
	// them from exhausting memory. 0 means 1024; a negative value means
	// none: every inline limit is refused.
	MaxOverrides int

	// RetryJitter spreads the retry time of each refusal Check reports
	// over [t, t+j] (see admit.Jitter), so that the clients a window or
	// quota reset releases do not come back as one herd: the Result's
	// Decision and the Status of the descriptor that refused get the same
	// jittered RetryAfter, and a ResetAfter of at least it; never earlier
	// than the exact one. It changes what refusals say, not what the
	// limiters count. The zero value is off (admit serve turns it on); a
	// Fraction outside [0, 1] or a negative Max is an error.
	RetryJitter admit.Jitter

	// OnRefused, if not nil, is called by each Check that refuses its
	// request (not by one that fails with an error), on the caller's
	// goroutine, with the refusal as the Result reports it (RetryJitter
	// applied): admit serve records the retry times it gives with it. It
	// must be quick and safe for concurrent use. The default is nil.
	OnRefused func(admit.Decision)
}

// The defaults of Config's fields.
const (
	defaultMaxOverrides    = 1024
	defaultMaxAdaptiveKeys = 10_000
)

// options are a Config checked, with its defaults filled in.
type options struct {
	backends     map[string]Backend
	defStore     string
	clock        admit.Clock
	obs          admit.Observer
	log          *slog.Logger
	prefix       string
	prev         *Engine
	shadow       bool
	maxKeys      int
	maxOverrides int
	jitter       admit.Jitter
	onRefused    func(admit.Decision)
}

// options checks cfg and fills in its defaults. The errors wrap
// admit.ErrInvalidConfig and name the field.
func (cfg *Config) options() (options, error) {
	o := options{
		backends:     maps.Clone(cfg.Backends),
		defStore:     cfg.DefaultStore,
		clock:        optdefaults.Clock(cfg.Options),
		obs:          cfg.Observer,
		log:          cfg.Logger,
		prefix:       cfg.KeyPrefix,
		prev:         cfg.Previous,
		shadow:       cfg.Shadow,
		maxKeys:      cfg.MaxKeys,
		maxOverrides: cfg.MaxOverrides,
		jitter:       cfg.RetryJitter,
		onRefused:    cfg.OnRefused,
	}
	for _, name := range sortedKeys(cfg.Backends) {
		if !validStoreName(name) {
			return o, invalid("Backends[%q]: a store name is lower-case letters, digits, '-' and '_', starting with a letter", truncate(name))
		}
		if cfg.Backends[name] == nil {
			return o, invalid("Backends[%q] is nil", name)
		}
	}
	if o.backends == nil {
		o.backends = map[string]Backend{}
	}
	switch {
	case o.defStore == "":
		o.defStore = StoreLocal
	case !validStoreName(o.defStore):
		return o, invalid("DefaultStore %q: a store name is lower-case letters, digits, '-' and '_', starting with a letter", truncate(o.defStore))
	}
	if len(o.prefix) > maxNameLength {
		return o, invalid("KeyPrefix: %d bytes, the maximum is %d", len(o.prefix), maxNameLength)
	}
	if p := optdefaults.JitterProblem(o.jitter); p != "" {
		return o, invalid("RetryJitter: %s", p)
	}
	if o.maxKeys < 0 {
		return o, invalid("MaxKeys %d: want >= 0", o.maxKeys)
	}
	switch {
	case o.maxOverrides == 0:
		o.maxOverrides = defaultMaxOverrides
	case o.maxOverrides < 0:
		o.maxOverrides = 0
	}
	return o, nil
}

// invalid returns an error wrapping admit.ErrInvalidConfig about a field
// of Config.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: policy: "+format, append([]any{admit.ErrInvalidConfig}, args...)...)
}

// compatible reports whether limiters built under o may serve an engine
// built under p.
func (o *options) compatible(p *options) bool {
	if len(o.backends) != len(p.backends) || o.defStore != p.defStore {
		return false
	}
	for name, b := range o.backends {
		if !same(b, p.backends[name]) {
			return false
		}
	}
	return same(o.clock, p.clock) && same(o.obs, p.obs) && o.prefix == p.prefix && o.maxKeys == p.maxKeys && o.log == p.log
}

// same reports whether two interface values are identical, without
// panicking on values of types that cannot be compared.
func same(a, b any) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || !ta.Comparable() {
		return false
	}
	return a == b
}
