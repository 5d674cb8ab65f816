package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/policy"
)

// rlsService is Envoy's rate-limit service
// (envoy.service.ratelimit.v3.RateLimitService, the protocol of
// envoyproxy/ratelimit) over a policy engine: ShouldRateLimit decides a
// request's descriptors against the rules of its domain, and Register
// serves it on a gRPC server. It is a drop-in for envoyproxy/ratelimit:
// Envoy's ratelimit filters, and its clients, need no change.
//
// # Requests
//
// The domain is required, and so is at least one descriptor: a request
// without either is INVALID_ARGUMENT, as envoyproxy/ratelimit refuses it.
// Every descriptor must pass: the request is OVER_LIMIT if any descriptor
// is, and then consumes nothing from any limit (envoyproxy/ratelimit's
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT behaviour, see policy.Engine).
// The request's hits_addend is the cost of every descriptor, 0 counting as
// 1 as Envoy specifies; a descriptor's own hits_addend, when set, replaces
// it for that descriptor, and an explicit 0 checks without consuming (a
// peek). A descriptor's limit (the override Envoy sends from a route's
// dynamic metadata) is requests_per_unit per unit_multiplier units, burst
// requests_per_unit, enforced as the domain's policy.Override says (a
// fixed window by default, as envoyproxy/ratelimit counts) under a key made
// of the descriptor's entries. is_negative_hits is refused: the engine does
// not take events back on request.
//
// A domain the policy does not have limits nothing: every descriptor is
// OK, as envoyproxy/ratelimit answers for a domain it has no
// configuration for. Requests are checked before anything is decided (see
// WithGRPCMaxDescriptors, WithGRPCMaxEntries, WithGRPCMaxValueBytes, and
// MaxGRPCHits); a request that fails is INVALID_ARGUMENT saying why. A
// message that is not valid protobuf is INVALID_ARGUMENT too on a server
// made with GRPCServerOptions (as `admit serve` is); elsewhere grpc-go
// answers it INTERNAL before the service sees it.
//
// # Responses
//
// Each descriptor's status has its code and, when a limit applies to it
// (the most restrictive of its rule's limits, the one that refused if one
// did):
//
//   - current_limit: the limit, named after its rule (and tier), in
//     requests per unit (see below for limits whose period is not a unit);
//   - limit_remaining: what is left now, after this request (saturated at
//     2^32-1);
//   - duration_until_reset: how long until the limit is back to full
//     capacity (admit.Decision.ResetAfter): for GCRA and the buckets, until
//     the bucket is full again; for a fixed window, until the window ends
//     (0 for a key with nothing counted); for sliding windows and logs,
//     until the events counted have left the window; for a calendar quota,
//     until its period ends. A concurrency cap has no reset in time, and no
//     duration_until_reset. The descriptor that refused the request
//     reports at least the retry time, jittered by the engine's
//     policy.Config.RetryJitter (admit serve's --retry-jitter): Envoy's
//     X-RateLimit-Reset comes from it, and clients retry by it.
//
// A descriptor none of whose limits was asked, because another
// descriptor's limit refused the request first (policy.Status.Skipped),
// reports its configured limit with limit_remaining 0 and no
// duration_until_reset (nothing was asked, nothing consumed); a quota's
// unit is then UNKNOWN, its period not being known until it is asked.
//
// A descriptor that matches no rule, an unlimited rule, an exempt value or
// a replaced rule has only its code (OK), as envoyproxy/ratelimit answers;
// and, since nothing limits it, a quota (see below). A rule in shadow mode
// reports its limit and remaining with code OK, whatever it decided.
//
// current_limit is requests_per_unit per unit, times unit_multiplier
// units when the period is a multiple of a unit: 100 per 5 minutes is 100
// per MINUTE × 5, 3 per 1.5s is 2 per SECOND × 3 (exact as long as both
// fit in 32 bits; else requests per SECOND rounded down). A calendar quota
// is its events per calendar unit (DAY, WEEK, MONTH, YEAR, HOUR); a
// concurrency cap is its slots per UNKNOWN unit. Clients older than
// unit_multiplier read the first part only.
//
// response_headers_to_add carries the IETF fields of the decision's
// deciding limit, as package httplimit writes them (see WithGRPCHeaders):
// RateLimit-Policy `"rule";q=100;w=60` (the burst and the seconds it takes
// to come back) and RateLimit `"rule";r=42;t=30` (what remains, and the
// seconds until the limit is full again, or until the request could be
// admitted when refused, with Retry-After in seconds then).
//
// quota is granted only where it is exact: to a descriptor nothing limits
// (no rule, unlimited, exempt), as requests 2^32-1 valid for
// WithGRPCQuotaTTL (10s by default), so that a client caching it stops
// asking about it until the policy may have changed; and to the whole
// descriptor set when every descriptor has one. A limited descriptor gets
// none: the events a limit has left are shared by every client, and a
// grant cached by several clients would let each of them spend the same
// events. Nor does one whose store failed, whatever its rule's failure
// policy decided (policy.ErrStoreFailed): fail open admits it without a
// limit only until the store is back.
//
// # Concurrency caps
//
// Envoy's protocol has no release, so a concurrency cap matched through
// rlsService is a gate, not a hold: the request is admitted iff the cap has room
// for its cost at that instant, and the slots are given back before the
// response is sent. The slots held by admit.v1 Acquire, the HTTP API's
// leases and the gateway's requests in flight count against it; those of
// rlsService requests never do.
//
// # Errors
//
// INVALID_ARGUMENT for a bad request (and a key longer than a limiter
// allows), RESOURCE_EXHAUSTED when the engine holds as many keys or inline
// limits as it may, UNAVAILABLE when no policy is loaded yet or a limit
// kept in Redis failed with a failure policy that lets errors through,
// CANCELED and DEADLINE_EXCEEDED when the call ends first. Envoy then
// applies its failure_mode_deny.
//
// An rlsService is safe for concurrent use; it starts no goroutine. Create one
// with NewRLS.
type rlsService struct {
	src  EngineSource
	o    grpcOptions
	pool sync.Pool // *grpcScratch
}

