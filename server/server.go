package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/promlimit"
	"github.com/admit-go/admit/redisstore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
)

// Server is admit's rate-limit service, what `admit serve` runs: a
// policy, the store its rules keep their state in (memory, or Redis with
// WithRedis), and the listeners that decide requests against it:
//
//   - HTTP (WithHTTPAddr, default :8080): the HTTP JSON API (/v1/check,
//     /v1/acquire, /v1/release, envoyproxy/ratelimit's /json), /healthz,
//     /readyz and /metrics; or, with WithUpstream, a Gateway that applies
//     the policy to every request and proxies the admitted ones, the API
//     and the other endpoints moving to the admin listener (WithAdminAddr,
//     default :8082 in gateway mode).
//   - gRPC (WithGRPCAddr, default :8081): Envoy's rate-limit service
//     (envoy.service.ratelimit.v3), admit.v1, gRPC health and reflection.
//
// The policy comes from files (WithPolicyFiles), which the Server reloads
// on Reload (SIGHUP in `admit serve`) and when they change
// (WithReloadInterval): an invalid new policy never replaces a valid one,
// and limits whose definition did not change keep their state across a
// reload. Without files the Server enforces a policy built in Go
// (WithPolicy) or the built-in one (DefaultPolicy).
//
// Metrics are registered on a Prometheus registry of the Server's own
// (WithRegistry), never the global one: the decisions, the store's calls
// and the failure policies' switches (package promlimit), policy reloads
// (admit_config_reloads_total{result}, admit_config_last_reload_successful,
// admit_config_last_reload_success_timestamp_seconds), and the Go runtime
// and process collectors.
//
// Use: New, then Run(ctx), which starts the listeners and serves until ctx
// ends, then shuts down gracefully (see Shutdown). Or Start, then
// Shutdown or Close. A Server is safe for concurrent use. It starts
// goroutines in Start (one per listener, and the poller of the policy
// files); Shutdown and Close, both idempotent, stop them and close the
// Redis store (not the client).
type Server struct {
	o       options
	log     *slog.Logger
	engines Engines
	pol     atomic.Pointer[policy.Policy]
	store   *redisstore.Store
	reg     *prometheus.Registry
	obs     *promlimit.Observer
	tls     *tlsFiles                  // WithTLS, or nil
	text    atomic.Pointer[policyText] // the text of the policy in force
	cfg     *configMetrics
	gw      *Gateway
	api     *API
	grpcAPI *GRPC
	leases  *Leases

	httpSrv, adminSrv, debugSrv *http.Server
	grpcSrv                     *grpc.Server
	httpLn, adminLn, debugLn    net.Listener
	grpcLn                      net.Listener

	// reloadMu serializes reloads and guards what the poller compares.
	reloadMu sync.Mutex
	stats    []fileStat
	hash     [32]byte

	mu       sync.Mutex // guards state
	state    int
	draining atomic.Bool
	errc     chan error    // the first error of a listener
	quit     chan struct{} // closed to stop the poller
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error
}

const (
	stateNew = iota
	stateStarted
	stateClosed
)

