package policy

import (
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/calendar"
)

// Policy is a rate-limiting policy: rules, by domain, that decide whether a
// request carrying descriptors is admitted (see Rule for the model). Load
// one from a file (Parse, LoadFiles, in this package's YAML
// format or envoyproxy/ratelimit's) or build one in Go and check it with
// Validate. An Engine enforces it.
//
// A Policy and the values it holds (Domain, Rule, TierTable...) are plain
// data: the loaders return new ones, NewEngine and Validate only read them
// (NewEngine keeps no reference to them), and nothing in this package
// modifies them, so they may be shared between goroutines once built. The
// zero Policy has no domains and limits nothing.
type Policy struct {
	// Domains are the namespaces of rules; a request names the one it
	// is checked against. Names are unique.
	Domains []*Domain
}

// Domain is a namespace of rules, as in Envoy: a request is checked
// against the rules of the domain it names, and only those. The zero
// Domain has no name, which Validate refuses.
type Domain struct {
	// Name is the domain's name, unique in the policy, not empty, at most
	// 256 bytes.
	Name string

	// Keys, if not empty, lists the descriptor keys the domain's
	// requests carry (what the sources of descriptors produce: client
	// address, user, tenant, route...). A rule matching a key not in the
	// list could never match, and Validate refuses it. Empty: any key.
	Keys []string

	// Shadow puts every rule of the domain in shadow mode (see
	// Rule.Shadow): the domain's rules decide and report, and never
	// refuse a request.
	Shadow bool

	// Rules are the domain's rules, in the order of the file. The order
	// matters only between rules matching by prefix at the same level
	// (the first whose prefix matches is taken) and for reporting.
	Rules []*Rule

	// Override says how the engine enforces a limit a request gives
	// inline (Descriptor.Limit, Envoy's descriptor limit override). The
	// loaders set it to a fixed window, as envoyproxy/ratelimit counts.
	Override Override

	// envoy is set by the Envoy loader: rules in Envoy's configuration
	// follow its rules (no check of prefix shadowing, replaces naming
	// unknown limits).
	envoy bool
	src   *source
}

// Override is how an engine enforces the limits requests give inline
// (Descriptor.Limit): by Algorithm, in Store (see Rule.Store), with
// Failure as the failure policy when the store is shared, and Prefetch
// as a rule's (a block holds at most each inline limit's burst). The zero
// Override decides by GCRA in the engine's default store, failing open,
// without prefetching; the loaders set Algorithm to
// admit.AlgFixedWindow, envoyproxy/ratelimit's algorithm.
type Override struct {
	Algorithm admit.Algorithm
	Store     string
	Failure   Failure
	Prefetch  int64
}

