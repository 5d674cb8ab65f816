package redisstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/admit-go/admit"
)

const (
	// DefaultPrefix is the default prefix of every Redis key: the project
	// and the version of the key layout.
	DefaultPrefix = "admit:v1:"
	// DefaultPipelines is the default number of pipelines in flight at
	// once (see WithPipelines).
	DefaultPipelines = 4
	// DefaultMaxBatch is the default largest number of checks sent in one
	// pipeline (see WithBatch).
	DefaultMaxBatch = 256
	// DefaultDenyCacheKeys is the default capacity of the deny cache (see
	// WithDenyCache).
	DefaultDenyCacheKeys = 1 << 16
	// DefaultTimeout is the default bound on one pipeline's round trip (see
	// WithTimeout).
	DefaultTimeout = time.Second
	// DefaultMaxKeyLength is the default maximum length of a key, in bytes.
	DefaultMaxKeyLength = 4096
	// maxNameLength bounds a limiter's name, which is part of each key.
	maxNameLength = 128
)

// Option configures a Store (New) or the limiters it makes (Store.Limiter,
// Store.Concurrency, Store.Quota); each option says which it applies to. An
// option given to another is ignored.
type Option interface {
	applyStore(*storeOptions)
	applyLimiter(*limiterOptions)
}

type storeOptions struct {
	prefix    string
	pipelines int
	maxBatch  int
	window    time.Duration
	denyKeys  int
	timeout   time.Duration
	maxKeyLen int
	minTTL    time.Duration
	name      string
	obs       admit.Observer
	err       error
}

type limiterOptions struct {
	name string
	obs  admit.Observer
	err  error
}

type storeOption func(*storeOptions)

func (f storeOption) applyStore(o *storeOptions)     { f(o) }
func (f storeOption) applyLimiter(o *limiterOptions) {}

func (o *storeOptions) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithPrefix sets the prefix of every key the store writes (a Store
// option). It may not contain '{' or '}', which would move keys between
// Redis Cluster slots. The default is DefaultPrefix, "admit:v1:".
func WithPrefix(prefix string) Option {
	return storeOption(func(o *storeOptions) {
		if strings.ContainsAny(prefix, "{}") || len(prefix) > maxNameLength {
			o.fail("prefix %q: no '{' or '}', at most %d bytes", prefix, maxNameLength)
			return
		}
		o.prefix = prefix
	})
}

// WithPipelines sets how many pipelines may be in flight at once (a Store
// option). Checks that arrive while every pipeline is busy wait and go
// together in the next one, so under load each round trip carries many
// checks. The default is DefaultPipelines, 4.
func WithPipelines(n int) Option {
	return storeOption(func(o *storeOptions) {
		if n < 1 || n > 1024 {
			o.fail("pipelines %d: want 1 to 1024", n)
			return
		}
		o.pipelines = n
	})
}

// WithBatch sets the batching of concurrent checks (a Store option): a
// pipeline carries at most max checks, and after the first check of a
// pipeline the store waits up to window for more before sending it. The
// default is DefaultMaxBatch (256) checks and no wait: a pipeline leaves as
// soon as a worker is free, which batches only under load and adds no
// latency without it.
func WithBatch(max int, window time.Duration) Option {
	return storeOption(func(o *storeOptions) {
		if max < 1 || max > 1<<16 || window < 0 || window > time.Second {
			o.fail("batch of %d within %v: want 1 to 65536 checks and a window of 0 to 1s", max, window)
			return
		}
		o.maxBatch, o.window = max, window
	})
}

// WithDenyCache sets how many denied keys the store remembers locally (a
// Store option). A key denied until instant T is answered from memory until
// T without a call to Redis; see the package documentation for why this is
// exact. 0 disables the cache. The default is DefaultDenyCacheKeys, 65536.
func WithDenyCache(keys int) Option {
	return storeOption(func(o *storeOptions) {
		if keys < 0 || keys > 1<<26 {
			o.fail("deny cache of %d keys: want 0 to 2^26", keys)
			return
		}
		o.denyKeys = keys
	})
}

// WithTimeout bounds each pipeline's round trip (a Store option): a check
// that is not answered in time fails with ErrStore. A caller's context
// deadline applies as well, and is what a failure policy uses to bound a
// check to milliseconds. The default is DefaultTimeout, 1s.
func WithTimeout(d time.Duration) Option {
	return storeOption(func(o *storeOptions) {
		if d <= 0 {
			o.fail("timeout %v: want > 0", d)
			return
		}
		o.timeout = d
	})
}

// WithMaxKeyLength sets the maximum length of a key, in bytes (a Store
// option). A longer key is refused with ErrKeyTooLong before anything is
// sent. The default is DefaultMaxKeyLength, 4096.
func WithMaxKeyLength(n int) Option {
	return storeOption(func(o *storeOptions) {
		if n < 1 || n > 1<<24 {
			o.fail("max key length %d: want 1 to 2^24", n)
			return
		}
		o.maxKeyLen = n
	})
}

// WithMinTTL sets a lower bound on the expiry of every key the store writes
// (a Store option). Keys normally expire when their state is back to full,
// on Redis's clock; a caller that passes its own instants (Request.At) on a
// clock other than Redis's, such as a test's simulated one, should set a
// bound longer than its run. The default is 0: no bound.
func WithMinTTL(d time.Duration) Option {
	return storeOption(func(o *storeOptions) {
		if d < 0 {
			o.fail("min TTL %v: want >= 0", d)
			return
		}
		o.minTTL = d
	})
}

// WithName names a limiter (Limiter, ConcurrencyLimiter or Quota), or a
// Store in its observer events. A limiter's name is each Decision's Rule, each
// observer event's Limiter, and part of each of its keys, so limiters of
// different names never share state, and those of one name and algorithm
// always do (which is how the instances of a service share one limit). A
// name may not contain ':', '{' or '}' and has at most 128 bytes. The
// default is no name.
func WithName(name string) Option {
	return nameOption(name)
}

type nameOption string

func (n nameOption) applyStore(o *storeOptions) { o.name = string(n) }
func (n nameOption) applyLimiter(o *limiterOptions) {
	if strings.ContainsAny(string(n), ":{}") || len(n) > maxNameLength {
		if o.err == nil {
			o.err = fmt.Errorf("%w: name %q: no ':', '{' or '}', at most %d bytes", ErrInvalidOption, string(n), maxNameLength)
		}
		return
	}
	o.name = string(n)
}

// WithObserver sets an observer (for a Store: told of each round trip to
// Redis; for a limiter: of each decision). The default is none.
func WithObserver(obs admit.Observer) Option {
	return observerOption{obs}
}

type observerOption struct{ obs admit.Observer }

func (w observerOption) applyStore(o *storeOptions)     { o.obs = w.obs }
func (w observerOption) applyLimiter(o *limiterOptions) { o.obs = w.obs }
