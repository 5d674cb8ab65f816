package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/server"
	"github.com/redis/go-redis/v9"
)

// serve runs `admit serve`.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, reload <-chan os.Signal) error {
	l, err := loadServe(args, getenv)
	if errors.Is(err, errHelp) {
		cmd, _ := newServeCommand()
		cmd.printUsage(stdout)
		return nil
	}
	if err != nil {
		return err
	}
	log := newLogger(stderr, l.cfg.LogFormat, l.cfg.LogLevel)
	cfg := l.cfg.Config
	cfg.Logger = log
	if cfg.Redis != "" {
		// go-redis logs (Sentinel switches, dial errors) through a global
		// logger: make its lines records of the service's log.
		redis.SetLogger(redisLogger{log})
	}
	srv, err := server.New(cfg)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("serve: %w", err)}
	}
	if err := srv.Start(); err != nil {
		_ = srv.Close()
		return &exitError{code: exitFailure, err: fmt.Errorf("serve: %w", err)}
	}
	printBanner(stdout, srv, &cfg)
	done := make(chan struct{})
	defer close(done)
	if reload != nil {
		go func() {
			for {
				select {
				case <-done:
					return
				case <-reload:
					log.Info("SIGHUP: reloading the policy")
					_ = srv.Reload() // logged and counted by the server
				}
			}
		}()
	}
	if err := srv.Run(ctx); err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("serve: %w", err)}
	}
	return nil
}

// redisLogger passes go-redis's log lines to slog, at warn level.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "go-redis")
}

// newLogger returns the slog logger of the flags, writing to w.
func newLogger(w io.Writer, format, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // checked by the flag
	o := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// printBanner prints where the server listens and a command to try.
func printBanner(w io.Writer, srv *server.Server, c *server.Config) {
	policyText := "built-in (domain \"api\", server/default.yaml)"
	if len(c.PolicyFiles) > 0 {
		policyText = strings.Join(c.PolicyFiles, ", ")
	}
	store := "in memory"
	if c.Redis != "" {
		store = "with Redis"
		if u, err := url.Parse(c.Redis); err == nil {
			store += " at " + u.Redacted()
		}
	}
	fmt.Fprintf(w, "admit serve: policy %s, %s\n", policyText, store)
	scheme, grpcTLS := "http", ""
	if c.TLSCert != "" {
		scheme, grpcTLS = "https", ", TLS"
		if c.TLSClientCA != "" {
			grpcTLS = ", mutual TLS"
		}
	}
	if a := srv.HTTPAddr(); a != nil {
		if srv.Gateway() != nil {
			fmt.Fprintf(w, "admit serve: gateway to %s on %s\n", c.Upstream, where(scheme, a))
		} else {
			fmt.Fprintf(w, "admit serve: HTTP API on %s\n", where(scheme, a))
		}
	}
	if a := srv.AdminAddr(); a != nil {
		fmt.Fprintf(w, "admit serve: admin (HTTP API, /healthz, /readyz, /metrics) on %s\n", where(scheme, a))
	}
	if a := srv.GRPCAddr(); a != nil {
		fmt.Fprintf(w, "admit serve: gRPC (Envoy RLS v3, admit.v1, health, reflection%s) on %s\n", grpcTLS, where("", a))
	}
	if a := srv.DebugAddr(); a != nil {
		fmt.Fprintf(w, "admit serve: profiler on %s/debug/pprof/\n", where("http", a))
	}
	if try := tryCommand(srv, c); try != "" {
		fmt.Fprintf(w, "admit serve: try: %s\n", try)
	}
}

// tryCommand returns one command that exercises the server: a curl of
// the gateway, or of /v1/check, or a grpcurl of ShouldRateLimit, with a
// descriptor a rule of the policy matches.
func tryCommand(srv *server.Server, c *server.Config) string {
	// With TLS: skip verification (-k, -insecure), which a local try of
	// a certificate not issued for this address needs; with mutual TLS,
	// name the client's files.
	curl, grpcurl, scheme := "curl -s", "grpcurl -plaintext", "http"
	if c.TLSCert != "" {
		curl, grpcurl, scheme = "curl -sk", "grpcurl -insecure", "https"
		if c.TLSClientCA != "" {
			curl += " --cert client.pem --key client-key.pem"
			grpcurl += " -cert client.pem -key client-key.pem"
		}
	}
	if srv.Gateway() != nil {
		return strings.Replace(curl, " -s", " -i", 1) + curlURL(scheme, srv.HTTPAddr(), "/")
	}
	d := sample{"api", "generic_key", "demo"}
	if len(c.PolicyFiles) > 0 {
		var ok bool
		if d, ok = sampleDescriptor(srv.Policy()); !ok {
			d = sample{}
		}
	}
	body := fmt.Sprintf(`{"domain":%s,"descriptors":[{"entries":[{"key":%s,"value":%s}]}]}`,
		strconv.Quote(d.domain), strconv.Quote(d.key), strconv.Quote(d.value))
	plain := d.domain != "" && !strings.ContainsAny(body, "'\\")
	api := srv.AdminAddr()
	if api == nil {
		api = srv.HTTPAddr()
	}
	switch {
	case api != nil && plain:
		return curl + " -H 'Content-Type: application/json' -d '" + body + "'" + curlURL(scheme, api, "/v1/check")
	case api != nil:
		return curl + curlURL(scheme, api, "/readyz")
	case srv.GRPCAddr() != nil && plain:
		return grpcurl + " -d '" + body + "'" + grpcurlTarget(srv.GRPCAddr()) + " envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
	case srv.GRPCAddr() != nil:
		return grpcurl + grpcurlTarget(srv.GRPCAddr()) + " grpc.health.v1.Health/Check"
	}
	return ""
}

type sample struct{ domain, key, value string }

// sampleDescriptor finds a descriptor of one entry that a rule of the
// policy matches, for the banner's command: the first rule matching one
// entry, with its value, or "example" for a rule matching any value.
func sampleDescriptor(p *policy.Policy) (sample, bool) {
	if p == nil {
		return sample{}, false
	}
	for _, d := range p.Domains {
		for _, r := range d.Rules {
			if len(r.Match) != 1 {
				continue
			}
			m := r.Match[0]
			switch m.Kind {
			case policy.MatchExact:
				return sample{d.Name, m.Key, m.Value}, true
			case policy.MatchPrefix:
				return sample{d.Name, m.Key, m.Value + "example"}, true
			case policy.MatchAny:
				return sample{d.Name, m.Key, "example"}, true
			}
		}
	}
	return sample{}, false
}

// where names the address a listener is bound to for people: scheme://
// host:port (no scheme: host:port) over TCP, unix:PATH on a Unix socket.
func where(scheme string, a net.Addr) string {
	if a.Network() == "unix" {
		return "unix:" + a.String()
	}
	if scheme == "" {
		return dialable(a)
	}
	return scheme + "://" + dialable(a)
}

// curlURL returns curl's arguments reaching path on the HTTP listener at
// a, with a leading space.
func curlURL(scheme string, a net.Addr, path string) string {
	if a.Network() == "unix" {
		return " --unix-socket " + a.String() + " " + scheme + "://localhost" + path
	}
	return " " + scheme + "://" + dialable(a) + path
}

// grpcurlTarget returns grpcurl's arguments reaching the gRPC listener at
// a, with a leading space.
func grpcurlTarget(a net.Addr) string {
	if a.Network() == "unix" {
		return " -unix " + a.String()
	}
	return " " + dialable(a)
}

// dialable returns a listener's address as a client would dial it: an
// unspecified host (":8080", "[::]:8080") becomes localhost.
func dialable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