// Rule is one limit of a policy and the descriptors it applies to.
//
// # Matching
//
// A request carries descriptors, each an ordered list of entries (key,
// value), as in Envoy's rate-limit service. A rule matches a descriptor
// whose entries correspond one to one, in order, to the rule's Match:
// same number of entries, same keys, and each value accepted by its
// Matcher (an exact value, a prefix, or any value). When several rules
// could match one descriptor, the most specific wins, level by level as
// envoyproxy/ratelimit decides: at each entry an exact value is tried
// first, then prefixes (in the order of the rules), then any value; the
// first that exists is followed, without going back. So a rule for one
// client address (value "50.0.0.5") replaces the rule for every address
// (any value) for that address, instead of adding to it. Each descriptor
// of a request is matched on its own, and a request is admitted iff every
// rule matched by one of its descriptors admits it.
//
// # Keys
//
// The values of the descriptor's entries are part of the limit's key:
// a rule matching any value of "remote_address" limits each address
// separately (a per-value limit), and a rule matching (tenant any, route
// "/login") limits each tenant's logins. With Shared, every descriptor the
// rule matches shares one key. Keys are built injectively (each value is
// length-prefixed), so different descriptors never share a key by
// accident.
//
// # Limits
//
// A rule limits with any of a rate (Rate, by Algorithm), a calendar
// quota (Quota), a concurrency cap (Concurrency), an adaptive concurrency
// cap (AdaptiveConcurrency), an adaptive rate (AdaptiveRate) and priority
// lanes (Lanes), all of which must admit the request; or with a tier
// table (Tiers), whose tier for the value of the TierKey entry gives the
// first three; or not at all (Unlimited: the descriptor matches, and
// nothing limits it).
//
// The zero Rule has no name and no match, which Validate refuses.
type Rule struct {
	// Name names the rule in decisions (Decision.Rule), statuses and
	// Redis keys. Unique in the policy, not empty, at most 256 bytes.
	Name string

	// Alias is the name other rules' Replaces refer to; empty means Name.
	// The Envoy loader sets it to rate_limit.name.
	Alias string

	// Description is free text, for people.
	Description string

	// Match are the matchers of the descriptor's entries, in order: at
	// least one, at most 32.
	Match []Matcher

	// Limits are the rule's own limits (empty when Tiers is set).
	Limits

	// Tiers, if not nil, is the tier table whose tiers give the limits:
	// the value of the descriptor's entry of key TierKey picks the tier
	// (the table's Default for values it does not assign).
	Tiers *TierTable

	// TierKey is the key of the entry whose value picks the tier; empty
	// means the key of the last Matcher.
	TierKey string

	// Store names the store the rule's state lives in: StoreLocal
	// (memory), "redis", or any name the engine is given a Backend by
	// (Config.Backends); empty (store: default in this package's YAML
	// format) names the engine's default store (Config.DefaultStore). A name the engine was not given makes NewEngine fail
	// (ErrNoStore, at the rule's store field). A rule with
	// AdaptiveConcurrency, AdaptiveRate or Lanes is kept in memory, all
	// its limits: an adaptive limit learns from the requests of one
	// instance, and a shared store holds no adaptive state. Its Store
	// must be StoreLocal or empty (which means StoreLocal for it).
	Store string

	// Failure is what happens when the store fails: it applies to the
	// rules of a shared store (see Backend.Shared), such as Redis.
	Failure Failure

	// Prefetch, if not 0, spends the rule's rates in memory from blocks
	// of capacity taken from its shared store (package prefetch): at most
	// Prefetch events a block, or, if negative, blocks sized from the
	// burst (prefetch.Config's defaults: half the burst). The fleet never
	// admits more than the limit; the price is early denial, bounded by
	// what other instances' blocks hold. A rule that prefetches limits by
	// rates only (of its own or its tiers), none a sliding log, kept in a
	// shared store (Backend.Shared), and Prefetch is at most each rate's
	// burst; otherwise Validate or NewEngine refuses it. Requests with a
	// per-call limit go to the store as they are.
	Prefetch int64

	// Delay, if not 0, is how long a request may wait for the rule's rate
	// (its own or its tier's), as nginx's limit_req delays requests: one
	// beyond the burst whose slot comes within Delay is admitted with that
	// delay (Decision.Delay), its slot held, and NewHTTP and the gateway
	// hold it until then; beyond, it is refused, holding nothing (see
	// admit.Request.MaxDelay). nginx's "burst=12 delay=8" at 10r/s is a
	// burst of 8 and a Delay of 400ms. Only for one Rate, by GCRA or a
	// bucket, not with Prefetch or Share, at most 10 minutes (a request
	// held holds its connection); Validate refuses anything else.
	Delay time.Duration

	// Shadow puts the rule in shadow mode: it decides and counts as
	// usual and its statuses report what it decided, but it never
	// refuses a request (Status.WouldRefuse says when it would have).
	// For trying a new limit on real traffic.
	Shadow bool

	// Exempt lists descriptor values that bypass the rule: a descriptor
	// whose entry of key Exempt[i].Key has one of Exempt[i].Values is
	// not limited by it (Status.Exempt).
	Exempt []Exemption

	// Shared makes every descriptor the rule matches share one key,
	// instead of one key per value (envoyproxy/ratelimit's
	// share_threshold).
	Shared bool

	// Replaces names rules (by Alias, or Name) that this one replaces:
	// when a request's descriptors match both, the replaced rule is not
	// applied to the request (envoyproxy/ratelimit's replaces).
	Replaces []string

	// DetailedMetric is envoyproxy/ratelimit's detailed_metric, kept for
	// observers; it changes no decision.
	DetailedMetric bool

	// Share, if not nil, makes the rule's Rate a budget its tenants share
	// by weights (see Share).
	Share *Share

	src *source
}

