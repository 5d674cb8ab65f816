package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/server"
	"github.com/redis/go-redis/v9"
)

// serveConfig holds serve's flags.
type serveConfig struct {
	httpAddr, grpcAddr, adminAddr string
	debugAddr                     string
	tlsCert, tlsKey, tlsClientCA  string
	redisCA, redisCert, redisKey  string
	rlsHeaders                    choiceFlag
	mergeDomains                  bool
	allowReset                    bool
	connAge, connAgeGrace         time.Duration
	config                        listFlag
	redis                         string
	upstream                      string
	domain                        string
	descriptors                   listFlag
	trusted                       *prefixesFlag
	logFormat, logLevel           choiceFlag
	shutdown, reload              time.Duration
	maxBody, gwMaxBody, maxHeader sizeFlag
	readHeader, read, write, idle time.Duration
	dialTimeout, upstreamTimeout  time.Duration
	shadow                        bool
	keyPrefix                     string
}

func newServeCommand(c *serveConfig) *command {
	cmd := newCommand("serve", "[flags]",
		`Run the rate-limit service: the HTTP JSON API (/v1/check, /v1/acquire,
/v1/release, envoyproxy/ratelimit's /json), /healthz, /readyz, /metrics,
and over gRPC Envoy's rate-limit service (envoy.service.ratelimit.v3),
admit.v1, health and reflection. With --upstream, the HTTP listener is a
gateway that applies the policy to every request and proxies the admitted
ones; the API and the other endpoints move to --admin-addr.

Without --config it enforces the built-in policy (domain "api"; see
server/default.yaml) in memory. It prints the addresses it listens on and a
command to try. SIGHUP reloads the policy files, as does a change of them;
SIGTERM and SIGINT drain the requests in flight and exit.`)
	fs := cmd.fs
	def := server.DefaultConfig()
	fs.StringVar(&c.httpAddr, "http-addr", def.HTTPAddr, "listen for HTTP on `ADDR` (host:port, port 0 picking a free one, or unix:PATH; empty: no HTTP listener)")
	fs.StringVar(&c.grpcAddr, "grpc-addr", def.GRPCAddr, "listen for gRPC on `ADDR` (host:port or unix:PATH; empty: no gRPC listener)")
	fs.StringVar(&c.adminAddr, "admin-addr", "", "serve /healthz, /readyz, /metrics and the HTTP API on `ADDR`, apart from --http-addr\n(default: on --http-addr; with --upstream, :8082)")
	fs.StringVar(&c.debugAddr, "debug-addr", "", "serve Go's profiler (/debug/pprof/) and the policy in force (/debug/policy) on `ADDR`, as\nenvoyproxy/ratelimit's debug port does; bind it to localhost: it shows the process's internals (default: none)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "serve HTTP and gRPC over TLS with the certificate chain in the PEM `FILE` (with --tls-key);\nre-read when it changes (default: no TLS)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "the private key of --tls-cert, a PEM `FILE`")
	fs.StringVar(&c.tlsClientCA, "tls-client-ca", "", "require client certificates signed by a CA of the PEM `FILE` (mutual TLS; needs --tls-cert)")
	fs.DurationVar(&c.connAge, "grpc-max-connection-age", def.GRPCMaxConnectionAge, "ask gRPC clients to reconnect once their connection is `DURATION` old, so that they spread\nover the instances (0: never)")
	fs.DurationVar(&c.connAgeGrace, "grpc-max-connection-age-grace", def.GRPCMaxConnectionAgeGrace, "then close the connection `DURATION` later")
	c.rlsHeaders = choiceFlag{value: "ietf", choices: []string{"ietf", "envoy", "none"}}
	fs.Var(&c.rlsHeaders, "rls-headers", "the fields Envoy's rate-limit service asks Envoy to add to responses, `STYLE`: ietf (RateLimit-Policy,\nRateLimit, Retry-After), envoy (envoyproxy/ratelimit's RateLimit-Limit, -Remaining, -Reset) or none")
	c.config = listFlag{sep: ","}
	fs.Var(&c.config, "config", "load the policy from `FILE`, admit's YAML format or envoyproxy/ratelimit's; a directory\nstands for its *.yaml and *.yml files; may repeat (the variable separates them with commas).\nDefault: the built-in policy")
	fs.StringVar(&c.redis, "redis", "", "keep the rules' state in Redis at `URL`, shared by every instance on it:\nredis://[user:pass@]host:port[/db], rediss://... (TLS), unix:///path,\nredis+sentinel://sentinel:26379?master_name=NAME[&addr=sentinel2:26379],\nredis+cluster://node1:6379?addr=node2:6379&addr=node3:6379\n(default: in memory)")
	fs.StringVar(&c.redisCA, "redis-tls-ca", "", "verify a rediss:// Redis against the CAs of the PEM `FILE` instead of the system's")
	fs.StringVar(&c.redisCert, "redis-tls-cert", "", "present the client certificate of the PEM `FILE` to a rediss:// Redis (with --redis-tls-key)")
	fs.StringVar(&c.redisKey, "redis-tls-key", "", "the private key of --redis-tls-cert, a PEM `FILE`")
	fs.StringVar(&c.keyPrefix, "key-prefix", "", "put `PREFIX` in front of the Redis keys of every rule, so that services sharing a Redis keep apart")
	fs.StringVar(&c.upstream, "upstream", "", "gateway mode: proxy the requests the policy admits to `URL` (http:// or https://)")
	fs.StringVar(&c.domain, "domain", "", "the policy `DOMAIN` the gateway checks requests against (default: the policy's only domain)")
	c.descriptors = listFlag{sep: ";", check: func(s string) error {
		var ce *server.ConfigError
		if err := (server.Config{Upstream: "http://upstream", Descriptors: []string{s}}).Validate(); errors.As(err, &ce) {
			return ce.Err
		}
		return nil
	}}
	fs.Var(&c.descriptors, "descriptor", "a descriptor the gateway derives from each request, `KEY=SOURCE[,KEY=SOURCE...]`, outermost first; SOURCE:\nclient_ip, header:NAME, query:NAME, path, method, host, const:VALUE ('!' in front: required);\nmay repeat (the variable separates them with ';'). Default:\n"+strings.Join(def.Descriptors, "; "))
	c.trusted = newPrefixesFlag()
	fs.Var(c.trusted, "trusted-proxies", "trust the proxies at `CIDRS` (comma-separated prefixes or addresses): the gateway takes\nthe client's address from their X-Forwarded-For and passes their forwarding headers on (default: none)")
	c.logFormat = choiceFlag{value: "text", choices: []string{"text", "json"}}
	fs.Var(&c.logFormat, "log-format", "log in `FORMAT` text or json, on stderr")
	c.logLevel = choiceFlag{value: "info", choices: []string{"debug", "info", "warn", "error"}}
	fs.Var(&c.logLevel, "log-level", "log records of `LEVEL` debug, info, warn or error and above")
	fs.DurationVar(&c.shutdown, "shutdown-timeout", def.ShutdownTimeout, "on SIGTERM, wait up to `DURATION` for requests in flight before cutting them off")
	fs.DurationVar(&c.reload, "reload-interval", def.ReloadInterval, "look at the policy files for changes every `DURATION` (0: only on SIGHUP)")
	c.maxBody = sizeFlag{def.MaxRequestBytes}
	fs.Var(&c.maxBody, "max-body-bytes", "refuse HTTP API bodies and gRPC messages over `SIZE` (413, RESOURCE_EXHAUSTED); bytes, or with KiB, MiB")
	fs.Var(&c.gwMaxBody, "upstream-max-body-bytes", "gateway: refuse request bodies over `SIZE` with 413 (default: no limit)")
	c.maxHeader = sizeFlag{int64(def.MaxHeaderBytes)}
	fs.Var(&c.maxHeader, "max-header-bytes", "refuse HTTP request headers over `SIZE` with 431")
	fs.DurationVar(&c.readHeader, "read-header-timeout", def.ReadHeaderTimeout, "cut off HTTP clients that take longer than `DURATION` to send a request's header (slow loris)")
	fs.DurationVar(&c.read, "read-timeout", def.ReadTimeout, "cut off HTTP clients that take longer than `DURATION` to send a whole request (0: no limit)")
	fs.DurationVar(&c.write, "write-timeout", def.WriteTimeout, "cut off HTTP responses, proxied ones included, not written within `DURATION` (0: no limit)")
	fs.DurationVar(&c.idle, "idle-timeout", def.IdleTimeout, "close idle keep-alive HTTP connections after `DURATION`")
	fs.DurationVar(&c.dialTimeout, "upstream-dial-timeout", def.UpstreamDialTimeout, "gateway: give up connecting to the upstream after `DURATION` (502)")
	fs.DurationVar(&c.upstreamTimeout, "upstream-timeout", def.UpstreamTimeout, "gateway: give up waiting for the upstream's response header after `DURATION` (504)")
	fs.BoolVar(&c.allowReset, "allow-reset", false, "serve POST /v1/reset and admit.v1's Reset, which give a client its limits back; whoever reaches\nthe APIs can then reset any limit: keep them private")
	fs.BoolVar(&c.mergeDomains, "merge-domains", false, "let several --config files define one domain, merged (envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG)")
	fs.BoolVar(&c.shadow, "shadow", false, "shadow mode: decide and count every request, refuse none (envoyproxy/ratelimit's SHADOW_MODE)")
	return cmd
}

