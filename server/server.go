package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
	"github.com/admit-go/admit/promlimit"
	"github.com/admit-go/admit/redisstore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
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
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	log := o.log
	if log == nil {
		log = slog.Default()
	}
	s := &Server{o: o, log: log, errc: make(chan error, 4), quit: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			s.closeAPIs()
			if s.store != nil {
				_ = s.store.Close()
			}
		}
	}()

	if err := s.loadTLS(); err != nil {
		return nil, err
	}
	if err := s.buildMetrics(); err != nil {
		return nil, err
	}
	if err := s.openStore(); err != nil {
		return nil, err
	}
	p, files, e, err := s.loadPolicy()
	if err != nil {
		return nil, err
	}
	if err := s.buildGateway(p, e); err != nil {
		return nil, err
	}
	if err := s.buildListeners(); err != nil {
		return nil, err
	}
	s.logLoaded(p, files)
	ok = true
	return s, nil
}

// buildOptions applies opts over the defaults and checks them together:
// the error wraps ErrInvalidOption for an invalid option or options that
// contradict one another. In gateway mode it moves the admin listener to
// DefaultGatewayAdminAddr unless WithAdminAddr set it.
func buildOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return o, o.err
	}
	switch {
	case o.pol != nil && len(o.files) > 0:
		return o, fmt.Errorf("%w: WithPolicy and WithPolicyFiles are exclusive", ErrInvalidOption)
	case o.httpAddr == "" && o.grpcAddr == "":
		return o, fmt.Errorf("%w: no HTTP and no gRPC address: nothing to serve", ErrInvalidOption)
	case o.upstream != nil && o.httpAddr == "":
		return o, fmt.Errorf("%w: WithUpstream needs the HTTP listener, and its address is empty", ErrInvalidOption)
	}
	if (o.tlsCert == "") != (o.tlsKey == "") || (o.clientCA != "" && o.tlsCert == "") {
		return o, fmt.Errorf("%w: WithTLS(%q, %q), WithClientCA(%q): %v", ErrInvalidOption, o.tlsCert, o.tlsKey, o.clientCA, errTLSIncomplete)
	}
	if o.upstream != nil && !o.adminSet {
		o.adminAddr = DefaultGatewayAdminAddr
	}
	if o.upstream != nil && o.adminAddr == o.httpAddr && !strings.HasSuffix(o.httpAddr, ":0") {
		return o, fmt.Errorf("%w: the gateway and the admin listener need different addresses (both %q)", ErrInvalidOption, o.httpAddr)
	}
	return o, nil
}

// loadTLS loads the certificate, key and client CAs of WithTLS and
// WithClientCA, if given.
func (s *Server) loadTLS() error {
	if s.o.tlsCert == "" {
		return nil
	}
	var err error
	if s.tls, err = newTLSFiles(s.o.tlsCert, s.o.tlsKey, s.o.clientCA, s.log); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return nil
}

// buildMetrics sets up the Server's registry (WithRegistry's, or a new
// one with the Go runtime and process collectors) and registers the
// decisions' and the reloads' metrics on it.
func (s *Server) buildMetrics() error {
	s.reg = s.o.reg
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	var err error
	if s.obs, err = promlimit.New(s.reg); err != nil {
		return fmt.Errorf("%w: metrics: %v", ErrInvalidOption, err)
	}
	if s.cfg, err = newConfigMetrics(s.reg); err != nil {
		return fmt.Errorf("%w: metrics: %v", ErrInvalidOption, err)
	}
	return nil
}

// openStore opens the Redis store over the client of WithRedis, if given.
func (s *Server) openStore() error {
	if s.o.redis == nil {
		return nil
	}
	var err error
	s.store, err = redisstore.New(s.o.redis, redisstore.WithName("redis"), redisstore.WithObserver(s.obs))
	return err
}

// loadPolicy loads the policy the Server starts with and builds its
// engine, and puts both in force. It returns the policy, its files (none
// for a policy given in Go or the built-in one) and the engine.
func (s *Server) loadPolicy() (*policy.Policy, []string, *policy.Engine, error) {
	p, files, err := s.initialPolicy()
	if err != nil {
		return nil, nil, nil, err
	}
	e, err := s.newEngine(p, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	s.engines.Set(e)
	s.pol.Store(p)
	s.cfg.loaded(time.Now(), false)
	return p, files, e, nil
}

// buildGateway builds the gateway of WithUpstream, if given, over the
// engine e: it checks requests against the domain of WithGatewayDomain,
// or else against p's only domain.
func (s *Server) buildGateway(p *policy.Policy, e *policy.Engine) error {
	if s.o.upstream == nil {
		return nil
	}
	domain := s.o.domain
	if domain == "" {
		if len(p.Domains) != 1 {
			return fmt.Errorf("%w: the policy has %d domains: say which one the gateway checks requests against (WithGatewayDomain)", ErrInvalidOption, len(p.Domains))
		}
		domain = p.Domains[0].Name
	}
	var err error
	s.gw, err = newGateway(s.o.upstream, e, domain, &s.o)
	return err
}

// logLoaded logs where the policy p the Server starts with came from
// (its files, Go or built-in) and what it holds.
func (s *Server) logLoaded(p *policy.Policy, files []string) {
	domains, rules := policySummary(p)
	source := "built-in"
	switch {
	case len(files) > 0:
		source = "files"
	case s.o.pol != nil:
		source = "Go"
	}
	s.log.Info("policy loaded", "source", source, "files", files, "domains", domains, "rules", rules, "redis", s.store != nil)
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
	p, err := DefaultPolicy()
	s.text.Store(&policyText{files: []string{DefaultPolicyFile}, data: [][]byte{defaultPolicyYAML}, at: time.Now()})
	return p, nil, err
}

// newEngine builds the engine of p, taking over the state of old's
// unchanged limits.
func (s *Server) newEngine(p *policy.Policy, old *policy.Engine) (*policy.Engine, error) {
	opts := append([]policy.Option(nil), s.o.engineOpts...)
	opts = append(opts, policy.WithObserver(s.obs), policy.WithLogger(s.log))
	opts = append(opts, backends.Options(s.store)...)
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
