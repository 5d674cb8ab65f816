// Package policy is admit's rate-limiting policy: a model of rules over
// Envoy-style descriptors, two YAML formats to write it in (this package's
// and envoyproxy/ratelimit's), and an Engine that enforces it with the
// limiters of the stores it is given (Backend: policy/backends.Memory,
// policy/backends.Redis, or any other, by the name rules give in store:)
// and of packages adaptive, fair and compose.
//
// # Model
//
// A request names a domain and carries descriptors, each an ordered list
// of entries (key, value): (remote_address 203.0.113.7), (tenant acme),
// (tenant acme, route /login). Each descriptor is matched to the rule of
// the domain that fits it best, level by level as envoyproxy/ratelimit
// matches (see Rule), and the request is admitted iff every matched rule
// admits it. A rule limits by a rate (any algorithm of package admit), a
// calendar quota, a concurrency cap, an adaptive concurrency cap or rate,
// priority lanes sharing a budget, a rate its tenants share by weight
// (share:), or a tier table mapping a value (a
// tenant) to the limits of its tier; keeps its state in memory or in
// Redis, with a failure policy for when Redis fails; and may be in shadow
// mode, exempt values, replace other rules, or share one key among all
// the descriptors it matches. Policy, Domain, Rule, TierTable and Limits
// are plain structs: build a Policy in Go, or load one.
//
// # Which one should I use?
//
//   - This package's format for a new policy: rates with any
//     period ("100 per 5 minutes") and algorithm, bursts, calendar quotas
//     in a time zone, concurrency caps, adaptive limits and priority
//     lanes, tier tables, per-rule store and
//     failure policy, exemptions (CIDR ranges included), several domains
//     in a file, and errors that name file, line, column and field.
//   - envoyproxy/ratelimit's format to switch from
//     envoyproxy/ratelimit without rewriting its configuration: its files
//     load unchanged, with the meaning they have there (fixed windows per
//     unit, the most specific match, replaces, unlimited, shadow_mode).
//     Move rules to this package's format when you need what it lacks.
//
// Parse detects the format; LoadFiles merges several files, of either
// format, one domain or more each (MergeDomains merges the domains of one
// name). LoadFiles reads a file with ReadFile, which reads at most 4 MiB
// (4,194,304 bytes): a larger file, or one that never ends, is an error at
// once. A rule, domain or tier name is at most 256 bytes.
//
// # The YAML format
//
// Every key is listed here; any other key is an error, as are values of
// the wrong type, numbers that overflow, negative limits, a burst with a
// zero rate, unknown algorithms, duplicate keys, rule names or domains,
// references to undefined tier tables or tiers, cyclic tier inheritance,
// rules that can never match, and contradictions. A loader reports every
// problem it finds (an Errors value), each as
// "file:line:column: field.path: message". Anchors and aliases are
// allowed, but their expansion is bounded (a document may expand to four
// times its size), so a "billion laughs" file fails at once.
//
//	version: 1                  # optional; 1 is the only version
//	shadow: false               # optional: every rule in shadow mode
//	description: text           # optional, for people
//	defaults:                   # optional: defaults of every rule
//	  store: local              # local (the default) or redis
//	  algorithm: gcra           # of rates (default gcra)
//	  failure: fail_open        # of rules kept in Redis (default fail_open)
//	  prefetch: off             # of the rules that can prefetch (below),
//	                            # and of inline limits (default off)
//	tier_tables:                # optional: tier tables, by name
//	  plans:
//	    description: text
//	    default: free           # required: the tier of values not assigned
//	    tiers:                  # the tiers, by name: each sets any of
//	      free:                 # rate, burst, algorithm, quota, concurrency,
//	        rate: 10/s          # or unlimited (as a rule does)
//	        burst: 20
//	        quota: 1000/day
//	        concurrency: 5
//	      standard:
//	        extends: free       # optional: start from another tier's fields
//	        rate: 100/s
//	        burst: 200
//	    assign:                 # value -> tier
//	      acme: standard
//
//	# One domain: domain (optional, default "default"), keys, overrides
//	# and rules at the top level. Several: a list under domains, each with
//	# domain (required), description, keys, shadow, overrides and rules.
//	domain: api
//	keys: [remote_address, user, tenant, route]   # optional: the only keys
//	                            # descriptors carry; a rule on another key
//	                            # can never match, and is an error
//	overrides:                  # optional: how inline limits are enforced
//	  algorithm: fixed_window   # (default fixed_window, as Envoy's)
//	  store: redis              # (default: defaults.store)
//	  failure: fail_open
//	  prefetch: auto            # (default: defaults.prefetch; a block
//	                            # holds at most each limit's burst)
//	rules:
//	  - name: per-tenant        # required, unique in the policy
//	    description: text
//	    match:                  # required: the descriptor's entries, in order
//	      - key: tenant         # any value: one limit per tenant
//	      - key: route
//	        value: /login       # exactly this value
//	      # or: prefix: /api/   # values starting with /api/
//	      # A list item may be just a key ("- tenant"), and match may be
//	      # just a key ("match: remote_address").
//	    rate: 100/s burst 200   # a rate limit (see ParseRate), or a list
//	    # rate: [10/s burst 20, 300/min]  of 1 to 8 rates, each of which
//	                            # must admit the request (see Rates)
//	    burst: 200              # the burst, if the rate does not say it
//	                            # (not with a list)
//	    algorithm: gcra         # gcra, token_bucket, leaky_bucket,
//	                            # fixed_window, sliding_window,
//	                            # sliding_window_approx, sliding_log
//	    quota: 1000/day         # a calendar quota (see below), or:
//	    # quota: {limit: 1000, period: month, timezone: Europe/Paris,
//	    #         week_start: monday}
//	    concurrency: 50         # a cap on requests in flight, or:
//	    # concurrency: {max: 50, lease: 30s}  (lease: how long Redis keeps
//	    # a slot whose holder vanished; admit serve's lease table
//	    # replaces it with the lease's own TTL)
//	    adaptive_concurrency:   # a cap on requests in flight that follows
//	      min: 10               # their latency: required, the bounds of
//	      max: 1000             # the limit (1 to 2^53)
//	      initial: 10           # where it starts (default: min)
//	      tolerance: 1.5        # latency may rise to 1.5x its level without
//	                            # load before the limit shrinks (>= 1)
//	      smoothing: 0.2        # weight of each window's new limit (0 to 1]
//	      queue_size: 4         # added to a limit that may grow (default:
//	                            # the square root of the limit)
//	      long_window: 100      # windows the level without load averages
//	      window_samples: 10    # a window closes after this many samples
//	      window_time: 1s       # and at least this long
//	    adaptive_rate:          # a rate that follows the outcomes:
//	      min: 10/s             # required, the bounds, in one period
//	      max: 1000/s
//	      initial: 10/s         # where it starts (default: min)
//	      step: 1               # added per success (default 1), or a rate
//	                            # in the same period (5/s)
//	      factor: 0.5           # a failure multiplies it by this (0 to 1)
//	      burst: 100            # fixed burst (default: the current rate)
//	      latency_threshold: 2s # a success slower than this is a failure
//	                            # (default: none)
//	      increase_interval: 0s # at most one increase per interval
//	                            # (default 0: on every success)
//	      decrease_interval: 1s # at most one cut per interval (default 0:
//	                            # on every failure)
//	    lanes:                  # priority lanes sharing one budget:
//	      budget: 100/s         # a rate (with its burst), or:
//	      # concurrency: 50     # requests in flight
//	      lane_key: priority    # the entry whose value picks the lane
//	                            # (default: the last entry of match)
//	      shares:               # the lanes, highest priority first, with
//	        critical: 50%       # percentages adding up to 100% (at most
//	        default: 30%        # two decimals), or weights (whole
//	        batch: 20%          # numbers, shared in proportion)
//	      borrow: up            # which lanes may use what others leave
//	                            # unused: up (default: from lower lanes
//	                            # only), any, none
//	      default_lane: batch   # the lane of values naming none (default:
//	                            # the last, the lowest priority)
//	      reserve: 50%          # of its share a lane keeps from borrowers
//	                            # (0 to 100%], a fraction (0.5) or percent
//	    share:                  # the rate is a budget the values of an
//	      key: tenant           # entry (default: the last of match) share
//	      weights:              # by weight (1 to 2^20), work-conserving:
//	        acme: 3             # see Fair sharing
//	        globex: 2
//	      default: 1            # the weight of the others (default 1)
//	      idle: 1s              # a tenant idle this long stops counting
//	                            # (default 1s, at most 1h)
//	    # tiers: plans          # instead of rate, quota and concurrency
//	    # tier_key: tenant      # the entry whose value picks the tier
//	                            # (default: the last entry of match)
//	    # unlimited: true       # matches, and limits nothing
//	    store: redis            # local or redis (default: defaults.store)
//	    failure: breaker/fallback   # fail_open, fail_closed, fallback, each
//	                            # optionally after breaker/, or:
//	    # failure: {policy: fallback, breaker: true, local_share: 4,
//	    #           timeout: 50ms, threshold: 5, probe_interval: 1s,
//	    #           retry_after: 1s}
//	    prefetch: auto          # auto, off (the default, or defaults'),
//	                            # or the most events a block holds (at
//	                            # most the burst): see Prefetching
//	    delay: 400ms            # hold a request beyond the burst up to
//	                            # 400ms for its slot (nginx's delay=;
//	                            # gcra and buckets, not with prefetch;
//	                            # at most 10m): see Rule.Delay
//	    shadow: false           # decide and report, never refuse
//	    exempt:                 # values that bypass the rule, by key;
//	      tenant: [internal]    # CIDR prefixes exempt IP addresses
//	    shared: false           # all matching descriptors share one key
//	    replaces: [other-rule]  # rules this one replaces when both match
//
// A rule sets any of rate, quota, concurrency, adaptive_concurrency,
// adaptive_rate and lanes (each must admit the request), or tiers, or
// unlimited; a tier sets any of the first three. failure applies to rules
// kept in Redis only: fail_open admits while Redis fails, fail_closed refuses,
// fallback asks a local limiter holding 1/local_share of the limit;
// breaker/ stops calling a Redis that keeps failing and probes it (see
// package compose). Concurrency caps kept in Redis apply the policy to each
// call that fails, without a breaker.
//
// # Fair sharing
//
// share: makes the rule's rate a budget that tenants share in proportion
// to their weights (fair.Share, or redisstore's Store.Share for a rule
// kept in Redis): the tenant is the value of the entry of key share.key,
// any value a tenant of its own, and the budget is one per key of the
// other entries (one for a rule matching only the tenant, or shared):
//
//	rules:
//	  - name: shared-backend
//	    match: tenant
//	    rate: 1000/s
//	    share: {weights: {acme: 3, globex: 2}, default: 1}
//
// When the active tenants (those that asked within idle) ask more than the
// budget, each gets at least its weight's part of it: 1000/s shared by
// acme, globex and one other tenant, all busy, is 500, 333 and 167 a
// second. It is work-conserving: what a tenant leaves unused (up to half
// the burst, kept for the tenants within their parts) goes to any other
// at once, and an idle tenant stops counting within idle, the others'
// parts growing with it. The budget is never exceeded (at most B + ⌊t/T⌋
// events over any interval of length t). Kept in Redis, each decision is
// one script call on the budget's hash slot, and decides exactly as in
// memory; the failure policy's fallback shares 1/local_share of the
// budget in memory. A rule with share: limits by its rate only, decided
// by gcra: a quota, concurrency cap, adaptive limit, lanes, tiers or
// prefetch with it is an error (put them in rules of their own), as are
// weights outside [1, 2^20] and a key the rule does not match.
//
// # Prefetching
//
// A rule kept in Redis asks Redis at every check. With prefetch, each
// instance takes the rule's capacity from Redis in blocks, one atomic
// partial grant per block, and admits from them in memory (package
// prefetch): a hot key's checks cost what a local limiter's cost, and
// Redis sees one call per block. The fleet never admits more than the
// limit (over any interval of length t, at most B + ⌊t/T⌋ events for
// GCRA and the buckets, B per window for the fixed window: see package
// prefetch); the price is early denial, a request refused while capacity
// sits in another instance's block, so keep blocks small against the burst
// divided by the instances. auto takes prefetch.Config's defaults: blocks
// of about 50ms of a key's local traffic, at most half the burst; a number
// caps blocks at that many events. Keys seen less than twice per 50ms, and
// requests with a limit of their own, go to Redis as before.
//
// Use it for rates checked many times per second per key and instance (a
// hot tenant, a busy API key, a global limit). A rule that prefetches
// limits by rates only, of any algorithm but the sliding log (each of
// whose events expires on its own), of its own or its tiers', and is kept
// in a shared store: a quota (whose counts must be durable) or a
// concurrency cap (whose slots are leased) in the rule, a rule kept in
// memory, a block larger than a rate's burst, and a block of zero or fewer
// events are errors; so is a store whose limiters cannot grant part of a
// request (admit.PartialAllower), at NewEngine. defaults.prefetch applies
// to the rules that can prefetch (a block lowered to each rule's smallest
// burst) and leaves the others strict. The blocks are spent while Redis
// fails; then the rule's failure policy decides, as without prefetching.
//
// testdata/example.yaml is the multi-tenant API of the reference design
// (per address and per user in memory, per tenant by plan and per route in
// Redis, a global cap in flight) written in this format;
// testdata/example-adaptive.yaml protects backends of unknown capacity
// with adaptive limits and priority lanes.
//
// # Adaptive limits and lanes
//
// adaptive_concurrency is an adaptive.Gradient: a cap on requests in
// flight that grows while their latency stays within tolerance times its
// level without load, and shrinks beyond it or when requests fail.
// adaptive_rate is an adaptive.AIMD: a rate that grows by step with each
// success and is multiplied by factor on each failure. Both stay within
// [min, max], and both learn from the outcomes the caller reports:
// compose.Held.Finish(failed) at the end of the request, which the
// middleware of packages httplimit (a failure is a panic or, by default,
// a status of 429 or of 500 and more) and grpclimit (a panic or, by
// default, Unavailable, ResourceExhausted, DeadlineExceeded, Internal)
// call. A request that is only released
// (Held.Release) teaches adaptive_rate nothing, and adaptive_concurrency
// takes it as a success of the latency it had.
//
// lanes is a fair.RateLanes (budget) or fair.SlotLanes (concurrency): the
// budget split among lanes by their shares: each lane keeps part of its
// share (reserve) for itself and lends the rest, as borrow says, to lanes
// whose traffic is more than their own share. The lane of a request is the value
// of its lane_key entry; a value naming no lane goes to default_lane.
// With percentages, the shares must add up to 100%; weights are shared
// in proportion to their sum.
//
// Their keys are those of the rule's other limits (the values of the match
// entries, for lanes all but lane_key's): a rule matching any value has
// one limit (or budget) per value, a rule matching exact values, or with
// shared: true, has one. At most Config.MaxKeys keys per rule
// (10,000 by default) are kept: a new key beyond it takes the place
// of an idle one (nothing in flight, nothing used), starting again from
// initial, or is refused with an error wrapping admit.ErrTooManyKeys if
// none is idle.
//
// A rule with any of the three is kept in memory, whole, whatever
// defaults.store says: an adaptive limit learns from the requests of one
// instance, and Redis holds no adaptive state. store: redis (or a failure
// policy) on such a rule is an error; put the limits to keep in Redis in a
// rule of their own. They are not available in tiers.
//
// # Rates and quotas
//
// A rule or tier may carry several rates (rate: [10/s burst 20, 300/min];
// Limits.Rates), the burst-plus-sustained pair: a request is admitted only
// if every rate admits it, and one they refuse consumes nothing from any
// (Redis decides them in one script call; in memory, the rates that
// admitted give back what they took). The decision and the status report
// the most restrictive: the refusal with the longest RetryAfter, or the
// admission with the fewest Remaining. A list with unlimited, a rate given
// twice, or, under gcra, token_bucket or leaky_bucket, a rate that never
// refuses what another admits (at least as fast, with a burst at least as
// large: [10/s, 600/min] is one, since 600/min is 10/s with a burst of
// 600) is an error; so is prefetch on such a rule.
//
// A rate is what admit.ParseLimit reads ("100/s", "5000/1h burst 50",
// "100 per 5m", "unlimited") and more: "100 per 5 minutes", "7/week",
// "10_000/day" (see ParseRate). Its burst defaults to its rate. A quota is
// "N/PERIOD" or "N per PERIOD" for calendar periods (hour, day, week,
// month, year) in a time zone (see Quota): "1000/day" resets at
// midnight, where "1000/24h" is a rate that refills continuously.
//
// # The engine
//
// NewEngine builds one limiter per rule, limit kind and tier; Check
// decides a request and reports one decision and one status per
// descriptor (the code, limit, remaining and time to reset an Envoy
// rate-limit service answers with). It asks the local rates, quotas,
// adaptive rates and rate lanes first, then those kept in Redis, then the
// concurrency caps and slot lanes, and the adaptive concurrency caps last
// (a request refused after one of them would give its slots back at once,
// a success of no latency). Checks allocate nothing for rules kept in
// memory. NewEngine with Config.Previous reloads a policy keeping the
// state of the rules that did not change (an adaptive limit keeps what it
// learnt).
package policy