// New returns a Server with its policy loaded and its engine built,
// ready to Start. It does not listen yet. The error wraps ErrInvalidOption
// for invalid or contradicting options, is a policy.Errors (matching
// policy.ErrInvalidPolicy) listing the problems of the policy files, each
// with its file, line and column, or wraps the error of reading them, of
// building the engine (policy.ErrNoStore: a rule with store: redis and no
// WithRedis) or of the gateway (a domain the policy lacks).
func New(opts ...Option) (*Server, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	switch {
	case o.pol != nil && len(o.files) > 0:
		return nil, fmt.Errorf("%w: WithPolicy and WithPolicyFiles are exclusive", ErrInvalidOption)
	case o.httpAddr == "" && o.grpcAddr == "":
		return nil, fmt.Errorf("%w: no HTTP and no gRPC address: nothing to serve", ErrInvalidOption)
	case o.upstream != nil && o.httpAddr == "":
		return nil, fmt.Errorf("%w: WithUpstream needs the HTTP listener, and its address is empty", ErrInvalidOption)
	}
	if (o.tlsCert == "") != (o.tlsKey == "") || (o.clientCA != "" && o.tlsCert == "") {
		return nil, fmt.Errorf("%w: WithTLS(%q, %q), WithClientCA(%q): %v", ErrInvalidOption, o.tlsCert, o.tlsKey, o.clientCA, errTLSIncomplete)
	}
	if o.upstream != nil && !o.adminSet {
		o.adminAddr = DefaultGatewayAdminAddr
	}
	if o.upstream != nil && o.adminAddr == o.httpAddr && !strings.HasSuffix(o.httpAddr, ":0") {
		return nil, fmt.Errorf("%w: the gateway and the admin listener need different addresses (both %q)", ErrInvalidOption, o.httpAddr)
	}
	log := o.log
	if log == nil {
		log = slog.Default()
	}
	s := &Server{o: o, log: log, errc: make(chan error, 4), quit: make(chan struct{})}
	var err error
	ok := false
	defer func() {
		if !ok {
			s.closeAPIs()
			if s.store != nil {
				_ = s.store.Close()
			}
		}
	}()

	if o.tlsCert != "" {
		if s.tls, err = newTLSFiles(o.tlsCert, o.tlsKey, o.clientCA, log); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
	}
	s.reg = o.reg
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if s.obs, err = promlimit.New(s.reg); err != nil {
		return nil, fmt.Errorf("%w: metrics: %v", ErrInvalidOption, err)
	}
	if s.cfg, err = newConfigMetrics(s.reg); err != nil {
		return nil, fmt.Errorf("%w: metrics: %v", ErrInvalidOption, err)
	}
	if o.redis != nil {
		if s.store, err = redisstore.New(o.redis, redisstore.WithName("redis"), redisstore.WithObserver(s.obs)); err != nil {
			return nil, err
		}
	}

	p, files, err := s.initialPolicy()
	if err != nil {
		return nil, err
	}
	e, err := s.newEngine(p, nil)
	if err != nil {
		return nil, err
	}
	s.engines.Set(e)
	s.pol.Store(p)
	s.cfg.loaded(time.Now(), false)

	if o.upstream != nil {
		domain := o.domain
		if domain == "" {
			if len(p.Domains) != 1 {
				return nil, fmt.Errorf("%w: the policy has %d domains: say which one the gateway checks requests against (WithGatewayDomain)", ErrInvalidOption, len(p.Domains))
			}
			domain = p.Domains[0].Name
		}
		if s.gw, err = newGateway(o.upstream, e, domain, &s.o); err != nil {
			return nil, err
		}
	}
	if err := s.buildListeners(); err != nil {
		return nil, err
	}
	domains, rules := policySummary(p)
	source := "built-in"
	switch {
	case len(files) > 0:
		source = "files"
	case o.pol != nil:
		source = "Go"
	}
	log.Info("policy loaded", "source", source, "files", files, "domains", domains, "rules", rules, "redis", s.store != nil)
	ok = true
	return s, nil
}

// initialPolicy loads the policy the Server starts with.
func (s *Server) initialPolicy() (*policy.Policy, []string, error) {
	switch {
	case len(s.o.files) > 0:
		s.stats = statFiles(s.o.files)
		snap := readSnapshot(s.o.files)
		s.hash = snap.hash
		p, err := snap.parse(s.o.mergeDomains)
		s.text.Store(&policyText{files: snap.files, data: snap.data, at: time.Now()})
		return p, snap.files, err
	case s.o.pol != nil:
		s.text.Store(&policyText{at: time.Now()})
		return s.o.pol, nil, s.o.pol.Validate()
	}
	p, err := DefaultPolicy(s.store != nil)
	s.text.Store(&policyText{files: []string{DefaultPolicyFile}, data: [][]byte{defaultPolicyYAML}, at: time.Now()})
	return p, nil, err
}

// policyText is the text of the policy in force, for /debug/policy: its
// files and their bytes as loaded (none for a policy given in Go).
type policyText struct {
	files []string
	data  [][]byte
	at    time.Time
}

