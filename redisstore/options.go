package redisstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/quota"
)

// Config configures a Store (New). Every field's zero value is its
// default.
type Config struct {
	// Options: Name names the Store in its observer events, and Observer
	// is told of each round trip to Redis (see admit.Options). Clock is
	// not used: the store decides on Redis's clock (TIME), or at the
	// instants the callers give.
	admit.Options

	// Prefix is the prefix of every key the store writes. It may not
	// contain '{' or '}', which would move keys between Redis Cluster
	// slots, and has at most 128 bytes. Empty means "admit:v1:": the
	// project and the version of the key layout.
	Prefix string

	// Pipelines is how many pipelines may be in flight at once. Checks that
	// arrive while every pipeline is busy wait and go together in the next
	// one, so under load each round trip carries many checks. 0 means 4;
	// at most 1024.
	Pipelines int

	// MaxBatch is the largest number of checks one pipeline carries. 0
	// means 256; at most 65536.
	MaxBatch int

	// BatchWindow is how long the store waits, after the first check of a
	// pipeline, for more before sending it. 0 means no wait: a pipeline
	// leaves as soon as a worker is free, which batches only under load and
	// adds no latency without it. At most a second.
	BatchWindow time.Duration

	// DenyCacheKeys is how many denied keys the store remembers locally. A
	// key denied until instant T is answered from memory until T without a
	// call to Redis; see the package documentation for why this is exact. 0
	// means 65536; a negative value disables the cache. At most 2^26.
	DenyCacheKeys int

	// Timeout bounds each pipeline's round trip (and each call of the
	// quota and concurrency limiters): a check that is not answered in
	// time fails with ErrStore. A caller's context deadline applies as
	// well, and is what a failure policy uses to bound a check to
	// milliseconds. 0 means a second; a negative value is an error.
	Timeout time.Duration

	// MaxKeyLength is the maximum length of a key, in bytes. A longer key
	// is refused with admit.ErrKeyTooLong before anything is sent. 0 means 4096;
	// at most 2^24.
	MaxKeyLength int

	// MinTTL is a lower bound on the expiry of every key the store writes.
	// Keys normally expire when their state is back to full, on Redis's
	// clock; a caller that passes its own instants (Request.At) on a clock
	// other than Redis's, such as a test's simulated one, should set a
	// bound longer than its run. 0 means no bound; a negative value is an
	// error.
	MinTTL time.Duration
}

// LimiterConfig configures a Limiter (Store.Limiter). Every field's zero
// value is its default; set Limit, since the zero Limit denies every
// request that does not give its own (Request.Limit).
type LimiterConfig struct {
	// Options: Name is each Decision's Rule, each observer event's
	// Limiter, and part of each of the limiter's keys, so that limiters of
	// different names never share state, and those of one name and
	// algorithm always do (which is how the instances of a service share
	// one limit); it may not contain ':', '{' or '}' and has at most 128
	// bytes. Observer is told of each decision. Clock is not used (see
	// Config).
	admit.Options

	// Algorithm decides each key: any of admit's but the Pacer. The zero
	// value is admit.AlgGCRA.
	Algorithm admit.Algorithm

	// Limit is the limit of the calls that do not give one
	// (Request.Limit); an invalid Limit is an error wrapping
	// admit.ErrInvalidLimit.
	Limit admit.Limit
}

// QuotaConfig configures a Quota (Store.Quota). Every field's zero value is
// its default, but for Limit and Period, which Store.Quota requires.
type QuotaConfig struct {
	// Options: Name and Observer as for a Limiter (see LimiterConfig).
	// Clock is not used (see Config).
	admit.Options

	// Limit is the quota's size: events per key per period, for the calls
	// that do not give one (Request.Limit.Rate). Required: from 1 to 2^53
	// (an error wrapping admit.ErrInvalidConfig that says "invalid
	// quota size").
	Limit int64

	// Period is the calendar period the quota counts in: one of package
	// quota's Periods (quota.ParsePeriod reads one from its name).
	// Required: the zero Period is an error wrapping
	// admit.ErrInvalidConfig.
	Period quota.Period

	// Location is the time zone whose calendar the periods follow, as
	// returned by time.LoadLocation("Europe/Paris"). Nil means time.UTC.
	Location *time.Location

	// WeekStart is the first day of a week, for quota.Week quotas. Nil
	// means time.Monday (ISO 8601); new(time.Sunday) is the other usual
	// choice. (A pointer, as in quota.Config: the zero Weekday is Sunday.)
	WeekStart *time.Weekday
}

