package policy

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/httplimit"
)

// HTTPEntry is one entry of a descriptor that HTTP requests carry: the
// descriptor key, and how to find its value in a request.
type HTTPEntry struct {
	// Key is the entry's descriptor key, such as "remote_address",
	// "user", "tenant" or "route". Not empty.
	Key string

	// Value finds the entry's value in a request: httplimit.RemoteIP or a
	// ClientIP's Key, httplimit.Header, httplimit.Route,
	// httplimit.FromContext, httplimit.Const... Not nil.
	Value httplimit.KeyFunc

	// Required makes a request without this value (Value returns an error
	// wrapping httplimit.ErrNoKey) a request that cannot be decided: the
	// middleware refuses it with 400, or serves it without any limit
	// under httplimit.Config.SkipUnkeyed. When false, the descriptor is left
	// out of such a request, so the rules matching it do not apply (a
	// per-user limit skips anonymous requests). A value that is present
	// but repeated, empty or malformed (an error wrapping
	// httplimit.ErrBadKey) never leaves the descriptor out, Required or
	// not: the request is refused with 400, so that a client cannot escape
	// its own limit by repeating the header it is keyed by.
	Required bool
}

// HTTPDescriptor is a descriptor that HTTP requests carry: its entries,
// outermost first. A descriptor is sent only when every entry has a value.
type HTTPDescriptor []HTTPEntry

// HTTP decides HTTP requests with an Engine: it derives each request's
// descriptors from the request (client address, headers, route, user...)
// and checks them against one domain of the engine's policy, one event per
// request. It is an httplimit.Decider, so httplimit.NewDecider turns it
// into net/http middleware, which writes the decision's fields and the
// refusals.
//
// The engine can be replaced while requests are being decided (SetEngine),
// as a server reloading its policy does. An HTTP is safe for concurrent
// use; create one with NewHTTP.
type HTTP struct {
	engine  atomic.Pointer[Engine]
	domain  string
	descs   []HTTPDescriptor
	entries int // total entries, the capacity of a scratch's entry array
	pool    sync.Pool
}

// httpScratch is the per-request state of HTTP.Decide, pooled.
type httpScratch struct {
	req     Request
	res     Result
	entries []Entry
}

// NewHTTP returns the Decider checking requests against domain of e, each
// request carrying the descriptors of descs that it has values for. It
// fails with admit.ErrInvalidConfig for a nil engine, no descriptors, an empty
// descriptor, an entry without a key or a value, or a domain e's policy
// does not have.
func NewHTTP(e *Engine, domain string, descs ...HTTPDescriptor) (*HTTP, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: policy: NewHTTP: nil engine", admit.ErrInvalidConfig)
	}
	if !e.HasDomain(domain) {
		return nil, fmt.Errorf("%w: policy: NewHTTP: the policy has no domain %q", admit.ErrInvalidConfig, domain)
	}
	if len(descs) == 0 {
		return nil, fmt.Errorf("%w: policy: NewHTTP: no descriptors", admit.ErrInvalidConfig)
	}
	h := &HTTP{domain: domain, descs: make([]HTTPDescriptor, len(descs))}
	for i, d := range descs {
		if len(d) == 0 {
			return nil, fmt.Errorf("%w: policy: NewHTTP: descriptor %d has no entries", admit.ErrInvalidConfig, i)
		}
		for j, en := range d {
			if en.Key == "" || en.Value == nil {
				return nil, fmt.Errorf("%w: policy: NewHTTP: descriptor %d, entry %d: needs a key and a value", admit.ErrInvalidConfig, i, j)
			}
		}
		h.descs[i] = append(HTTPDescriptor(nil), d...)
		h.entries += len(d)
	}
	h.engine.Store(e)
	n := len(descs)
	h.pool.New = func() any {
		s := &httpScratch{entries: make([]Entry, 0, h.entries)}
		s.req.Descriptors = make([]Descriptor, 0, n)
		s.req.Domain = domain
		return s
	}
	return h, nil
}

// Engine returns the engine deciding requests.
func (h *HTTP) Engine() *Engine { return h.engine.Load() }

// SetEngine makes e decide the requests from now on (requests being
// decided finish with the engine they started with). e must have h's
// domain; a nil e, or one without the domain, is refused with
// admit.ErrInvalidConfig and the engine is not replaced.
func (h *HTTP) SetEngine(e *Engine) error {
	if e == nil || !e.HasDomain(h.domain) {
		return fmt.Errorf("%w: policy: SetEngine: the new engine has no domain %q", admit.ErrInvalidConfig, h.domain)
	}
	h.engine.Store(e)
	return nil
}

// Decide decides r: it builds r's descriptors and checks them, one event,
// against the engine's domain, recording the slots of concurrency caps in
// held (see Engine.Check). The decision is the request's (the refusing
// limit's, or the most restrictive of those asked). The error wraps
// httplimit.ErrNoKey for a request without a Required value,
// admit.ErrKeyTooLong for a value too long, and is otherwise the engine's.
func (h *HTTP) Decide(r *http.Request, held *compose.Held) (admit.Decision, error) {
	s := h.pool.Get().(*httpScratch)
	d, err := h.decide(r, held, s)
	clear(s.entries)
	s.entries = s.entries[:0]
	clear(s.req.Descriptors)
	s.req.Descriptors = s.req.Descriptors[:0]
	h.pool.Put(s)
	return d, err
}

func (h *HTTP) decide(r *http.Request, held *compose.Held, s *httpScratch) (admit.Decision, error) {
	for _, d := range h.descs {
		start := len(s.entries)
		found := true
		for _, en := range d {
			v, err := en.Value(r)
			if err != nil {
				if !en.Required && errors.Is(err, httplimit.ErrNoKey) && !errors.Is(err, httplimit.ErrBadKey) {
					found = false
					break
				}
				return refusal, err
			}
			s.entries = append(s.entries, Entry{Key: en.Key, Value: v})
		}
		if !found {
			s.entries = s.entries[:start]
			continue
		}
		end := len(s.entries)
		s.req.Descriptors = append(s.req.Descriptors, Descriptor{Entries: s.entries[start:end:end]})
	}
	s.req.Hits = 1
	if len(s.req.Descriptors) == 0 {
		return allowAll, nil
	}
	err := h.engine.Load().Check(r.Context(), &s.req, held, &s.res)
	return s.res.Decision, err
}
