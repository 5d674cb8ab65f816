package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// defaultProbeTimeout is the default bound on a readiness check (see
// WithProbeTimeout): half of Kubernetes' default probe timeout (1 s), so
// that /readyz answers in time for it even when a store does not answer.
const defaultProbeTimeout = 500 * time.Millisecond

// healthz returns the handler of /healthz, the liveness check: 200
// with {"status":"ok"} to GET and HEAD as long as the process serves HTTP
// at all; 405 to other methods. It checks nothing else, so that an
// orchestrator restarts the process only when it is stuck, never because
// a dependency is down (that is /readyz's business).
func healthz() http.Handler { return healthzHandler{} }

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

// readiness is the readiness check of the service, /readyz: the service
// is ready when its EngineSource holds an engine (a policy is loaded) and
// each probe (WithProbe: a Redis PING, say) succeeds within the probe
// timeout — or, with WithDegradedReady, when the probes fail but the
// policy's failure policies decide requests meanwhile (the service then
// answers, only less precisely, and reports itself degraded).
//
// As an http.Handler it answers GET and HEAD with 200 when ready and 503
// when not, and a JSON body saying why:
//
//	{"status":"ready","policy":"loaded","probes":{"redis":"ok"}}
//	{"status":"degraded","policy":"loaded","probes":{"redis":"dial tcp ...: connection refused"}}
//	{"status":"not ready","policy":"none","probes":{}}
//
// Check gives the same verdict to other callers (a gRPC health service).
//
// A check answers within the probe timeout whatever its probes do: they
// run at once, each in a goroutine of its own, and one that has not
// returned by the timeout has failed, even if it ignores its context (as a
// go-redis client does by default, waiting for its ReadTimeout). A probe
// runs at most once at a time: a check that finds it still running waits
// for that run (within its own timeout) instead of starting another, so a
// probe stuck on a store that does not answer holds one goroutine, not
// one per check. A readiness is safe for concurrent use.
type readiness struct {
	src      EngineSource
	probes   []*readyProbe
	timeout  time.Duration
	degraded bool
}

// readyProbe is a probe and its run in progress.
type readyProbe struct {
	name string
	f    func(context.Context) error

	mu  sync.Mutex
	run *probeRun // the run in progress, or nil
}

// probeRun is one run of a probe: err is set before done is closed.
type probeRun struct {
	done chan struct{}
	err  error
}

// readyOption configures a Readiness (see NewReadiness). The zero set of
// options gives the defaults documented on each option.
type readyOption interface {
	apply(*readyOptions)
}

type readyOptions struct {
	probes   []*readyProbe
	timeout  time.Duration
	degraded bool
	err      error
}

type readyOptionFunc func(*readyOptions)

func (f readyOptionFunc) apply(o *readyOptions) { f(o) }

// withProbe adds a dependency the service needs, checked by f on each
// readiness check: a Redis PING (client.Ping(ctx).Err()), say. Its
// error, a panic, or no answer within the timeout (WithProbeTimeout) fails
// the check. f should return once its context is done; until one that
// does not returns, later checks wait for it (up to their timeout) rather
// than call it again. name names it in the report and must be unique. The
// default is no probe.
func withProbe(name string, f func(ctx context.Context) error) readyOption {
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
		o.probes = append(o.probes, &readyProbe{name: name, f: f})
	})
}

// withProbeTimeout bounds each check, and so each of its probes: one that
// has not answered after d has failed. The default is DefaultProbeTimeout;
// d must be positive. Keep it below the timeout of whatever calls
// /readyz (Kubernetes' timeoutSeconds, 1 s by default).
func withProbeTimeout(d time.Duration) readyOption {
	return readyOptionFunc(func(o *readyOptions) {
		if d <= 0 {
			o.fail("WithProbeTimeout(%v): want a positive timeout", d)
			return
		}
		o.timeout = d
	})
}