// Limits are the limits of a rule or of a tier. Any of Rate, Quota,
// Concurrency, AdaptiveConcurrency, AdaptiveRate and Lanes may be set (each
// is a layer that must admit the request), or Unlimited alone. The last
// three are a rule's only, not a tier's, and are kept in memory (see
// Rule.Store). The zero Limits limits nothing (a rule of
// envoyproxy/ratelimit's whitelist).
type Limits struct {
	// Rate is a rate limit (nil: none), decided by Algorithm.
	Rate *admit.Limit
	// Rates are more rates on the same key, decided by Algorithm as Rate
	// is, for the burst-plus-sustained pair (10/s burst 20 with
	// 300/min): a request is admitted only if Rate and every one of Rates
	// admit it, and one they refuse consumes nothing from any (a store
	// that can, Redis, decides them in one call; others give back what
	// the first ones took). The decision is the most restrictive: the
	// refusal with the longest RetryAfter, which is when every rate would
	// admit the request, or else the admission with the fewest
	// Remaining. In this package's YAML format, rate: [10/s burst 20,
	// 300/min] sets Rate to the first and Rates to the others. Rates
	// needs Rate, and holds at most 7 (8 rates in all), none unlimited
	// and no two alike (see Validate for the pairs it refuses). A rule
	// with Rates cannot prefetch.
	Rates []admit.Limit
	// Algorithm is the algorithm of Rate. The zero value is GCRA.
	Algorithm admit.Algorithm
	// Quota is a calendar quota (nil: none).
	Quota *Quota
	// Concurrency is a cap on requests in flight (nil: none).
	Concurrency *Concurrency
	// AdaptiveConcurrency is a cap on requests in flight that follows
	// their latency (nil: none).
	AdaptiveConcurrency *AdaptiveConcurrency
	// AdaptiveRate is a rate that follows the requests' outcomes (nil:
	// none).
	AdaptiveRate *AdaptiveRate
	// Lanes shares a rate or a cap on requests in flight among priority
	// lanes (nil: none).
	Lanes *Lanes
	// Unlimited admits everything the rule matches (and nothing else may
	// be set): the descriptor matches, so no less specific rule applies,
	// and nothing is counted.
	Unlimited bool
}

// empty reports whether l limits nothing and is not Unlimited.
func (l *Limits) empty() bool {
	return l.Rate == nil && l.Quota == nil && l.Concurrency == nil && !l.adaptive() && !l.Unlimited
}

// adaptive reports whether l has one of the limits kept in memory only:
// adaptive ones and lanes.
func (l *Limits) adaptive() bool {
	return l.AdaptiveConcurrency != nil || l.AdaptiveRate != nil || l.Lanes != nil
}

