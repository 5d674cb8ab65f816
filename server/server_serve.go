package server

// The Server's listeners: their servers and handlers, Start and Run.

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
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
)

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

// buildListeners builds the HTTP and gRPC servers (they listen in Start).
func (s *Server) buildListeners() error {
	c := &s.c
	admin, err := s.adminHandler()
	if err != nil {
		return err
	}
	if c.HTTPAddr != "" {
		var h http.Handler
		switch {
		case s.gw != nil:
			h = s.gw
		case c.AdminAddr != "":
			h = withStatus(withoutMetrics(admin), nil)
		default:
			h = withStatus(admin, s.statusPage())
		}
		s.httpSrv = s.newHTTPServer(h)
	}
	if c.AdminAddr != "" {
		s.adminSrv = s.newHTTPServer(withStatus(admin, s.statusPage()))
	}
	if s.tls != nil {
		for _, srv := range []*http.Server{s.httpSrv, s.adminSrv} {
			if srv != nil {
				srv.TLSConfig = s.tls.config("h2", "http/1.1")
			}
		}
	}
	if c.DebugAddr != "" {
		s.debugSrv = s.newHTTPServer(s.debugHandler())
		s.debugSrv.ReadTimeout, s.debugSrv.WriteTimeout = 0, 0
	}
	if c.GRPCAddr != "" {
		// Stream workers: a pool of goroutines serves the calls instead of
		// a new goroutine (and stack growth) per call; on the RLS benchmark
		// it took the in-memory server from about 33k to about 55k checks/s
		// on 2 cores (bench/RESULTS.md). grpc-go starts a goroutine for a
		// call that finds every worker busy, as a call waiting for Redis
		// keeps one: grpcWorkersPerCPU is sized for that.
		gopts := append(GRPCServerOptions(), grpc.MaxRecvMsgSize(int(c.MaxRequestBytes)), grpc.NumStreamWorkers(uint32(grpcWorkersPerCPU*runtime.GOMAXPROCS(0))),
			grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: c.GRPCMaxConnectionAge, MaxConnectionAgeGrace: c.GRPCMaxConnectionAgeGrace}))
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

// grpcWorkersPerCPU is the gRPC server's stream workers per CPU: with
// 32 (64 on 2 cores) rather than one, the server's CPU per RLS check fell
// by 6-10% on Zipf keys on a loaded machine, in memory and on Redis, and
// was unchanged on a quiet one (bench/RESULTS.md).
const grpcWorkersPerCPU = 32

// newHTTPServer returns an http.Server with the Server's limits.
func (s *Server) newHTTPServer(h http.Handler) *http.Server {
	c := &s.c
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    c.MaxHeaderBytes,
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
// second call and an error wrapping admit.ErrClosed after Close or Shutdown.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateStarted:
		return ErrStarted
	case stateClosed:
		return errClosed
	}
	if err := s.bind(); err != nil {
		return err
	}
	s.state = stateStarted
	if s.httpSrv != nil {
		s.wg.Add(1)
		go s.serveHTTP(s.httpSrv, s.httpLn, "HTTP")
	}
	if s.adminSrv != nil {
		s.wg.Add(1)
		go s.serveHTTP(s.adminSrv, s.adminLn, "admin")
	}
	if s.debugSrv != nil {
		s.wg.Add(1)
		go s.serveHTTP(s.debugSrv, s.debugLn, "debug")
	}
	if s.grpcSrv != nil {
		s.wg.Add(1)
		go s.serveGRPC()
	}
	if len(s.c.PolicyFiles) > 0 && s.c.ReloadInterval > 0 {
		s.wg.Add(1)
		go s.poll(s.c.ReloadInterval)
	}
	if s.fleet != nil {
		s.wg.Add(1)
		go s.countFleet()
	}
	s.log.Info("serving", "http", addrString(s.HTTPAddr()), "grpc", addrString(s.GRPCAddr()), "admin", addrString(s.AdminAddr()),
		"debug", addrString(s.DebugAddr()), "gateway", s.gw != nil)
	return nil
}

// bind binds the listeners of the servers built (HTTP, admin, gRPC, debug,
// in that order); if one fails, it closes those already bound and returns
// the error naming the listener.
func (s *Server) bind() error {
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
		if s.httpLn, err = listen(s.c.HTTPAddr); err != nil {
			return fmt.Errorf("server: HTTP listener: %w", err)
		}
	}
	if s.adminSrv != nil {
		if s.adminLn, err = listen(s.c.AdminAddr); err != nil {
			return fmt.Errorf("server: admin listener: %w", err)
		}
	}
	if s.grpcSrv != nil {
		if s.grpcLn, err = listen(s.c.GRPCAddr); err != nil {
			return fmt.Errorf("server: gRPC listener: %w", err)
		}
	}
	if s.debugSrv != nil {
		if s.debugLn, err = listen(s.c.DebugAddr); err != nil {
			return fmt.Errorf("server: debug listener: %w", err)
		}
	}
	return nil
}

// serveHTTP serves srv on l (over TLS if srv has a TLS configuration)
// until it is shut down, recording the error that stops it otherwise
// under the listener's name. It is the goroutine of one listener: it calls
// s.wg.Done when it returns.
func (s *Server) serveHTTP(srv *http.Server, l net.Listener, name string) {
	defer s.wg.Done()
	serve := srv.Serve
	if srv.TLSConfig != nil {
		serve = func(l net.Listener) error { return srv.ServeTLS(l, "", "") }
	}
	if err := serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.fail(fmt.Errorf("server: %s listener: %w", name, err))
	}
}

// serveGRPC serves the gRPC server on its listener until it is stopped,
// recording the error that stops it otherwise. It is the goroutine of the
// gRPC listener: it calls s.wg.Done when it returns.
func (s *Server) serveGRPC() {
	defer s.wg.Done()
	if err := s.grpcSrv.Serve(s.grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		s.fail(fmt.Errorf("server: gRPC listener: %w", err))
	}
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
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.ShutdownTimeout)
	defer cancel()
	return errors.Join(err, s.Shutdown(sctx))
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