// serve runs `admit serve`.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, reload <-chan os.Signal) error {
	var c serveConfig
	cmd := newServeCommand(&c)
	rest, err := cmd.parse(args, getenv)
	if errors.Is(err, errHelp) {
		cmd.printUsage(stdout)
		return nil
	}
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageErrorf("serve takes no arguments (got %q); policy files go in --config", truncate(rest[0], 64))
	}
	log := newLogger(stderr, c.logFormat.value, c.logLevel.value)
	cfg, err := c.serverConfig(cmd, log)
	if err != nil {
		return err
	}
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
	printBanner(stdout, srv, &c)
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

// serverConfig turns the flags into the server's Config and checks it: a
// problem is a usage error naming the flag and its variable.
func (c *serveConfig) serverConfig(cmd *command, log *slog.Logger) (server.Config, error) {
	cfg := server.Config{
		Logger:            log,
		HTTPAddr:          addrOrOff(c.httpAddr),
		GRPCAddr:          addrOrOff(c.grpcAddr),
		AdminAddr:         c.adminAddr,
		DebugAddr:         c.debugAddr,
		TLSCert:           c.tlsCert,
		TLSKey:            c.tlsKey,
		TLSClientCA:       c.tlsClientCA,
		RLSHeaders:        c.rlsHeaders.value,
		AllowReset:        c.allowReset,
		PolicyFiles:       c.config.items,
		MergeDomains:      c.mergeDomains,
		Redis:             c.redis,
		RedisTLSCA:        c.redisCA,
		RedisTLSCert:      c.redisCert,
		RedisTLSKey:       c.redisKey,
		KeyPrefix:         c.keyPrefix,
		Shadow:            c.shadow,
		MaxRequestBytes:   c.maxBody.n,
		ShutdownTimeout:   c.shutdown,
		ReloadInterval:    offIfZero(c.reload),
		ReadHeaderTimeout: offIfZero(c.readHeader),
		ReadTimeout:       offIfZero(c.read),
		WriteTimeout:      offIfZero(c.write),
		IdleTimeout:       offIfZero(c.idle),

		GRPCMaxConnectionAge:      offIfZero(c.connAge),
		GRPCMaxConnectionAgeGrace: offIfZero(c.connAgeGrace),
	}
	if err := c.checkFlags(); err != nil {
		return cfg, err
	}
	cfg.MaxHeaderBytes = int(c.maxHeader.n)
	if c.upstream != "" {
		cfg.Upstream = c.upstream
		cfg.GatewayDomain = c.domain
		cfg.Descriptors = c.descriptors.items
		cfg.TrustedProxies = c.trusted.prefixes()
		cfg.UpstreamDialTimeout = c.dialTimeout
		cfg.UpstreamTimeout = c.upstreamTimeout
		cfg.UpstreamMaxBodyBytes = c.gwMaxBody.n
	}
	if err := c.gatewayOnly(cmd); err != nil {
		return cfg, err
	}
	return cfg, fieldError(cfg.Validate())
}

