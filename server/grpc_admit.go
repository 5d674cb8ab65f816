package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/server/admitv1"
)

// admitService is admit's own gRPC API, admit.v1.Admit
// (proto/admit/v1/admit.proto, Go code in package admitv1), over a policy
// engine: for applications, where Envoy's rate-limit service (RLS) is for
// proxies. It reports all the engine decides, and holds concurrency slots
// under leases.
//
//   - Check decides a request as RLS does (the same checks of the
//     request, the same semantics), with admit's costs: hits unset means 1
//     and 0 peeks, for the request and for each descriptor, from 0 to
//     MaxGRPCHits; an inline limit is rate per period with a burst (0: the
//     rate), enforced as the domain's policy.Override says. It answers the
//     decision (the deciding rule, kind, limit, remaining, retry and reset
//     times), one status per descriptor (with everything policy.Status
//     says: tier, shadow, exempt, unlimited, replaced, inline, skipped,
//     and error: "store failure" when a rule's failure policy decided
//     because its store failed, as the HTTP API says it),
//     the most restrictive refusal of the rules in shadow mode, and
//     whether the policy lacks the domain (which then limits nothing).
//     Concurrency caps are gates, as through RLS: admitted iff they have
//     room now, and nothing stays held.
//   - Acquire decides as Check does and keeps the slots the concurrency
//     caps grant under a lease of the lease table (see Leases and
//     WithGRPCLeases), until Release or the lease's end (the lease the
//     request asks for, or the table's default). A request that holds
//     nothing (refused, or no concurrency cap applied) gets no lease.
//   - Release gives the slots back, reporting the request's outcome
//     (success, failure, unknown) to the adaptive limits that learn from
//     it (compose.Held.Finish).
//
// The status codes are RLS's, and NOT_FOUND for a lease that is unknown,
// released or expired, RESOURCE_EXHAUSTED when the lease table is full,
// INVALID_ARGUMENT for a lease longer than the table allows.
//
// An admitService is safe for concurrent use. Create one with
// NewAdmitService; Close it when done (it closes the lease table it made).
type admitService struct {
	src       EngineSource
	o         grpcOptions
	leases    *leaseTable
	ownLeases bool
	pool      sync.Pool // *grpcScratch
	closeOnce sync.Once
}

// newAdmitService returns admit.v1's service deciding with the engine src
// gives at each request. Without WithGRPCLeases it makes a lease table of
// its own, whose goroutine Close stops. The error wraps
// admit.ErrInvalidConfig for an invalid option.
func newAdmitService(src EngineSource, opts ...grpcOption) (*admitService, error) {
	if src == nil {
		return nil, grpcOptionError("NewAdmitService: nil EngineSource")
	}
	o, err := newGRPCOptions(opts)
	if err != nil {
		return nil, err
	}
	s := &admitService{src: src, o: o, leases: o.leases}
	if s.leases == nil {
		if s.leases, err = newLeases(withLeaseClock(o.clock)); err != nil {
			return nil, err
		}
		s.ownLeases = true
	}
	s.pool.New = func() any { return new(grpcScratch) }
	return s, nil
}

// Leases returns the lease table of the service's leases.
func (s *admitService) table() *leaseTable { return s.leases }

// Close closes the lease table the service made (giving back the slots of
// every lease), not one given by WithGRPCLeases. Close is idempotent and
// returns nil.
func (s *admitService) Close() error {
	s.closeOnce.Do(func() {
		if s.ownLeases {
			_ = s.leases.Close()
		}
	})
	return nil
}

// Register registers the service on r (a *grpc.Server) as admit.v1.Admit.
func (s *admitService) Register(r grpc.ServiceRegistrar) {
	admitv1.RegisterAdmitServer(r, admitServer{s: s})
}