// AdaptiveConcurrency is a cap on requests in flight that follows the
// latency of the requests it admits (adaptive.Gradient): it grows while
// they take less than Tolerance times their latency without load, and
// shrinks beyond, or when they fail; it always lies within [Min, Max]. A
// request takes its cost in slots until it is done (until the
// compose.Held of its check is released or finished); it learns from the
// requests whose outcome is reported (compose.Held.Finish, which the
// middleware of httplimit and grpclimit call) and takes a request that is
// only released as a success. One limit per key, as for Concurrency (a
// rule matching exact values, or Shared, has one limit).
//
// The zero fields but Min and Max take adaptive.Gradient's defaults. The
// zero AdaptiveConcurrency (a Max of 0) is not valid.
type AdaptiveConcurrency struct {
	// Min and Max bound the limit: 1 <= Min <= Max <= 2^53.
	Min, Max int64
	// Initial is where the limit starts, in [Min, Max]; 0 means Min.
	Initial int64
	// Tolerance is how much slower than without load requests may get
	// before the limit shrinks (adaptive.GradientConfig.Tolerance), at least 1; 0
	// means 1.5.
	Tolerance float64
	// Smoothing is the weight of each window's new limit
	// (adaptive.GradientConfig.Smoothing), in (0, 1]; 0
	// means 0.2.
	Smoothing float64
	// QueueSize, if not nil, is the queue allowance added to a limit
	// that may grow (adaptive.GradientConfig.QueueSize), at least 0; nil means the
	// square root of the limit.
	QueueSize *float64
	// LongWindow is the number of windows the latency without load
	// averages over (adaptive.GradientConfig.LongWindow); 0
	// means 100.
	LongWindow int
	// WindowSamples and WindowTime are the least samples and duration of
	// a window (adaptive.GradientConfig's WindowSamples and
	// WindowTime); 0 and nil mean 10 and 1s.
	WindowSamples int
	WindowTime    *time.Duration
}

// AdaptiveRate is a rate that follows the outcomes of the requests it
// admits (adaptive.AIMD): each success adds Step to it, each failure
// multiplies it by Factor, and it always lies within [Min, Max] events
// per Period. It learns from the requests whose outcome is reported
// (compose.Held.Finish, which the middleware of httplimit and grpclimit
// call); a request that is only released teaches it nothing. One rate
// per key (a rule matching exact values, or Shared, has one rate).
//
// The zero fields but Min and Max take adaptive.AIMD's defaults. The zero
// AdaptiveRate (a Max of 0) is not valid.
type AdaptiveRate struct {
	// Period is the period of Min, Max, Initial and Step; 0 means one
	// second.
	Period time.Duration
	// Min and Max bound the rate, in events per Period: 1 <= Min <= Max
	// < admit.Inf.
	Min, Max int64
	// Initial is where the rate starts, in [Min, Max]; 0 means Min.
	Initial int64
	// Step is what a success adds to the rate (adaptive.AIMDConfig.Step);
	// 0 means 1.
	Step int64
	// Factor is what a failure multiplies the rate by
	// (adaptive.AIMDConfig.Factor), in (0, 1); 0 means
	// (0.5).
	Factor float64
	// Burst fixes the burst (adaptive.AIMDConfig.Burst); 0 means a burst equal to
	// the current rate.
	Burst int64
	// LatencyThreshold, if positive, makes a success slower than it a
	// failure (adaptive.AIMDConfig.LatencyThreshold).
	LatencyThreshold time.Duration
	// IncreaseInterval and DecreaseInterval, if positive, space the
	// moves of the rate (adaptive.AIMDConfig's IncreaseInterval
	// and DecreaseInterval); 0 moves it on every outcome.
	IncreaseInterval, DecreaseInterval time.Duration
}