// servePolicy serves /debug/policy: the files of the policy in force as
// they were when loaded (which may differ from the files now on disk, if
// a change did not load), as envoyproxy/ratelimit's /rlconfig shows its
// configuration.
func (s *Server) servePolicy(w http.ResponseWriter, _ *http.Request) {
	t := s.text.Load()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, "# the policy in force, loaded %s\n", t.at.UTC().Format(time.RFC3339))
	if len(t.files) == 0 {
		domains, rules := policySummary(s.pol.Load())
		fmt.Fprintf(w, "# given in Go (WithPolicy): domains %s, %d rules\n", strings.Join(domains, ", "), rules)
		return
	}
	for i, f := range t.files {
		sum := sha256.Sum256(t.data[i])
		fmt.Fprintf(w, "# file %s (sha256 %x)\n", f, sum)
		_, _ = w.Write(t.data[i])
		if n := len(t.data[i]); n > 0 && t.data[i][n-1] != '\n' {
			_, _ = w.Write([]byte("\n"))
		}
	}
}

// newEngine builds the engine of p, taking over the state of old's
// unchanged limits.
func (s *Server) newEngine(p *policy.Policy, old *policy.Engine) (*policy.Engine, error) {
	opts := append([]policy.Option(nil), s.o.engineOpts...)
	opts = append(opts, policy.WithObserver(s.obs), policy.WithLogger(s.log))
	if s.store != nil {
		opts = append(opts, policy.WithRedis(s.store))
	}
	if old != nil {
		opts = append(opts, policy.WithPrevious(old))
	}
	return policy.NewEngine(p, opts...)
}

// Engine returns the engine in force (the current policy's).
func (s *Server) Engine() *policy.Engine { return s.engines.Engine() }

// Policy returns the policy in force. The caller must not modify it.
func (s *Server) Policy() *policy.Policy { return s.pol.Load() }

// Source returns the Server's EngineSource, whose engine a reload
// replaces.
func (s *Server) Source() EngineSource { return &s.engines }

// Registry returns the Prometheus registry the Server's metrics are on.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Gateway returns the Server's gateway, nil without WithUpstream.
func (s *Server) Gateway() *Gateway { return s.gw }

// HTTPAddr returns the address the HTTP listener is bound to (with its
// port when WithHTTPAddr asked for port 0), nil before Start or without
// an HTTP listener.
func (s *Server) HTTPAddr() net.Addr { return lnAddr(s.httpLn) }

// GRPCAddr returns the address the gRPC listener is bound to, nil before
// Start or without a gRPC listener.
func (s *Server) GRPCAddr() net.Addr { return lnAddr(s.grpcLn) }

// AdminAddr returns the address the admin listener is bound to, nil
// before Start or without an admin listener (see WithAdminAddr).
func (s *Server) AdminAddr() net.Addr { return lnAddr(s.adminLn) }

// DebugAddr returns the address the profiler's listener is bound to, nil
// before Start or without one (see WithDebugAddr).
func (s *Server) DebugAddr() net.Addr { return lnAddr(s.debugLn) }

func lnAddr(l net.Listener) net.Addr {
	if l == nil {
		return nil
	}
	return l.Addr()
}

// buildListeners builds the HTTP and gRPC servers (they listen in Start).
func (s *Server) buildListeners() error {
	o := &s.o
	admin, err := s.adminHandler()
	if err != nil {
		return err
	}
	if o.httpAddr != "" {
		var h http.Handler
		switch {
		case s.gw != nil:
			h = s.gw
		case o.adminAddr != "":
			h = withoutMetrics(admin)
		default:
			h = admin
		}
		s.httpSrv = s.newHTTPServer(h)
	}
	if o.adminAddr != "" {
		s.adminSrv = s.newHTTPServer(admin)
	}
	if s.tls != nil {
		for _, srv := range []*http.Server{s.httpSrv, s.adminSrv} {
			if srv != nil {
				srv.TLSConfig = s.tls.config("h2", "http/1.1")
			}
		}
	}
	if o.debugAddr != "" {
		s.debugSrv = s.newHTTPServer(s.debugHandler())
		s.debugSrv.ReadTimeout, s.debugSrv.WriteTimeout = 0, 0
	}
	if o.grpcAddr != "" {
		// Stream workers: a pool of one goroutine per CPU serves the calls
		// instead of a new goroutine (and stack growth) per call; on the
		// RLS benchmark it takes the in-memory server from about 33k to
		// about 55k checks/s on 2 cores (bench/RESULTS.md).
		gopts := append(GRPCServerOptions(), grpc.MaxRecvMsgSize(int(o.maxBody)), grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
			grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: o.connAge, MaxConnectionAgeGrace: o.connAgeGrace}))
		if s.tls != nil {
			gopts = append(gopts, grpc.Creds(credentials.NewTLS(s.tls.config("h2"))))
		}
		s.grpcSrv = grpc.NewServer(gopts...)
		if err := s.registerGRPC(s.grpcSrv); err != nil {
			return err
		}
	}
	return nil
}