// ConcurrencyConfig configures a ConcurrencyLimiter (Store.Concurrency).
// Every field's zero value is its default, but for Max, which
// Store.Concurrency requires.
type ConcurrencyConfig struct {
	// Options: Name and Observer as for a Limiter (see LimiterConfig).
	// Clock is not used (see Config).
	admit.Options

	// Max is the number of slots in flight per key for the calls that do
	// not give one (Request.Limit.Rate). Required: from 1 to 2^53 (an
	// error wrapping admit.ErrInvalidLimit).
	Max int64

	// Lease is the lease of the slots the limiter grants: a Lease not
	// released or extended within it loses its slots, which go to the next
	// callers. Set it well above the longest legitimate hold, or extend
	// the lease (Lease.Extend) while working: a slot reclaimed from a
	// holder that is still working lets one request more in flight than
	// the limit. It is rounded up to a millisecond, and must be at most a
	// year. 0 means 30 seconds; a negative value is an error.
	Lease time.Duration

	// PollMin and PollMax bound the interval at which Acquire polls Redis
	// while it waits: the first wait is about PollMin, each next one twice
	// the last, up to PollMax, each with random jitter (between half and
	// all of it). Shorter intervals answer sooner and cost more calls to
	// Redis. 0 means 1 ms and 50 ms; PollMin must be at most PollMax, and
	// PollMax at most a minute; a negative value is an error.
	PollMin, PollMax time.Duration
}

// The defaults of the Configs' fields, and the bound on names.
const (
	defaultPrefix        = "admit:v1:"
	defaultPipelines     = 4
	defaultMaxBatch      = 256
	defaultDenyCacheKeys = 1 << 16
	defaultTimeout       = time.Second
	defaultMaxKeyLength  = 4096
	defaultLease         = 30 * time.Second
	defaultPollMin       = time.Millisecond
	defaultPollMax       = 50 * time.Millisecond
	// maxNameLength bounds a limiter's name, which is part of each key.
	maxNameLength = 128
)

// storeOptions are a Config checked, with its defaults filled in.
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
}

// invalid returns an error wrapping admit.ErrInvalidConfig about field.
func invalid(field string, format string, args ...any) error {
	return fmt.Errorf("%w: redisstore: %s "+format, append([]any{admit.ErrInvalidConfig, field}, args...)...)
}

// defaulted returns v, or def if v is zero.
func defaulted[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// options checks cfg and fills in its defaults.
func (cfg *Config) options() (storeOptions, error) {
	switch {
	case strings.ContainsAny(cfg.Prefix, "{}") || len(cfg.Prefix) > maxNameLength:
		return storeOptions{}, invalid("Prefix", "%q: no '{' or '}', at most %d bytes", cfg.Prefix, maxNameLength)
	case cfg.Pipelines < 0 || cfg.Pipelines > 1024:
		return storeOptions{}, invalid("Pipelines", "%d: want 0 to 1024", cfg.Pipelines)
	case cfg.MaxBatch < 0 || cfg.MaxBatch > 1<<16:
		return storeOptions{}, invalid("MaxBatch", "%d: want 0 to 65536", cfg.MaxBatch)
	case cfg.BatchWindow < 0 || cfg.BatchWindow > time.Second:
		return storeOptions{}, invalid("BatchWindow", "%v: want 0 to 1s", cfg.BatchWindow)
	case cfg.DenyCacheKeys > 1<<26:
		return storeOptions{}, invalid("DenyCacheKeys", "%d: want at most 2^26", cfg.DenyCacheKeys)
	case cfg.Timeout < 0:
		return storeOptions{}, invalid("Timeout", "%v: want >= 0", cfg.Timeout)
	case cfg.MaxKeyLength < 0 || cfg.MaxKeyLength > 1<<24:
		return storeOptions{}, invalid("MaxKeyLength", "%d: want 0 to 2^24", cfg.MaxKeyLength)
	case cfg.MinTTL < 0:
		return storeOptions{}, invalid("MinTTL", "%v: want >= 0", cfg.MinTTL)
	}
	o := storeOptions{
		prefix:    defaulted(cfg.Prefix, defaultPrefix),
		pipelines: defaulted(cfg.Pipelines, defaultPipelines),
		maxBatch:  defaulted(cfg.MaxBatch, defaultMaxBatch),
		window:    cfg.BatchWindow,
		denyKeys:  max(defaulted(cfg.DenyCacheKeys, defaultDenyCacheKeys), 0),
		timeout:   defaulted(cfg.Timeout, defaultTimeout),
		maxKeyLen: defaulted(cfg.MaxKeyLength, defaultMaxKeyLength),
		minTTL:    cfg.MinTTL,
		name:      cfg.Name,
		obs:       cfg.Observer,
	}
	return o, nil
}

// checkName checks the name of a limiter, which is part of each of its
// keys.
func checkName(name string) error {
	if strings.ContainsAny(name, ":{}") || len(name) > maxNameLength {
		return invalid("Name", "%q: no ':', '{' or '}', at most %d bytes", name, maxNameLength)
	}
	return nil
}
