package policy

// Prefetching (Rule.Prefetch): the limiter of a rate kept in a shared
// store wrapped in a prefetch.Limiter, inside the rule's failure policy;
// which engine closes it; and its counts for admit serve's metrics.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/prefetch"
)

// prefetched is a layer's prefetch.Limiter, with what the Guard around it
// and Engine.Reset use of the store's limiter: its Reset (the key's shared
// state; what blocks this instance holds stays), its health (a request
// admitted from a block says nothing of the store's) and its deny cache.
type prefetched struct {
	*prefetch.Limiter
	store  admit.KeyedLimiter
	owner  atomic.Pointer[Engine] // the engine whose Close closes it
	closed atomic.Bool
}

var (
	_ admit.Resetter       = (*prefetched)(nil)
	_ admit.HealthReporter = (*prefetched)(nil)
	_ admit.Cacher         = (*prefetched)(nil)
)

func (p *prefetched) Reset(ctx context.Context, key string) error {
	if r, ok := p.store.(admit.Resetter); ok {
		return r.Reset(ctx, key)
	}
	return fmt.Errorf("%w: policy: the store's limiter cannot reset a key", errors.ErrUnsupported)
}

func (p *prefetched) Healthy() bool {
	h, ok := p.store.(admit.HealthReporter)
	return !ok || h.Healthy()
}

// close closes the Limiter once.
func (p *prefetched) close(ctx context.Context) error {
	if p.closed.Swap(true) {
		return nil
	}
	return p.Limiter.Close(ctx)
}

// errNotShared and errNoPartial are the problems of a prefetch NewEngine
// finds, at the rule's prefetch field (see prefetchError).
var (
	errNotShared = errors.New("policy: prefetch without a shared store")
	errNoPartial = errors.New("policy: the store cannot prefetch")
)

// prefetchError is a problem of a rule's prefetch, reported at field.
type prefetchError struct {
	field string
	err   error
}

func (e *prefetchError) Error() string { return e.err.Error() }
func (e *prefetchError) Unwrap() error { return e.err }

// errorAt returns where an error of building what (a rule, or a domain's
// inline limits) is reported, at its field of src: prefetch for a
// prefetchError, else store; and its message, naming what when the field
// is the defaults' (which several rules may take).
func errorAt(src *source, err error, what string) (path string, pos Pos, msg string) {
	field := "store"
	var pe *prefetchError
	if errors.As(err, &pe) {
		field = pe.field
	}
	path, pos = src.at(field)
	msg = err.Error()
	if strings.HasPrefix(path, "defaults.") {
		msg = what + ": " + msg
	}
	return path, pos, msg
}

// prefetchStore checks that store st can prefetch, for field (prefetch or
// overrides.prefetch): that it is shared and that lim, one of its
// limiters, can grant part of a request (prefetch.Store).
func prefetchStore(lim admit.KeyedLimiter, st store, field string) (prefetch.Store, error) {
	if !st.shared {
		what := "the rule is"
		if field != "prefetch" {
			what = "inline limits are"
		}
		return nil, &prefetchError{field, fmt.Errorf("%w: %s kept in store %q, which is not shared: every check is local already; prefetch takes blocks of a limit a fleet shares", errNotShared, what, st.name)}
	}
	ps, ok := lim.(prefetch.Store)
	if !ok {
		return nil, &prefetchError{field, fmt.Errorf("%w: the limiters of store %q cannot grant part of a request (admit.PartialAllower), which taking a block needs", errNoPartial, st.name)}
	}
	return ps, nil
}

// canPrefetch checks that the inline limits of a domain, by alg in store
// st, can prefetch, on a limiter made for the purpose (which sends
// nothing to the store).
func (e *Engine) canPrefetch(alg admit.Algorithm, st store) error {
	lim, err := st.b.Rate(Spec{Name: e.o.prefix + "prefetch-check", Algorithm: alg, Limit: admit.PerSecond(1), Clock: e.o.clock})
	if err != nil {
		return &prefetchError{"overrides.prefetch", err}
	}
	_, err = prefetchStore(lim, st, "overrides.prefetch")
	return err
}

// prefetch wraps lim, the limiter of layer c under limit l in store st, in
// a prefetch.Limiter of blocks of at most n events (the burst's default
// for a negative n; at most the burst).
func (e *Engine) prefetch(c *clayer, lim admit.KeyedLimiter, l admit.Limit, st store, n int64) (admit.KeyedLimiter, error) {
	ps, err := prefetchStore(lim, st, "prefetch")
	if err != nil {
		return nil, err
	}
	maxBlock := min(max(n, 0), rateBurst(l)) // 0: the default
	if l.Rate == admit.Inf {
		maxBlock = 0 // nothing to take: every request goes to the store
	}
	pf, err := prefetch.New(prefetch.Config{
		Options:  admit.Options{Clock: e.o.clock, Name: e.o.prefix + c.label, Observer: e.o.obs},
		Store:    ps,
		MaxBlock: maxBlock,
		MaxKeys:  e.o.maxKeys,
	})
	if err != nil {
		return nil, &prefetchError{"prefetch", err}
	}
	c.pf = &prefetched{Limiter: pf, store: lim}
	return c.pf, nil
}

// closeTimeout bounds Engine.Close's wait for the prefetching limiters'
// fetches and the window blocks they give back.
const closeTimeout = 2 * time.Second

// eachPrefetch calls f with each prefetching limiter of e's layers, those
// of inline limits included, and the label of its layer.
func (e *Engine) eachPrefetch(f func(label string, p *prefetched)) {
	for _, c := range e.byPrint {
		if c.pf != nil {
			f(c.label, c.pf)
		}
	}
	for _, d := range e.domains {
		if m := d.ov.m.Load(); m != nil {
			for _, c := range *m {
				if c.pf != nil {
					f(c.label, c.pf)
				}
			}
		}
	}
}

// own makes e the owner of its prefetching limiters, those it took over
// from Config.Previous included: the engine whose Close closes them.
func (e *Engine) own() {
	e.eachPrefetch(func(_ string, p *prefetched) { p.owner.Store(e) })
}

// closePrefetch closes the prefetching limiters e owns; with unowned, also
// those no engine owns yet (of a NewEngine that failed).
func (e *Engine) closePrefetch(unowned bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	var errs []error
	e.eachPrefetch(func(label string, p *prefetched) {
		if o := p.owner.Load(); o == e || unowned && o == nil {
			if err := p.close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("policy: %s: %w", label, err))
			}
		}
	})
	return errors.Join(errs...)
}

// prefetchStatsOf visits the prefetching limiters of engine (a *Engine),
// for admit serve's metrics (see internal/enginehook).
func prefetchStatsOf(engine any, visit func(label string, s prefetch.Stats)) {
	e, ok := engine.(*Engine)
	if !ok || e == nil || e.closed.Load() {
		return
	}
	e.eachPrefetch(func(label string, p *prefetched) { visit(label, p.Stats()) })
}

// setInstances tells the prefetching limiters of engine (a *Engine) that
// n instances share their stores (see internal/enginehook).
func setInstances(engine any, n int) {
	e, ok := engine.(*Engine)
	if !ok || e == nil || e.closed.Load() {
		return
	}
	e.eachPrefetch(func(_ string, p *prefetched) { p.SetInstances(n) })
}