// addrOrOff maps an empty address flag (no listener) to the Config's "off".
func addrOrOff(a string) string {
	if a == "" {
		return "off"
	}
	return a
}

// offIfZero maps a duration flag's 0 (none) to the Config's negative.
func offIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// flagOfField names the flag of each Config field a flag sets.
var flagOfField = map[string]string{
	"HTTPAddr": "http-addr", "GRPCAddr": "grpc-addr", "AdminAddr": "admin-addr", "DebugAddr": "debug-addr",
	"TLSCert": "tls-cert", "TLSKey": "tls-key", "TLSClientCA": "tls-client-ca", "RLSHeaders": "rls-headers",
	"GRPCMaxConnectionAge": "grpc-max-connection-age", "GRPCMaxConnectionAgeGrace": "grpc-max-connection-age-grace",
	"PolicyFiles": "config", "Redis": "redis", "RedisTLSCA": "redis-tls-ca", "RedisTLSCert": "redis-tls-cert",
	"RedisTLSKey": "redis-tls-key", "KeyPrefix": "key-prefix", "ShutdownTimeout": "shutdown-timeout",
	"ReloadInterval": "reload-interval", "MaxRequestBytes": "max-body-bytes", "MaxHeaderBytes": "max-header-bytes",
	"Upstream": "upstream", "GatewayDomain": "domain", "Descriptors": "descriptor", "TrustedProxies": "trusted-proxies",
	"UpstreamDialTimeout": "upstream-dial-timeout", "UpstreamTimeout": "upstream-timeout",
	"UpstreamMaxBodyBytes": "upstream-max-body-bytes",
}

