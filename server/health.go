package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// DefaultProbeTimeout is the default bound on each readiness probe (see
// WithProbeTimeout).
const DefaultProbeTimeout = time.Second

// HealthzHandler returns the handler of /healthz, the liveness check: 200
// with {"status":"ok"} to GET and HEAD as long as the process serves HTTP
// at all; 405 to other methods. It checks nothing else, so that an
// orchestrator restarts the process only when it is stuck, never because
// a dependency is down (that is /readyz's business).
func HealthzHandler() http.Handler { return healthzHandler{} }

type healthzHandler struct{}

func (healthzHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !healthGetOrHead(w, r) {
		return
	}
	w.Header()[apiKeyContentType] = apiJSONContentType
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write([]byte("{\"status\":\"ok\"}\n"))
}

// healthGetOrHead answers 405 to a request that is neither GET nor HEAD.
func healthGetOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	apiWriteError(w, &apiError{http.StatusMethodNotAllowed, apiCodeMethodNotAllowed, r.Method + " is not allowed: use GET"})
	return false
}

// Readiness is the readiness check of the service, /readyz: the service
// is ready when its EngineSource holds an engine (a policy is loaded) and
// each probe (WithProbe: a Redis PING, say) succeeds within its timeout —
// or, with WithDegradedReady, when the probes fail but the policy's
// failure policies decide requests meanwhile (the service then answers,
// only less precisely, and reports itself degraded).
//
// As an http.Handler it answers GET and HEAD with 200 when ready and 503
// when not, and a JSON body saying why:
//
//	{"status":"ready","policy":"loaded","probes":{"redis":"ok"}}
//	{"status":"degraded","policy":"loaded","probes":{"redis":"dial tcp ...: connection refused"}}
//	{"status":"not ready","policy":"none","probes":{}}
//
// Check gives the same verdict to other callers (a gRPC health service).
// A Readiness is safe for concurrent use; it starts no goroutine.
type Readiness struct {
	src      EngineSource
	probes   []readyProbe
	timeout  time.Duration
	degraded bool
}

type readyProbe struct {
	name string
	f    func(context.Context) error
}

// ReadyOption configures a Readiness (see NewReadiness). The zero set of
// options gives the defaults documented on each option.
type ReadyOption interface {
	apply(*readyOptions)
}

type readyOptions struct {
	probes   []readyProbe
	timeout  time.Duration
	degraded bool
	err      error
}

type readyOptionFunc func(*readyOptions)

func (f readyOptionFunc) apply(o *readyOptions) { f(o) }

// WithProbe adds a dependency the service needs, checked by f on each
// readiness check: a Redis PING (client.Ping(ctx).Err()), say. f must
// return once its context is done (WithProbeTimeout); its error, or an
// answer after the timeout, fails the check. name names it in the report
// and must be unique. The default is no probe.
func WithProbe(name string, f func(ctx context.Context) error) ReadyOption {
	return readyOptionFunc(func(o *readyOptions) {
		if name == "" || f == nil {
			o.fail("WithProbe(%q): want a name and a function", name)
			return
		}
		for _, p := range o.probes {
			if p.name == name {
				o.fail("WithProbe(%q): the name is taken", name)
				return
			}
		}
		o.probes = append(o.probes, readyProbe{name, f})
	})
}

// WithProbeTimeout bounds each probe: one that has not answered after d
// has failed. The default is DefaultProbeTimeout; d must be positive.
func WithProbeTimeout(d time.Duration) ReadyOption {
	return readyOptionFunc(func(o *readyOptions) {
		if d <= 0 {
			o.fail("WithProbeTimeout(%v): want a positive timeout", d)
			return
		}
		o.timeout = d
	})
}

// WithDegradedReady says whether failing probes leave the service ready
// (status "degraded", 200): true when every rule kept in the store probed
// has a failure policy (fail open, fail closed or a local fallback), so
// that requests are still decided while it is down. The default is false:
// a failing probe makes the service not ready (503).
func WithDegradedReady(on bool) ReadyOption {
	return readyOptionFunc(func(o *readyOptions) { o.degraded = on })
}