// withDegradedReady says whether failing probes leave the service ready
// (status "degraded", 200): true when every rule kept in the store probed
// has a failure policy (fail open, fail closed or a local fallback), so
// that requests are still decided while it is down. The default is false:
// a failing probe makes the service not ready (503).
func withDegradedReady(on bool) readyOption {
	return readyOptionFunc(func(o *readyOptions) { o.degraded = on })
}

func (o *readyOptions) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{errInvalidConfig}, args...)...)
	}
}

// newReadiness returns the readiness check of a service deciding with
// the engines of src. The error wraps admit.ErrInvalidConfig for an invalid
// option or a nil src.
func newReadiness(src EngineSource, opts ...readyOption) (*readiness, error) {
	o := readyOptions{timeout: defaultProbeTimeout}
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
	return &readiness{src: src, probes: o.probes, timeout: o.timeout, degraded: o.degraded}, nil
}

// readyReport is the outcome of a readiness check.
type readyReport struct {
	// Ready reports whether the service should get traffic; Degraded that
	// it is ready although a probe failed (WithDegradedReady).
	Ready    bool
	Degraded bool
	// Policy reports whether a policy is loaded.
	Policy bool
	// Probes has the error of each probe, by name, nil for those that
	// succeeded, in the order they were given.
	Probes []probeResult
}

// probeResult is the outcome of one probe.
type probeResult struct {
	Name string
	Err  error
}

// Report runs the probes, all at once, and says whether the service is
// ready. It returns within the probe timeout, or when ctx ends if that is
// sooner: a probe that has not answered by then has failed.
func (r *readiness) Report(ctx context.Context) readyReport {
	rep := readyReport{Policy: r.src.Engine() != nil, Probes: make([]probeResult, len(r.probes))}
	runs := make([]*probeRun, len(r.probes))
	for i, p := range r.probes {
		runs[i] = p.start(ctx, r.timeout)
	}
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	expired := false
	failed := false
	for i, run := range runs {
		var err error
		if !expired {
			select {
			case <-run.done:
			case <-timer.C:
				expired = true
			case <-ctx.Done():
				expired = true
			}
		}
		select {
		case <-run.done:
			err = run.err
		default:
			err = r.noAnswer(ctx)
		}
		rep.Probes[i] = probeResult{Name: r.probes[i].name, Err: err}
		failed = failed || err != nil
	}
	rep.Ready = rep.Policy && (!failed || r.degraded)
	rep.Degraded = rep.Ready && failed
	return rep
}

// noAnswer is the error of a probe that has not answered: the check's
// timeout, or ctx's error when the caller gave up first.
func (r *readiness) noAnswer(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	return fmt.Errorf("no answer within %v: %w", r.timeout, context.DeadlineExceeded)
}

// start returns p's run in progress, or starts one: f runs in a goroutine
// under a context that ends after timeout (and not when the caller's ctx
// is canceled, since later checks may wait for the same run).
func (p *readyProbe) start(ctx context.Context, timeout time.Duration) *probeRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run != nil {
		return p.run
	}
	run := &probeRun{done: make(chan struct{})}
	p.run = run
	go func() {
		err := runReadyProbe(context.WithoutCancel(ctx), p.f, timeout)
		p.mu.Lock()
		p.run = nil
		p.mu.Unlock()
		run.err = err
		close(run.done)
	}()
	return run
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
func (r *readiness) Check(ctx context.Context) error {
	rep := r.Report(ctx)
	if rep.Ready {
		return nil
	}
	if !rep.Policy {
		return fmt.Errorf("%w: %w", errNotReady, errNoEngine)
	}
	var why []string
	for _, p := range rep.Probes {
		if p.Err != nil {
			why = append(why, p.Name+": "+p.Err.Error())
		}
	}
	return fmt.Errorf("%w: %s", errNotReady, strings.Join(why, "; "))
}

// ServeHTTP answers /readyz.
func (r *readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
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