// newHTTPServer returns an http.Server with the Server's limits.
func (s *Server) newHTTPServer(h http.Handler) *http.Server {
	o := &s.o
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.readHeader,
		ReadTimeout:       o.read,
		WriteTimeout:      o.write,
		IdleTimeout:       o.idle,
		MaxHeaderBytes:    o.maxHeader,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// debugHandler serves Go's profiler under /debug/pprof/, and the policy
// in force at /debug/policy.
func (s *Server) debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/policy", s.servePolicy)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// metricsHandler serves the Server's registry.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
}

// withoutMetrics hides /metrics, served by the admin listener only.
func withoutMetrics(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Start binds the listeners and starts serving, and starts the poller of
// the policy files. It returns once the listeners are bound (their
// addresses are then HTTPAddr, GRPCAddr and AdminAddr), or with the error
// of binding one (the others are closed). It fails with ErrStarted on a
// second call and ErrClosed after Close or Shutdown.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateStarted:
		return ErrStarted
	case stateClosed:
		return ErrClosed
	}
	var lns []net.Listener
	listen := func(addr string) (net.Listener, error) {
		l, err := listenAddr(addr)
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return nil, err
		}
		lns = append(lns, l)
		return l, nil
	}
	var err error
	if s.httpSrv != nil {
		if s.httpLn, err = listen(s.o.httpAddr); err != nil {
			return fmt.Errorf("server: HTTP listener: %w", err)
		}
	}
	if s.adminSrv != nil {
		if s.adminLn, err = listen(s.o.adminAddr); err != nil {
			return fmt.Errorf("server: admin listener: %w", err)
		}
	}
	if s.grpcSrv != nil {
		if s.grpcLn, err = listen(s.o.grpcAddr); err != nil {
			return fmt.Errorf("server: gRPC listener: %w", err)
		}
	}
	if s.debugSrv != nil {
		if s.debugLn, err = listen(s.o.debugAddr); err != nil {
			return fmt.Errorf("server: debug listener: %w", err)
		}
	}
	s.state = stateStarted
	serveHTTP := func(srv *http.Server, l net.Listener, name string) {
		defer s.wg.Done()
		serve := srv.Serve
		if srv.TLSConfig != nil {
			serve = func(l net.Listener) error { return srv.ServeTLS(l, "", "") }
		}
		if err := serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.fail(fmt.Errorf("server: %s listener: %w", name, err))
		}
	}
	if s.httpSrv != nil {
		s.wg.Add(1)
		go serveHTTP(s.httpSrv, s.httpLn, "HTTP")
	}
	if s.adminSrv != nil {
		s.wg.Add(1)
		go serveHTTP(s.adminSrv, s.adminLn, "admin")
	}
	if s.debugSrv != nil {
		s.wg.Add(1)
		go serveHTTP(s.debugSrv, s.debugLn, "debug")
	}
	if s.grpcSrv != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.grpcSrv.Serve(s.grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				s.fail(fmt.Errorf("server: gRPC listener: %w", err))
			}
		}()
	}
	if len(s.o.files) > 0 && s.o.reload > 0 {
		s.wg.Add(1)
		go s.poll(s.o.reload)
	}
	s.log.Info("serving", "http", addrString(s.HTTPAddr()), "grpc", addrString(s.GRPCAddr()), "admin", addrString(s.AdminAddr()),
		"debug", addrString(s.DebugAddr()), "gateway", s.gw != nil)
	return nil
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// fail records the error of a listener that stopped serving.
func (s *Server) fail(err error) {
	select {
	case s.errc <- err:
	default:
	}
}