// prepare returns the engine in force and a scratch holding the request
// of domain, ds and hits, checked; the caller puts the scratch back. The
// error is a gRPC status: UNAVAILABLE without a policy, INVALID_ARGUMENT
// for a bad request.
func (s *admitService) prepare(domain string, ds []*admitv1.Descriptor, hits *int64) (*policy.Engine, *grpcScratch, error) {
	e := s.src.Engine()
	if e == nil {
		return nil, nil, status.Error(codes.Unavailable, errNoEngine.Error())
	}
	sc := s.pool.Get().(*grpcScratch)
	if err := s.o.admitRequest(domain, ds, hits, sc); err != nil {
		s.put(sc)
		return nil, nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return e, sc, nil
}

// Check decides a request (see AdmitService).
func (s *admitService) Check(ctx context.Context, r *admitv1.CheckRequest) (*admitv1.CheckResponse, error) {
	if err := grpcMalformed(r); err != nil {
		return nil, err
	}
	var hits *int64
	if r != nil {
		hits = r.Hits
	}
	e, sc, err := s.prepare(r.GetDomain(), r.GetDescriptors(), hits)
	if err != nil {
		return nil, err
	}
	defer s.put(sc)
	err = e.Check(ctx, &sc.req, &sc.held, &sc.res)
	sc.held.Release() // concurrency caps are gates through Check
	if err != nil {
		return nil, grpcCheckError(err)
	}
	out := &admitv1.CheckResponse{UnknownDomain: !e.HasDomain(sc.req.Domain)}
	out.Decision, out.Statuses, out.ShadowRefused, out.Shadow = admitResult(&sc.res)
	return out, nil
}

// Reset gives a client its limits back (see policy.Engine.Reset), when
// WithGRPCReset allows it.
func (s *admitService) Reset(ctx context.Context, r *admitv1.ResetRequest) (*admitv1.ResetResponse, error) {
	if err := grpcMalformed(r); err != nil {
		return nil, err
	}
	if !s.o.reset {
		return nil, status.Error(codes.PermissionDenied, "reset is not enabled on this server (admit serve --allow-reset)")
	}
	e, sc, err := s.prepare(r.GetDomain(), r.GetDescriptors(), nil)
	if err != nil {
		return nil, err
	}
	defer s.put(sc)
	n, err := e.Reset(ctx, &sc.req)
	switch {
	case err == nil:
		who := ""
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			who = p.Addr.String()
		}
		auditReset(ctx, s.o.log, "grpc", who, &sc.req, n)
		return &admitv1.ResetResponse{LimitsReset: int64(n)}, nil
	case errors.Is(err, policy.ErrInvalidRequest), errors.Is(err, admit.ErrClosed):
		return nil, grpcCheckError(err)
	}
	return nil, status.Errorf(codes.Unavailable, "%d limits reset, but not all: a store failed; retry (%v)", n, err)
}

// Acquire decides a request and keeps its slots under a lease (see
// AdmitService).
func (s *admitService) Acquire(ctx context.Context, r *admitv1.AcquireRequest) (*admitv1.AcquireResponse, error) {
	if err := grpcMalformed(r); err != nil {
		return nil, err
	}
	var hits *int64
	if r != nil {
		hits = r.Hits
	}
	e, sc, err := s.prepare(r.GetDomain(), r.GetDescriptors(), hits)
	if err != nil {
		return nil, err
	}
	defer s.put(sc)
	var ttl time.Duration
	if d := r.GetLease(); d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, status.Error(codes.InvalidArgument, grpcBad("lease: %v", err).Error())
		}
		if ttl = d.AsDuration(); ttl <= 0 {
			return nil, status.Error(codes.InvalidArgument, grpcBad("lease: %v is not positive", ttl).Error())
		}
	}
	ls, err := s.leases.Acquire(ctx, e, &sc.req, ttl, &sc.res)
	if err != nil {
		return nil, grpcLeaseError(err)
	}
	out := &admitv1.AcquireResponse{UnknownDomain: !e.HasDomain(sc.req.Domain), LeaseId: ls.ID}
	out.Decision, out.Statuses, out.ShadowRefused, out.Shadow = admitResult(&sc.res)
	if ls.ID != "" {
		out.ExpiresAt = timestamppb.New(ls.Expires)
	}
	return out, nil
}