// fieldError turns Config.Validate's error into a usage error naming the
// flag and the variable of the field.
func fieldError(err error) error {
	var ce *server.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	if name, ok := flagOfField[ce.Field]; ok {
		return flagError(name, ce.Err)
	}
	return usageErrorf("%v", err)
}

// flagError is the usage error of a flag whose value is wrong, naming the
// flag and its environment variable.
func flagError(flagName string, err error) error {
	return usageErrorf("--%s (%s): %v", flagName, envName(flagName), err)
}

// checkFlags checks what the flags say beyond the Config: a flag's 0
// where the Config's 0 would mean the default, and negative durations,
// which a flag never takes.
func (c *serveConfig) checkFlags() error {
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return usageErrorf("--tls-cert (%s) and --tls-key (%s) go together", envName("tls-cert"), envName("tls-key"))
	}
	if c.tlsClientCA != "" && c.tlsCert == "" {
		return flagError("tls-client-ca", errors.New("needs --tls-cert and --tls-key"))
	}
	if c.connAge < 0 || c.connAgeGrace < 0 {
		return usageErrorf("--grpc-max-connection-age and --grpc-max-connection-age-grace must not be negative")
	}
	// In a fixed order, so that of two negative durations the error
	// always names the same one.
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"shutdown-timeout", c.shutdown}, {"reload-interval", c.reload}, {"read-header-timeout", c.readHeader},
		{"read-timeout", c.read}, {"write-timeout", c.write}, {"idle-timeout", c.idle},
		{"upstream-dial-timeout", c.dialTimeout}, {"upstream-timeout", c.upstreamTimeout},
	} {
		if f.d < 0 {
			return flagError(f.name, fmt.Errorf("negative duration %v", f.d))
		}
	}
	if c.shutdown == 0 {
		return flagError("shutdown-timeout", errors.New("want a positive duration"))
	}
	if c.dialTimeout == 0 || c.upstreamTimeout == 0 {
		return usageErrorf("--upstream-dial-timeout and --upstream-timeout must be positive")
	}
	if c.maxBody.n <= 0 || c.maxBody.n > 1<<31-1 {
		return flagError("max-body-bytes", fmt.Errorf("%d: want 1 byte to 2GiB-1", c.maxBody.n))
	}
	if c.maxHeader.n <= 0 || c.maxHeader.n > 1<<30 {
		return flagError("max-header-bytes", fmt.Errorf("%d: want 1 byte to 1GiB", c.maxHeader.n))
	}
	if c.redis == "" && (c.redisCA != "" || c.redisCert != "" || c.redisKey != "") {
		return usageErrorf("--redis-tls-ca, --redis-tls-cert and --redis-tls-key need --redis (%s)", envName("redis"))
	}
	return nil
}