// Run starts the Server if it is not started, serves until ctx ends or a
// listener fails, and then shuts down gracefully within
// WithShutdownTimeout (see Shutdown). It returns nil after a clean
// shutdown, the listener's error if one failed, and an error wrapping
// ErrShutdownTimeout if requests in flight had to be cut off.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(); err != nil && !errors.Is(err, ErrStarted) {
		return err
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-s.errc:
		s.log.Error("a listener failed; shutting down", "err", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.shutdown)
	defer cancel()
	return errors.Join(err, s.Shutdown(sctx))
}

// Shutdown stops the Server gracefully: /readyz answers 503 at once, the
// listeners stop accepting connections, and the requests in flight (HTTP,
// gateway, gRPC) are given until ctx's deadline to finish; those still
// running then are cut off and Shutdown returns an error wrapping
// ErrShutdownTimeout. Then it stops the poller and closes the gateway's
// idle connections and the Redis store. Shutdown is idempotent: later
// calls (and Close) wait for the first and return its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

// Close stops the Server at once: listeners and connections are closed,
// requests in flight are cut off. It is Shutdown with a deadline that has
// passed, and is idempotent.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Shutdown(ctx)
	if errors.Is(err, ErrShutdownTimeout) {
		return nil // cutting requests off is what Close is for
	}
	return err
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateClosed
}

func (s *Server) stop(ctx context.Context) error {
	s.mu.Lock()
	started := s.state == stateStarted
	s.state = stateClosed
	s.mu.Unlock()
	s.draining.Store(true)
	s.drainAPIs()
	close(s.quit)
	var cut atomic.Bool
	if started {
		s.log.Info("shutting down: draining requests in flight", "deadline", deadlineString(ctx))
		if s.debugSrv != nil {
			_ = s.debugSrv.Close() // profiles in progress are not requests to drain
		}
		var wg sync.WaitGroup
		for _, srv := range []*http.Server{s.httpSrv, s.adminSrv} {
			if srv == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := srv.Shutdown(ctx); err != nil {
					cut.Store(true)
					_ = srv.Close()
				}
			}()
		}
		if s.grpcSrv != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				done := make(chan struct{})
				go func() {
					s.grpcSrv.GracefulStop()
					close(done)
				}()
				select {
				case <-done:
				case <-ctx.Done():
					cut.Store(true)
					s.grpcSrv.Stop()
					<-done
				}
			}()
		}
		wg.Wait()
	}
	s.wg.Wait()
	if s.gw != nil {
		_ = s.gw.Close()
	}
	s.closeAPIs()
	var err error
	if s.store != nil {
		err = s.store.Close()
	}
	if cut.Load() {
		s.log.Warn("shutdown deadline passed: requests in flight were cut off")
		return errors.Join(ErrShutdownTimeout, err)
	}
	if started {
		s.log.Info("shut down")
	}
	return err
}

func deadlineString(ctx context.Context) string {
	d, ok := ctx.Deadline()
	if !ok {
		return "none"
	}
	return time.Until(d).Round(time.Millisecond).String()
}

// listenAddr binds addr: "host:port" over TCP, or "unix:PATH" (also
// "unix://PATH") on a Unix socket, after removing a socket file that a
// process which did not close it left at PATH (one nobody answers on).
func listenAddr(addr string) (net.Listener, error) {
	path, ok := unixPath(addr)
	if !ok {
		return net.Listen("tcp", addr)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
		} else {
			_ = os.Remove(path) // stale
		}
	}
	return net.Listen("unix", path)
}

// unixPath returns the path of a "unix:PATH" or "unix://PATH" address.
func unixPath(addr string) (string, bool) {
	rest, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return "", false
	}
	if p, ok := strings.CutPrefix(rest, "//"); ok {
		rest = p
	}
	return rest, rest != ""
}