// Release gives back the slots of a lease (see AdmitService).
func (s *admitService) Release(ctx context.Context, r *admitv1.ReleaseRequest) (*admitv1.ReleaseResponse, error) {
	if err := grpcMalformed(r); err != nil {
		return nil, err
	}
	id := r.GetLeaseId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, grpcBad("lease_id is required").Error())
	}
	var err error
	switch r.GetOutcome() {
	case admitv1.Outcome_OUTCOME_UNSPECIFIED:
		err = s.leases.Release(ctx, id)
	case admitv1.Outcome_OUTCOME_SUCCESS:
		err = s.leases.Finish(ctx, id, false)
	case admitv1.Outcome_OUTCOME_FAILURE:
		err = s.leases.Finish(ctx, id, true)
	default:
		return nil, status.Error(codes.InvalidArgument, grpcBad("outcome %d is not a known outcome", int32(r.GetOutcome())).Error())
	}
	if err != nil {
		return nil, grpcLeaseError(err)
	}
	return &admitv1.ReleaseResponse{}, nil
}

func (s *admitService) put(sc *grpcScratch) {
	sc.reset()
	s.pool.Put(sc)
}

// grpcLeaseError is the gRPC status of an error of the lease table, or of
// the check it made.
func grpcLeaseError(err error) error {
	switch {
	case errors.Is(err, errLeaseNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, errTooManyLeases):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, errInvalidTTL):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, errLeasesClosed), errors.Is(err, errLeaseStore):
		return status.Error(codes.Unavailable, err.Error())
	}
	return grpcCheckError(err)
}

// admitRequest converts an admit.v1 request into sc.req, checking it as
// rlsRequest does, with admit's costs: unset is 1 (the request) or the
// request's (a descriptor), 0 peeks, from 0 to MaxGRPCHits.
func (o *grpcOptions) admitRequest(domain string, ds []*admitv1.Descriptor, hits *int64, sc *grpcScratch) error {
	if err := o.checkShape(domain, len(ds), func(i int) int { return len(ds[i].GetEntries()) }); err != nil {
		return err
	}
	n := 0
	for _, d := range ds {
		n += len(d.Entries)
	}
	sc.req = policy.Request{Domain: domain, Hits: 1}
	if hits != nil {
		if *hits < 0 || *hits > maxGRPCHits {
			return grpcBad("hits: %d is outside [0, 2^53]", *hits)
		}
		sc.req.Hits = *hits
	}
	sc.descs = grpcGrow(sc.descs, len(ds))
	sc.entries = grpcGrow(sc.entries, n)[:0]
	for i, d := range ds {
		pd := &sc.descs[i]
		*pd = policy.Descriptor{}
		start := len(sc.entries)
		for j, e := range d.Entries {
			if err := o.checkEntry(e.GetKey(), e.GetValue()); err != nil {
				return grpcBad("descriptors[%d].entries[%d]: %v", i, j, err)
			}
			sc.entries = append(sc.entries, policy.Entry{Key: e.Key, Value: e.Value})
		}
		pd.Entries = sc.entries[start:len(sc.entries):len(sc.entries)]
		if d.Hits != nil {
			if h := *d.Hits; h < 0 || h > maxGRPCHits {
				return grpcBad("descriptors[%d].hits: %d is outside [0, 2^53]", i, h)
			}
			pd.Hits, pd.OwnHits = *d.Hits, true
		}
		if d.Limit != nil {
			l, err := admitLimit(d.Limit)
			if err != nil {
				return grpcBad("descriptors[%d].limit: %v", i, err)
			}
			sc.setLimit(i, len(ds), l)
		}
	}
	sc.req.Descriptors = sc.descs
	return nil
}

// admitLimit is the admit.Limit of an admit.v1 inline limit.
func admitLimit(l *admitv1.Limit) (admit.Limit, error) {
	out := admit.Limit{Rate: l.Rate, Burst: l.Burst}
	if p := l.Period; p != nil {
		if err := p.CheckValid(); err != nil {
			return admit.Limit{}, err
		}
		out.Period = p.AsDuration()
	}
	if err := out.Validate(); err != nil {
		return admit.Limit{}, err
	}
	return out, nil
}