// Lanes shares one budget, a rate (fair.RateLanes) or a cap on requests in
// flight (fair.SlotLanes), among priority lanes, each with a reserved
// share, which lanes may borrow from one another as Borrow says. The lane
// of a request is the value of its descriptor's entry of key LaneKey; a
// value that names no lane goes to DefaultLane. One budget per key made
// of the values of the other entries (a rule whose other entries match
// exact values, or Shared, has one budget).
//
// The zero Lanes (no budget, no lanes) is not valid.
type Lanes struct {
	// Budget is the rate the lanes share (not unlimited, not zero), or
	// Concurrency the slots they share, from 1 to 2^53: exactly one of
	// the two.
	Budget      *admit.Limit
	Concurrency int64
	// LaneKey is the key of the match entry whose value picks the lane;
	// empty means the key of the last entry.
	LaneKey string
	// Lanes are the lanes, highest priority first (see fair.Lane): from 1
	// to 64, with distinct names.
	Lanes []fair.Lane
	// Borrow says which lanes may use the capacity others leave unused
	// (fair.RateLanesConfig.Borrowing). The zero value is fair.BorrowUp.
	Borrow fair.Borrowing
	// DefaultLane is the lane of the values that name none; empty means
	// the last lane, the lowest priority, so that a client cannot raise
	// its priority by sending a value of its own.
	DefaultLane string
	// Reserve is the fraction of its share a lane keeps from borrowers
	// (fair.RateLanesConfig.Reserve), in (0, 1]; 0 means one half.
	Reserve float64
}

// Quota is a calendar quota: at most Limit events per key per calendar
// Period (hour, day, week, month, year) in Location, as package quota
// counts them. The zero Quota (a Limit of 0) is not valid.
type Quota struct {
	// Limit is the events per period, from 1 to 2^53.
	Limit int64
	// Period is the calendar period: quota.Hour, quota.Day, quota.Week,
	// quota.Month or quota.Year (a quota.Period).
	Period calendar.Period
	// Location is the time zone of the calendar; nil means UTC.
	Location *time.Location
	// WeekStart is the first day of a week (Period quota.Week only). Its
	// zero value is Sunday; the loaders default to Monday.
	WeekStart time.Weekday
}

// Concurrency is a cap on requests in flight per key: at most Max slots
// at a time, a request taking its cost in slots until it is done (until
// the compose.Held of its check is released). The zero Concurrency (a Max
// of 0) is not valid.
type Concurrency struct {
	// Max is the slots per key, from 1 to 2^53.
	Max int64
	// Lease, if positive, bounds how long a slot can be held: a holder
	// that never releases loses it after Lease. Redis rules always have
	// a lease (0 means redisstore's default, 30s), so that a crashed
	// instance cannot leak slots; 0 means the backend's default.
	Lease time.Duration
}

// MatchKind is how a Matcher accepts a value.
type MatchKind uint8

const (
	// MatchAny accepts any value (and the value is part of the key: a
	// limit per value).
	MatchAny MatchKind = iota
	// MatchExact accepts Value only.
	MatchExact
	// MatchPrefix accepts values starting with Value.
	MatchPrefix
)

// String returns "any", "exact" or "prefix".
func (k MatchKind) String() string {
	switch k {
	case MatchAny:
		return "any"
	case MatchExact:
		return "exact"
	case MatchPrefix:
		return "prefix"
	}
	return "MatchKind(?)"
}

// Matcher matches one entry of a descriptor: its key must be Key, and its
// value is accepted as Kind says. The zero Matcher (an empty Key) is not
// valid.
type Matcher struct {
	Key   string
	Kind  MatchKind
	Value string // the value (MatchExact) or prefix (MatchPrefix)
}

// Exemption lists values of one descriptor key that bypass a rule. A
// value that parses as a CIDR prefix ("10.0.0.0/8", "2001:db8::/32")
// also exempts every IP address in it.
type Exemption struct {
	Key    string
	Values []string
}

// TierTable maps a descriptor value (a tenant, an API key) to a tier, and
// each tier to its limits: the free, standard and enterprise plans of a
// multi-tenant API. The zero TierTable has no tiers, which Validate
// refuses.
type TierTable struct {
	// Name names the table (rules refer to it by name in the file).
	Name string
	// Tiers are the tiers, by name.
	Tiers map[string]*Tier
	// Assign maps values to the names of their tiers.
	Assign map[string]string
	// Default is the name of the tier of the values Assign does not
	// list. Required.
	Default string

	src *source
}

