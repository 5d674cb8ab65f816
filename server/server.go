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

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/enginehook"
	"github.com/admit-go/admit/internal/status"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
	"github.com/admit-go/admit/promlimit"
	"github.com/admit-go/admit/redisstore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
)

// Server is admit's rate-limit service, what `admit serve` runs: a
// policy, the store its rules keep their state in (memory, or Redis with
// Config.Redis), and the listeners that decide requests against it, all
// configured by one Config:
//
//   - HTTP (Config.HTTPAddr, default :8080): the HTTP JSON API
//     (/v1/check, /v1/acquire, /v1/release, envoyproxy/ratelimit's
//     /json), /healthz, /readyz and /metrics; or, with Config.Upstream, a
//     Gateway that applies the policy to every request and proxies the
//     admitted ones, the API and the other endpoints moving to the admin
//     listener (Config.AdminAddr, default :8082 in gateway mode).
//   - gRPC (Config.GRPCAddr, default :8081): Envoy's rate-limit service
//     (envoy.service.ratelimit.v3), admit.v1, gRPC health and reflection.
//
// The policy comes from files (Config.PolicyFiles), which the Server
// reloads on Reload (SIGHUP in `admit serve`) and when they change
// (Config.ReloadInterval): an invalid new policy never replaces a valid
// one, and limits whose definition did not change keep their state across
// a reload. Without files the Server enforces a policy built in Go
// (Config.Policy) or the built-in one (DefaultPolicyYAML).
//
// Metrics are registered on a Prometheus registry of the Server's own
// (Config.Registry), never the global one: the decisions, the store's calls
// and the failure policies' switches (package promlimit), policy reloads
// (admit_config_reloads_total{result}, admit_config_last_reload_successful,
// admit_config_last_reload_success_timestamp_seconds), the blocks of the
// rules that prefetch (admit_prefetch_*{rule}: see docs/SERVE.md), the
// instances counted on Redis (admit_instances), and
// the Go runtime and process collectors.
//
// Use: New, then Run(ctx), which starts the listeners and serves until ctx
// ends, then shuts down gracefully (see Shutdown). Or Start, then
// Shutdown or Close. A Server is safe for concurrent use. It starts
// goroutines in Start (one per listener, and the poller of the policy
// files); Shutdown and Close, both idempotent, stop them and close the
// Redis store and the client made from Config.Redis (not a
// Config.RedisClient).
type Server struct {
	c         Config // resolved
	log       *slog.Logger
	ownClient redis.UniversalClient // made from Config.Redis, closed by Close
	engines   Engines
	pol       atomic.Pointer[policy.Policy]
	store     *redisstore.Store
	reg       *prometheus.Registry
	obs       *promlimit.Observer
	rec       *status.Recorder // the status page's counts (over obs), nil with NoStatus
	started   time.Time
	tls       *tlsFiles                  // Config.TLSCert, or nil
	text      atomic.Pointer[policyText] // the text of the policy in force
	cfg       *configMetrics
	gw        *Gateway
	api       *API
	grpcAPI   *GRPC
	leases    *leaseTable
	fleet     *fleet // the count of instances on Redis, or nil
	// retryAfter is admit_retry_after_seconds{rule}.
	retryAfter *prometheus.HistogramVec

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

// New returns a Server configured by cfg, with its policy loaded and its
// engine built, ready to Start. It does not listen yet. The error is
// cfg.Validate's (a *ConfigError), wraps admit.ErrInvalidConfig for files
// that do not load (TLS), a directory without policy files or a gateway
// domain the policy lacks, is a
// policy.Errors (matching policy.ErrInvalidPolicy) listing the problems of
// the policy files, each with its file, line and column, or wraps the
// error of reading them or of building the engine (policy.ErrNoStore: a
// rule with store: redis and no Redis).
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.resolved()
	s := &Server{c: c, log: c.Logger, started: time.Now(), errc: make(chan error, 4), quit: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			s.closeAPIs()
			s.closeStore()
		}
	}()

	if err := s.loadTLS(); err != nil {
		return nil, err
	}
	if err := s.buildMetrics(); err != nil {
		return nil, err
	}
	var err error
	if s.store, s.ownClient, err = openStore(&s.c, s.observer()); err != nil {
		return nil, err
	}
	if err := s.buildFleet(); err != nil {
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

// closeStore closes the Redis store and the client the Server made from
// Config.Redis, if any.
func (s *Server) closeStore() {
	if s.store != nil {
		_ = s.store.Close()
	}
	if s.ownClient != nil {
		_ = s.ownClient.Close()
	}
}

// loadTLS loads the certificate, key and client CAs of Config.TLSCert,
// TLSKey and TLSClientCA, if given.
func (s *Server) loadTLS() error {
	if s.c.TLSCert == "" {
		return nil
	}
	var err error
	if s.tls, err = newTLSFiles(s.c.TLSCert, s.c.TLSKey, s.c.TLSClientCA, s.log); err != nil {
		return fmt.Errorf("%w: %v", errInvalidConfig, err)
	}
	return nil
}

// buildMetrics sets up the Server's registry (Config.Registry, or a new
// one with the Go runtime and process collectors) and registers the
// decisions' and the reloads' metrics on it.
func (s *Server) buildMetrics() error {
	s.reg = s.c.Registry
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	var err error
	if s.obs, err = promlimit.New(s.reg, promlimit.Config{}); err != nil {
		return fmt.Errorf("%w: metrics: %v", errInvalidConfig, err)
	}
	if s.cfg, err = newConfigMetrics(s.reg); err != nil {
		return fmt.Errorf("%w: metrics: %v", errInvalidConfig, err)
	}
	if err = s.reg.Register(&prefetchMetrics{engine: s.engines.Engine}); err != nil {
		return fmt.Errorf("%w: metrics: %v", errInvalidConfig, err)
	}
	s.retryAfter = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "admit_retry_after_seconds",
		Help:    "The retry times admit serve gave refused requests (jitter included; refusals that can never be admitted are left out), by the rule that refused.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 3600},
	}, []string{"rule"})
	if err = s.reg.Register(s.retryAfter); err != nil {
		return fmt.Errorf("%w: metrics: %v", errInvalidConfig, err)
	}
	return s.buildStatus()
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