// newRLS returns Envoy's rate-limit service deciding with the engine src
// gives at each request (see EngineSource). The error wraps
// admit.ErrInvalidConfig for an invalid option.
func newRLS(src EngineSource, opts ...grpcOption) (*rlsService, error) {
	if src == nil {
		return nil, grpcOptionError("NewRLS: nil EngineSource")
	}
	o, err := newGRPCOptions(opts)
	if err != nil {
		return nil, err
	}
	s := &rlsService{src: src, o: o}
	s.pool.New = func() any { return new(grpcScratch) }
	return s, nil
}

// Register registers the service on r (a *grpc.Server), under Envoy's
// service name.
func (s *rlsService) Register(r grpc.ServiceRegistrar) { rlsv3.RegisterRateLimitServiceServer(r, s) }

// ShouldRateLimit decides Envoy's request r (see RLS).
func (s *rlsService) ShouldRateLimit(ctx context.Context, r *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	if err := grpcMalformed(r); err != nil {
		return nil, err
	}
	e := s.src.Engine()
	if e == nil {
		return nil, status.Error(codes.Unavailable, "no policy loaded")
	}
	sc := s.pool.Get().(*grpcScratch)
	defer s.put(sc)
	if err := s.o.rlsRequest(r, sc); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	err := e.Check(ctx, &sc.req, &sc.held, &sc.res)
	// Concurrency caps are gates through RLS: no slot outlives the call.
	sc.held.Release()
	if err != nil {
		return nil, grpcCheckError(err)
	}
	return s.response(&sc.res), nil
}

func (s *rlsService) put(sc *grpcScratch) {
	sc.reset()
	s.pool.Put(sc)
}

