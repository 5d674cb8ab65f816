package server

import (
	"fmt"
	"math"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/internal/envoyunit"
	"github.com/admit-go/admit/policy"
)

// grpcScratch is the per-request state of a check through the gRPC
// APIs: the engine's request and result, the Held of concurrency slots,
// and the backing arrays of the request's descriptors, entries and inline
// limits. Pooled, so that the conversion allocates nothing once warm.
type grpcScratch struct {
	req     policy.Request
	res     policy.Result
	held    compose.Held
	descs   []policy.Descriptor
	entries []policy.Entry
	limits  []admit.Limit
}

// grpcMaxPooledEntries bounds the entries a pooled scratch keeps capacity for.
const grpcMaxPooledEntries = 1 << 12

// reset forgets the request (keeping the capacity of its arrays, unless
// they grew beyond what is worth keeping).
func (sc *grpcScratch) reset() {
	clear(sc.descs)
	clear(sc.entries)
	sc.req = policy.Request{}
	if cap(sc.entries) > grpcMaxPooledEntries {
		sc.entries = nil
	}
	if cap(sc.descs) > grpcMaxPooledEntries {
		sc.descs, sc.limits = nil, nil
	}
}

// grpcBad returns an ErrBadGRPCRequest saying what is wrong.
func grpcBad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadGRPCRequest}, args...)...)
}

// rlsRequest converts Envoy's request r into sc.req, checking it:
//
//   - domain is required, and no longer than the longest value;
//   - at least one descriptor and at most the maximum; each has from one
//     to the maximum of entries, with non-empty keys, keys and values no
//     longer than the maximum;
//   - the request's hits_addend counts 0 as 1 (Envoy's "not set"); a
//     descriptor's hits_addend, when set, is its own cost, 0 peeking,
//     at most MaxGRPCHits; is_negative_hits (giving events back) is
//     refused;
//   - a descriptor's limit is requests_per_unit per unit × unit_multiplier
//     (unset: 1; 0 is refused), as a limit with the burst equal to the
//     requests (envoyunit.Limit); its unit must be a known one.
//
// Any other request is an ErrBadGRPCRequest naming the field.
func (o *grpcOptions) rlsRequest(r *rlsv3.RateLimitRequest, sc *grpcScratch) error {
	ds := r.GetDescriptors()
	if err := o.checkShape(r.GetDomain(), len(ds), func(i int) int { return len(ds[i].GetEntries()) }); err != nil {
		return err
	}
	n := 0
	for _, d := range ds {
		n += len(d.Entries)
	}
	sc.descs = grpcGrow(sc.descs, len(ds))
	sc.entries = grpcGrow(sc.entries, n)[:0]
	hits := int64(r.GetHitsAddend())
	if hits == 0 {
		hits = 1
	}
	sc.req = policy.Request{Domain: r.Domain, Hits: hits}
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
		if h := d.HitsAddend; h != nil {
			if h.Value > maxGRPCHits {
				return grpcBad("descriptors[%d].hits_addend: %d is more than the maximum, 2^53", i, h.Value)
			}
			pd.Hits, pd.OwnHits = int64(h.Value), true
		}
		if d.IsNegativeHits {
			return grpcBad("descriptors[%d].is_negative_hits: giving events back is not supported", i)
		}
		if d.Limit != nil {
			l, err := rlsOverrideLimit(d.Limit)
			if err != nil {
				return grpcBad("descriptors[%d].limit: %v", i, err)
			}
			sc.setLimit(i, len(ds), l)
		}
	}
	sc.req.Descriptors = sc.descs
	return nil
}

// checkShape checks a request's domain, its number of descriptors nd, and
// the number of entries of each (entries(i)).
func (o *grpcOptions) checkShape(domain string, nd int, entries func(i int) int) error {
	switch {
	case domain == "":
		return grpcBad("domain is required")
	case len(domain) > o.maxValue:
		return grpcBad("domain of %d bytes: the maximum is %d", len(domain), o.maxValue)
	case nd == 0:
		return grpcBad("descriptors: at least one is required")
	case nd > o.maxDescriptors:
		return grpcBad("%d descriptors: the maximum is %d", nd, o.maxDescriptors)
	}
	for i := range nd {
		switch ne := entries(i); {
		case ne == 0:
			return grpcBad("descriptors[%d]: at least one entry is required", i)
		case ne > o.maxEntries:
			return grpcBad("descriptors[%d]: %d entries: the maximum is %d", i, ne, o.maxEntries)
		}
	}
	return nil
}

// setLimit makes l the inline limit of descriptor i of nd.
func (sc *grpcScratch) setLimit(i, nd int, l admit.Limit) {
	if cap(sc.limits) < nd {
		sc.limits = make([]admit.Limit, max(nd, cap(sc.descs)))
	}
	sc.limits = sc.limits[:cap(sc.limits)]
	sc.limits[i] = l
	sc.descs[i].Limit = &sc.limits[i]
}

// checkEntry checks a descriptor entry's key and value.
func (o *grpcOptions) checkEntry(key, value string) error {
	switch {
	case key == "":
		return fmt.Errorf("key is empty")
	case len(key) > o.maxValue:
		return fmt.Errorf("key of %d bytes: the maximum is %d", len(key), o.maxValue)
	case len(value) > o.maxValue:
		return fmt.Errorf("value of %d bytes: the maximum is %d", len(value), o.maxValue)
	}
	return nil
}

// rlsOverrideLimit is the limit of Envoy's descriptor limit override.
func rlsOverrideLimit(lo *ratelimitv3.RateLimitDescriptor_RateLimitOverride) (admit.Limit, error) {
	u := envoyunit.Unit(lo.Unit)
	l, err := envoyunit.Limit(lo.RequestsPerUnit, u)
	if err != nil {
		return admit.Limit{}, fmt.Errorf("unit %d is not a known unit", int32(lo.Unit))
	}
	if m := lo.UnitMultiplier; m != nil {
		if m.Value == 0 {
			return admit.Limit{}, fmt.Errorf("unit_multiplier is 0")
		}
		if int64(l.Period) > math.MaxInt64/int64(m.Value) {
			return admit.Limit{}, fmt.Errorf("%d × %v is too long a period", m.Value, u)
		}
		l.Period *= time.Duration(m.Value)
	}
	return l, nil
}

// grpcGrow returns s with length n, reusing its array if it is large enough.
// The elements are not cleared.
func grpcGrow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