// buildGateway builds the gateway of Config.Upstream, if given, over the
// engine e: it checks requests against the domain of Config.GatewayDomain,
// or else against p's only domain.
func (s *Server) buildGateway(p *policy.Policy, e *policy.Engine) error {
	if s.c.Upstream == "" {
		return nil
	}
	domain := s.c.GatewayDomain
	if domain == "" {
		if len(p.Domains) != 1 {
			return fmt.Errorf("%w: the policy has %d domains: say which one the gateway checks requests against (Config.GatewayDomain)", errInvalidConfig, len(p.Domains))
		}
		domain = p.Domains[0].Name
	}
	var err error
	s.gw, err = newGateway(e, domain, &s.c)
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
	case s.c.Policy != nil:
		source = "Go"
	}
	s.log.Info("policy loaded", "source", source, "files", files, "domains", domains, "rules", rules, "redis", s.store != nil)
}

// initialPolicy loads the policy the Server starts with.
func (s *Server) initialPolicy() (*policy.Policy, []string, error) {
	switch {
	case len(s.c.PolicyFiles) > 0:
		s.stats = statFiles(s.c.PolicyFiles)
		snap := readSnapshot(s.c.PolicyFiles)
		s.hash = snap.hash
		p, err := snap.parse(s.c.MergeDomains)
		s.text.Store(&policyText{files: snap.files, data: snap.data, at: time.Now()})
		return p, snap.files, err
	case s.c.Policy != nil:
		s.text.Store(&policyText{at: time.Now()})
		return s.c.Policy, nil, s.c.Policy.Validate()
	}
	p, err := defaultPolicy()
	s.text.Store(&policyText{files: []string{defaultPolicyFile}, data: [][]byte{defaultPolicyYAML}, at: time.Now()})
	return p, nil, err
}

// newEngine builds the engine of p, taking over the state of old's
// unchanged limits.
func (s *Server) newEngine(p *policy.Policy, old *policy.Engine) (*policy.Engine, error) {
	cfg := s.c.Engine
	if s.c.Shadow {
		cfg.Shadow = true
	}
	if s.c.KeyPrefix != "" {
		cfg.KeyPrefix = s.c.KeyPrefix
	}
	if cfg.RetryJitter == (admit.Jitter{}) {
		cfg.RetryJitter = admit.Jitter{Fraction: s.c.RetryJitter, Max: s.c.RetryJitterMax}
	}
	cfg.Observer, cfg.Logger = s.observer(), s.log
	cfg.Backends, cfg.DefaultStore = backends.Stores(s.store)
	cfg.Previous = old
	cfg.OnRefused = s.refused(cfg.OnRefused)
	e, err := policy.NewEngine(p, cfg)
	if err == nil && s.fleet != nil {
		enginehook.SetInstances(e, int(s.fleet.n.Load()))
	}
	return e, err
}

// refused returns the engines' OnRefused: it records the retry time a
// refusal gives in admit_retry_after_seconds, then calls next (the
// embedding program's, from Config.Engine) if not nil.
func (s *Server) refused(next func(admit.Decision)) func(admit.Decision) {
	return func(d admit.Decision) {
		if d.RetryAfter != admit.InfDuration {
			s.retryAfter.WithLabelValues(strings.ToValidUTF8(d.Rule, "\uFFFD")).Observe(d.RetryAfter.Seconds())
		}
		if next != nil {
			next(d)
		}
	}
}

// Engine returns the engine in force (the current policy's).
func (s *Server) Engine() *policy.Engine { return s.engines.Engine() }

// Policy returns the policy in force. The caller must not modify it.
func (s *Server) Policy() *policy.Policy { return s.pol.Load() }

// source returns the Server's EngineSource, whose engine a reload
// replaces.
func (s *Server) source() EngineSource { return &s.engines }

// registry returns the Prometheus registry the Server's metrics are on.
func (s *Server) registry() *prometheus.Registry { return s.reg }

// Gateway returns the Server's gateway, nil without Config.Upstream.
func (s *Server) Gateway() *Gateway { return s.gw }

// HTTPAddr returns the address the HTTP listener is bound to (with its
// port when Config.HTTPAddr asked for port 0), nil before Start or without
// an HTTP listener.
func (s *Server) HTTPAddr() net.Addr { return lnAddr(s.httpLn) }

// GRPCAddr returns the address the gRPC listener is bound to, nil before
// Start or without a gRPC listener.
func (s *Server) GRPCAddr() net.Addr { return lnAddr(s.grpcLn) }

// AdminAddr returns the address the admin listener is bound to, nil
// before Start or without an admin listener (see Config.AdminAddr).
func (s *Server) AdminAddr() net.Addr { return lnAddr(s.adminLn) }

// DebugAddr returns the address the profiler's listener is bound to, nil
// before Start or without one (see Config.DebugAddr).
func (s *Server) DebugAddr() net.Addr { return lnAddr(s.debugLn) }

func lnAddr(l net.Listener) net.Addr {
	if l == nil {
		return nil
	}
	return l.Addr()
}