// gatewayOnly reports the gateway's flags given without --upstream.
func (c *serveConfig) gatewayOnly(cmd *command) error {
	if c.upstream != "" {
		return nil
	}
	gatewayOnly := map[string]bool{"domain": true, "descriptor": true, "trusted-proxies": true, "upstream-max-body-bytes": true}
	var set []string
	cmd.fs.Visit(func(f *flag.Flag) {
		if gatewayOnly[f.Name] {
			set = append(set, "--"+f.Name)
		}
	})
	if len(set) > 0 {
		return usageErrorf("%s: only with --upstream (gateway mode)", strings.Join(set, ", "))
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
func printBanner(w io.Writer, srv *server.Server, c *serveConfig) {
	policyText := "built-in (domain \"api\", server/default.yaml)"
	if len(c.config.items) > 0 {
		policyText = strings.Join(c.config.items, ", ")
	}
	store := "in memory"
	if c.redis != "" {
		store = "with Redis"
		if u, err := url.Parse(c.redis); err == nil {
			store += " at " + u.Redacted()
		}
	}
	fmt.Fprintf(w, "admit serve: policy %s, %s\n", policyText, store)
	scheme, grpcTLS := "http", ""
	if c.tlsCert != "" {
		scheme, grpcTLS = "https", ", TLS"
		if c.tlsClientCA != "" {
			grpcTLS = ", mutual TLS"
		}
	}
	if a := srv.HTTPAddr(); a != nil {
		if srv.Gateway() != nil {
			fmt.Fprintf(w, "admit serve: gateway to %s on %s\n", c.upstream, where(scheme, a))
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
func tryCommand(srv *server.Server, c *serveConfig) string {
	// With TLS: skip verification (-k, -insecure), which a local try of
	// a certificate not issued for this address needs; with mutual TLS,
	// name the client's files.
	curl, grpcurl, scheme := "curl -s", "grpcurl -plaintext", "http"
	if c.tlsCert != "" {
		curl, grpcurl, scheme = "curl -sk", "grpcurl -insecure", "https"
		if c.tlsClientCA != "" {
			curl += " --cert client.pem --key client-key.pem"
			grpcurl += " -cert client.pem -key client-key.pem"
		}
	}
	if srv.Gateway() != nil {
		return strings.Replace(curl, " -s", " -i", 1) + curlURL(scheme, srv.HTTPAddr(), "/")
	}
	d := sample{"api", "generic_key", "demo"}
	if len(c.config.items) > 0 {
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