// Tier is one tier of a TierTable: a name and its limits.
type Tier struct {
	// Name is the tier's name, its key in TierTable.Tiers: at most 256
	// bytes.
	Name string
	Limits
}

// FailurePolicy is what a rule kept in Redis does while Redis fails (see
// package compose).
type FailurePolicy uint8

const (
	// FailOpen admits the requests Redis cannot decide (compose.FailOpen).
	// The zero value, and Envoy's default (failure_mode_deny false).
	FailOpen FailurePolicy = iota
	// FailClosed refuses them (compose.FailClosed).
	FailClosed
	// Fallback decides them by a local limiter holding this instance's
	// share of the limit (compose.Fallback with keyed.LocalShare).
	Fallback
)

// String returns "fail_open", "fail_closed" or "fallback".
func (p FailurePolicy) String() string {
	switch p {
	case FailOpen:
		return "fail_open"
	case FailClosed:
		return "fail_closed"
	case Fallback:
		return "fallback"
	}
	return "FailurePolicy(?)"
}

// Failure is the failure policy of a rule kept in Redis: a compose.Guard
// around its Redis limiter. The zero Failure fails open with the Guard's
// defaults.
type Failure struct {
	// Policy is what happens to the requests Redis cannot decide.
	Policy FailurePolicy
	// Breaker stops calling Redis once it keeps failing, and probes it
	// (compose.Breaker).
	Breaker bool
	// LocalShare is the number of instances the limit is shared among
	// while Fallback decides: each enforces 1/LocalShare of it
	// (admit.Limit.Share). 0 means 1 (the whole limit on each instance).
	LocalShare int
	// Timeout bounds each call of Redis (compose.GuardConfig.Timeout); 0
	// means 50ms.
	Timeout time.Duration
	// Threshold is the consecutive failures after which the Guard
	// switches (compose.GuardConfig.Threshold); 0 means 5.
	Threshold int
	// ProbeInterval is the time between probes of an open breaker
	// (compose.GuardConfig.ProbeInterval); 0 means one second.
	ProbeInterval time.Duration
	// RetryAfter is the RetryAfter of FailClosed's refusals
	// (compose.GuardConfig.RetryAfter); 0 means one second.
	RetryAfter time.Duration
}

// String returns the policy as the YAML format writes it: "fail_open",
// "breaker/fallback"...
func (f Failure) String() string {
	if f.Breaker {
		return "breaker/" + f.Policy.String()
	}
	return f.Policy.String()
}

// source is where a rule, domain or tier table was defined: its path in
// the file and the positions of its fields, for errors.
type source struct {
	path   string
	pos    Pos
	fields map[string]fieldSource
	// broken holds the parts of the object ("name", "match", "limits",
	// "store", "exempt", "replaces"; "default", "tier:<name>" of a tier
	// table) in which a loader reported errors: checking them again
	// would only repeat those errors, or report what is missing because
	// of them.
	broken map[string]bool
}

// isBroken reports whether part of the object had loader errors.
func (s *source) isBroken(part string) bool { return s != nil && s.broken[part] }

// markBroken records that part had loader errors.
func (s *source) markBroken(part string) {
	if s.broken == nil {
		s.broken = make(map[string]bool)
	}
	s.broken[part] = true
}

type fieldSource struct {
	path string
	pos  Pos
}

// at returns the path and position of field f of the object of s (or of
// the object itself).
func (s *source) at(f string) (string, Pos) {
	if s == nil {
		return f, Pos{}
	}
	if fs, ok := s.fields[f]; ok {
		return fs.path, fs.pos
	}
	if f == "" {
		return s.path, s.pos
	}
	if s.path == "" {
		return f, s.pos
	}
	return s.path + "." + f, s.pos
}

func (s *source) set(f, path string, p Pos) {
	if s.fields == nil {
		s.fields = make(map[string]fieldSource)
	}
	s.fields[f] = fieldSource{path, p}
}