// rlsOne holds the messages of the answer to one descriptor (the common
// request), allocated together: one allocation instead of five.
type rlsOne struct {
	out rlsv3.RateLimitResponse
	st  [1]rlsv3.RateLimitResponse_DescriptorStatus
	stp [1]*rlsv3.RateLimitResponse_DescriptorStatus
	lim [1]rlsv3.RateLimitResponse_RateLimit
	dur [1]durationpb.Duration
}

// response builds the answer to a request decided as res says.
func (s *rlsService) response(res *policy.Result) *rlsv3.RateLimitResponse {
	n := len(res.Statuses)
	out, sts, lims, durs := rlsAllocate(res)
	var until *timestamppb.Timestamp
	out.OverallCode = rlsv3.RateLimitResponse_OK
	if !res.Decision.Allowed {
		out.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	granted := s.o.quotaTTL > 0
	j := 0
	for i := range res.Statuses {
		st := &res.Statuses[i]
		ds := &sts[i]
		out.Statuses[i] = ds
		ds.Code = rlsv3.RateLimitResponse_OK
		if st.Code == policy.CodeOverLimit {
			ds.Code = rlsv3.RateLimitResponse_OVER_LIMIT
		}
		if !rlsLimited(st) {
			switch {
			case !rlsFree(st):
				granted = false
			case s.o.quotaTTL > 0:
				if until == nil {
					until = timestamppb.New(s.o.clock.Now().Add(s.o.quotaTTL))
				}
				ds.Quota = rlsGrant(until)
			}
			continue
		}
		granted = false
		lim, d := &lims[j], &st.Decision
		fillRLSLimit(lim, d.Kind, d.Limit)
		lim.Name = st.Rule
		if st.Tier != "" {
			lim.Name = st.Rule + "/" + st.Tier
		}
		ds.CurrentLimit = lim
		ds.LimitRemaining = rlsSat32(d.Remaining)
		if d.Kind != admit.KindConcurrency && (d.ResetAfter > 0 || !st.Skipped) {
			dur := &durs[j]
			dur.Seconds, dur.Nanos = int64(d.ResetAfter/time.Second), int32(d.ResetAfter%time.Second)
			ds.DurationUntilReset = dur
		}
		j++
	}
	if granted && n > 0 {
		out.Quota = rlsGrant(until)
	}
	switch s.o.headers {
	case rlsHeadersIETF:
		out.ResponseHeadersToAdd = rlsHeaders(&res.Decision)
	case rlsHeadersEnvoy:
		out.ResponseHeadersToAdd = rlsEnvoyHeaders(out.Statuses)
	}
	return out
}

// rlsAllocate allocates the messages of the answer to a request decided
// as res says: the response with room for a status per descriptor (sts,
// which out.Statuses points to), and a limit and a duration (lims, durs)
// per descriptor limited. The answer to one descriptor takes a single
// allocation (rlsOne).
func rlsAllocate(res *policy.Result) (out *rlsv3.RateLimitResponse, sts []rlsv3.RateLimitResponse_DescriptorStatus,
	lims []rlsv3.RateLimitResponse_RateLimit, durs []durationpb.Duration) {
	n := len(res.Statuses)
	limited := 0
	for i := range res.Statuses {
		if rlsLimited(&res.Statuses[i]) {
			limited++
		}
	}
	if n == 1 {
		one := new(rlsOne)
		out, sts, lims, durs = &one.out, one.st[:], one.lim[:limited], one.dur[:limited]
		out.Statuses = one.stp[:]
		return out, sts, lims, durs
	}
	out = new(rlsv3.RateLimitResponse)
	sts = make([]rlsv3.RateLimitResponse_DescriptorStatus, n)
	out.Statuses = make([]*rlsv3.RateLimitResponse_DescriptorStatus, n)
	if limited > 0 {
		lims = make([]rlsv3.RateLimitResponse_RateLimit, limited)
		durs = make([]durationpb.Duration, limited)
	}
	return out, sts, lims, durs
}

// rlsEnvoyHeaders returns envoyproxy/ratelimit's fields (RLSHeadersEnvoy)
// for statuses, choosing the descriptor as it does: the last one refused,
// else the first with the least remaining, among those with a limit; nil
// if none has one.
func rlsEnvoyHeaders(statuses []*rlsv3.RateLimitResponse_DescriptorStatus) []*corev3.HeaderValue {
	var pick *rlsv3.RateLimitResponse_DescriptorStatus
	over := false
	for _, st := range statuses {
		switch {
		case st.CurrentLimit == nil:
		case st.Code == rlsv3.RateLimitResponse_OVER_LIMIT:
			pick, over = st, true
		case !over && (pick == nil || st.LimitRemaining < pick.LimitRemaining):
			pick = st
		}
	}
	if pick == nil {
		return nil
	}
	reset := int64(0)
	if d := pick.DurationUntilReset; d != nil {
		reset = d.Seconds
		if d.Nanos > 0 {
			reset++
		}
	}
	f := new(rlsFields)
	f.hv[0].Key, f.hv[0].Value = "RateLimit-Limit", strconv.FormatUint(uint64(pick.CurrentLimit.RequestsPerUnit), 10)
	f.hv[1].Key, f.hv[1].Value = "RateLimit-Remaining", strconv.FormatUint(uint64(pick.LimitRemaining), 10)
	f.hv[2].Key, f.hv[2].Value = "RateLimit-Reset", strconv.FormatInt(reset, 10)
	return f.list(3)
}

// rlsLimited reports whether a limit applies to a descriptor of status st
// (and so whether its status reports one).
func rlsLimited(st *policy.Status) bool {
	return !st.Unlimited && !st.Exempt && !st.Replaced && st.Decision.Limit != (admit.Limit{}) && st.Decision.Limit.Rate != admit.Inf
}

// rlsFree reports whether a descriptor of status st that reports no limit
// (!rlsLimited) may be granted quota: it was admitted, and no failure
// policy decided it. Fail open admits with an unlimited decision while
// the store fails, and fail closed admits a peek with no limit: neither
// may be cached beyond the request (see policy.ErrStoreFailed).
func rlsFree(st *policy.Status) bool {
	return st.Code == policy.CodeOK && st.Err == nil
}

// rlsGrant is the quota granted to a descriptor nothing limits.
func rlsGrant(until *timestamppb.Timestamp) *rlsv3.RateLimitResponse_Quota {
	return &rlsv3.RateLimitResponse_Quota{
		Requests:            1<<32 - 1,
		ExpirationSpecifier: &rlsv3.RateLimitResponse_Quota_ValidUntil{ValidUntil: until},
	}
}

// rlsHeaders returns the IETF fields of decision d, nil if it has none.
func rlsHeaders(d *admit.Decision) []*corev3.HeaderValue {
	pol, state, retry, ok := httplimit.FieldValues(d)
	if !ok {
		return nil
	}
	f := new(rlsFields)
	f.hv[0].Key, f.hv[0].Value = grpcFieldRateLimitPolicy, pol
	f.hv[1].Key, f.hv[1].Value = grpcFieldRateLimit, state
	n := 2
	if retry != "" {
		f.hv[2].Key, f.hv[2].Value = grpcFieldRetryAfter, retry
		n = 3
	}
	return f.list(n)
}

// rlsFields holds the fields of an answer (at most three) and the list of
// them, allocated together.
type rlsFields struct {
	hv [3]corev3.HeaderValue
	p  [3]*corev3.HeaderValue
}

// list returns the first n fields of f.
func (f *rlsFields) list(n int) []*corev3.HeaderValue {
	for i := range n {
		f.p[i] = &f.hv[i]
	}
	return f.p[:n:n]
}