// admitResult converts an engine's result.
func admitResult(res *policy.Result) (*admitv1.Decision, []*admitv1.Status, bool, *admitv1.Decision) {
	n := len(res.Statuses)
	sts := make([]admitv1.Status, n)
	out := make([]*admitv1.Status, n)
	for i := range res.Statuses {
		st := &res.Statuses[i]
		as := &sts[i]
		out[i] = as
		as.Code = admitv1.Code_CODE_OK
		if st.Code == policy.CodeOverLimit {
			as.Code = admitv1.Code_CODE_OVER_LIMIT
		}
		as.Rule, as.Tier = st.Rule, st.Tier
		as.Shadow, as.WouldRefuse = st.Shadow, st.WouldRefuse
		as.Exempt, as.Unlimited, as.Replaced, as.Override, as.Skipped = st.Exempt, st.Unlimited, st.Replaced, st.Override, st.Skipped
		if st.Err != nil {
			as.Error = apiErrorKind(st.Err)
		}
		if d := &st.Decision; rlsLimited(st) {
			as.Kind = admitKind(d.Kind)
			as.Limit = admitLimitOf(d.Limit)
			as.Remaining = d.Remaining
			as.RetryAfter = admitDuration(d.RetryAfter)
			as.ResetAfter = admitDuration(d.ResetAfter)
		} else if st.Unlimited {
			as.Remaining = d.Remaining
		}
	}
	var shadow *admitv1.Decision
	if res.ShadowRefused {
		shadow = admitDecision(&res.Shadow)
	}
	return admitDecision(&res.Decision), out, res.ShadowRefused, shadow
}

// admitDecision converts a decision.
func admitDecision(d *admit.Decision) *admitv1.Decision {
	out := &admitv1.Decision{Allowed: d.Allowed, Rule: d.Rule, Remaining: d.Remaining}
	if d.Limit.Rate == admit.Inf {
		out.Unlimited = true
		return out
	}
	out.Kind = admitKind(d.Kind)
	out.Limit = admitLimitOf(d.Limit)
	out.RetryAfter = admitDuration(d.RetryAfter)
	out.ResetAfter = admitDuration(d.ResetAfter)
	return out
}

func admitKind(k admit.Kind) admitv1.Kind {
	switch k {
	case admit.KindConcurrency:
		return admitv1.Kind_KIND_CONCURRENCY
	case admit.KindQuota:
		return admitv1.Kind_KIND_QUOTA
	}
	return admitv1.Kind_KIND_RATE
}

func admitLimitOf(l admit.Limit) *admitv1.Limit {
	out := &admitv1.Limit{Rate: l.Rate, Burst: l.Burst}
	if l.Period != 0 {
		out.Period = durationpb.New(l.Period)
	}
	return out
}

// admitDuration converts a duration; admit.InfDuration ("never") is nil.
func admitDuration(d time.Duration) *durationpb.Duration {
	if d == admit.InfDuration {
		return nil
	}
	return durationpb.New(d)
}

// admitServer adapts an AdmitService to the generated interface, whose
// implementations must embed UnimplementedAdmitServer (which would
// otherwise be an exported field of AdmitService).
type admitServer struct {
	admitv1.UnimplementedAdmitServer
	s *admitService
}

func (a admitServer) Check(ctx context.Context, r *admitv1.CheckRequest) (*admitv1.CheckResponse, error) {
	return a.s.Check(ctx, r)
}

func (a admitServer) Acquire(ctx context.Context, r *admitv1.AcquireRequest) (*admitv1.AcquireResponse, error) {
	return a.s.Acquire(ctx, r)
}

func (a admitServer) Release(ctx context.Context, r *admitv1.ReleaseRequest) (*admitv1.ReleaseResponse, error) {
	return a.s.Release(ctx, r)
}

func (a admitServer) Reset(ctx context.Context, r *admitv1.ResetRequest) (*admitv1.ResetResponse, error) {
	return a.s.Reset(ctx, r)
}