func (o *readyOptions) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidAPIOption}, args...)...)
	}
}

// NewReadiness returns the readiness check of a service deciding with
// the engines of src. The error wraps ErrInvalidAPIOption for an invalid
// option or a nil src.
func NewReadiness(src EngineSource, opts ...ReadyOption) (*Readiness, error) {
	o := readyOptions{timeout: DefaultProbeTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if src == nil {
		o.fail("NewReadiness: nil EngineSource")
	}
	if o.err != nil {
		return nil, o.err
	}
	return &Readiness{src: src, probes: o.probes, timeout: o.timeout, degraded: o.degraded}, nil
}

// ReadyReport is the outcome of a readiness check.
type ReadyReport struct {
	// Ready reports whether the service should get traffic; Degraded that
	// it is ready although a probe failed (WithDegradedReady).
	Ready    bool
	Degraded bool
	// Policy reports whether a policy is loaded.
	Policy bool
	// Probes has the error of each probe, by name, nil for those that
	// succeeded, in the order they were given.
	Probes []ProbeResult
}

// ProbeResult is the outcome of one probe.
type ProbeResult struct {
	Name string
	Err  error
}

// Report runs the probes, one after the other, each bounded by the probe
// timeout and ctx, and says whether the service is ready.
func (r *Readiness) Report(ctx context.Context) ReadyReport {
	rep := ReadyReport{Policy: r.src.Engine() != nil, Probes: make([]ProbeResult, len(r.probes))}
	failed := false
	for i, p := range r.probes {
		rep.Probes[i] = ProbeResult{Name: p.name, Err: runReadyProbe(ctx, p.f, r.timeout)}
		failed = failed || rep.Probes[i].Err != nil
	}
	rep.Ready = rep.Policy && (!failed || r.degraded)
	rep.Degraded = rep.Ready && failed
	return rep
}

// runReadyProbe runs f with a context ending after timeout; a panic is its
// failure, as is an answer after the timeout.
func runReadyProbe(ctx context.Context, f func(context.Context) error, timeout time.Duration) (err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("probe panicked: %v", p)
		}
	}()
	err = f(ctx)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("no answer within %v: %w", timeout, ctx.Err())
	}
	return err
}

// Check returns nil if the service is ready, else an error wrapping
// ErrNotReady (and ErrNoEngine when no policy is loaded) saying why.
func (r *Readiness) Check(ctx context.Context) error {
	rep := r.Report(ctx)
	if rep.Ready {
		return nil
	}
	if !rep.Policy {
		return fmt.Errorf("%w: %w", ErrNotReady, ErrNoEngine)
	}
	var why []string
	for _, p := range rep.Probes {
		if p.Err != nil {
			why = append(why, p.Name+": "+p.Err.Error())
		}
	}
	return fmt.Errorf("%w: %s", ErrNotReady, strings.Join(why, "; "))
}

// ServeHTTP answers /readyz.
func (r *Readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !healthGetOrHead(w, req) {
		return
	}
	rep := r.Report(req.Context())
	b := make([]byte, 0, 128)
	b = append(b, `{"status":`...)
	switch {
	case rep.Degraded:
		b = append(b, `"degraded"`...)
	case rep.Ready:
		b = append(b, `"ready"`...)
	default:
		b = append(b, `"not ready"`...)
	}
	if rep.Policy {
		b = append(b, `,"policy":"loaded"`...)
	} else {
		b = append(b, `,"policy":"none"`...)
	}
	b = append(b, `,"probes":{`...)
	for i, p := range rep.Probes {
		if i > 0 {
			b = append(b, ',')
		}
		b = apiAppendJSONString(b, p.Name)
		b = append(b, ':')
		if p.Err == nil {
			b = append(b, `"ok"`...)
		} else {
			b = apiAppendJSONString(b, p.Err.Error())
		}
	}
	b = append(b, "}}\n"...)
	h := w.Header()
	h[apiKeyContentType] = apiJSONContentType
	h.Set("Cache-Control", "no-store")
	status := http.StatusOK
	if !rep.Ready {
		status = http.StatusServiceUnavailable
	}
	w.WriteHeader(status)
	if req.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}
