package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/policy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// The defaults of the options of New and NewGateway.
const (
	// DefaultHTTPAddr is the default address of the HTTP listener: the
	// HTTP API, or the gateway (see WithHTTPAddr).
	DefaultHTTPAddr = ":8080"
	// DefaultGRPCAddr is the default address of the gRPC listener (see
	// WithGRPCAddr).
	DefaultGRPCAddr = ":8081"
	// DefaultGatewayAdminAddr is the default address of the admin
	// listener in gateway mode (see WithAdminAddr).
	DefaultGatewayAdminAddr = ":8082"
	// DefaultShutdownTimeout is the default time a graceful shutdown
	// waits for requests in flight (see WithShutdownTimeout).
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultReloadInterval is the default interval between two looks at
	// the policy files (see WithReloadInterval).
	DefaultReloadInterval = 2 * time.Second
	// DefaultMaxHeaderBytes is the default cap on the header of an HTTP
	// request (see WithMaxHeaderBytes).
	DefaultMaxHeaderBytes = http.DefaultMaxHeaderBytes
	// DefaultReadHeaderTimeout is the default time a client has to send
	// a request's header (see WithReadHeaderTimeout).
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout is the default time a client has to send a whole
	// request, body included (see WithReadTimeout).
	DefaultReadTimeout = 60 * time.Second
	// DefaultWriteTimeout is the default time the server has to write a
	// response, from the end of the request's header (see
	// WithWriteTimeout).
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout is the default time an idle keep-alive
	// connection is kept (see WithIdleTimeout).
	DefaultIdleTimeout = 120 * time.Second
	// DefaultUpstreamDialTimeout is the default bound on connecting to the
	// gateway's upstream (see WithUpstreamDialTimeout).
	DefaultUpstreamDialTimeout = 5 * time.Second
	// DefaultUpstreamTimeout is the default time the gateway waits for
	// the header of the upstream's response (see WithUpstreamTimeout).
	DefaultUpstreamTimeout = 30 * time.Second
	// DefaultGRPCMaxConnectionAge and DefaultGRPCMaxConnectionAgeGrace
	// are the default age of a gRPC connection at which the server asks
	// the client to reconnect, and the time it then gives the calls in
	// flight (see WithGRPCMaxConnectionAge): envoyproxy/ratelimit's.
	DefaultGRPCMaxConnectionAge      = 24 * time.Hour
	DefaultGRPCMaxConnectionAgeGrace = time.Hour
)

// Option configures a Server (New) or a Gateway (NewGateway). Each
// option says what it applies to; New passes the gateway's options on to
// its gateway, and NewGateway ignores the options of the Server. The
// zero set of options gives the defaults documented on each option.
type Option interface {
	apply(*options)
}

type options struct {
	httpAddr, grpcAddr, adminAddr string
	adminSet                      bool
	debugAddr                     string
	tlsCert, tlsKey, clientCA     string
	connAge, connAgeGrace         time.Duration
	rlsHeaders                    RLSHeaders
	mergeDomains                  bool
	allowReset                    bool
	files                         []string
	pol                           *policy.Policy
	redis                         redis.UniversalClient
	engineOpts                    []policy.Option
	log                           *slog.Logger
	reg                           *prometheus.Registry
	shutdown                      time.Duration
	reload                        time.Duration
	maxBody                       int64
	maxHeader                     int
	readHeader, read, write, idle time.Duration
	upstream                      *url.URL
	domain                        string

	// Gateway options.
	trusted     []netip.Prefix
	specs       []string
	descs       []policy.HTTPDescriptor
	dialTimeout time.Duration
	respTimeout time.Duration
	gwMaxBody   int64
	transport   http.RoundTripper
	limitOpts   []httplimit.Option

	err error
}

func defaultOptions() options {
	return options{
		httpAddr:    DefaultHTTPAddr,
		grpcAddr:    DefaultGRPCAddr,
		shutdown:    DefaultShutdownTimeout,
		reload:      DefaultReloadInterval,
		maxBody:     DefaultMaxBodyBytes,
		maxHeader:   DefaultMaxHeaderBytes,
		readHeader:  DefaultReadHeaderTimeout,
		read:        DefaultReadTimeout,
		write:       DefaultWriteTimeout,
		idle:        DefaultIdleTimeout,
		dialTimeout: DefaultUpstreamDialTimeout,
		respTimeout: DefaultUpstreamTimeout,

		connAge:      DefaultGRPCMaxConnectionAge,
		connAgeGrace: DefaultGRPCMaxConnectionAgeGrace,
	}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func (o *options) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithHTTPAddr sets the address the HTTP listener binds (a Server
// option): "host:port", ":port", or port 0 for a free port (the bound
// address is then HTTPAddr's), or "unix:PATH" (also "unix://PATH") for a
// Unix socket, which replaces a socket file nobody answers on and is
// removed at Close. It serves the HTTP API, or, with WithUpstream, the
// gateway (which knows no client address on a Unix socket: client_ip
// descriptors are then missing). "" disables the HTTP listener. The
// default is DefaultHTTPAddr (":8080"). The other listeners take the same
// forms.
func WithHTTPAddr(addr string) Option {
	return optionFunc(func(o *options) { o.httpAddr = addr })
}

// WithGRPCAddr sets the address the gRPC listener binds (a Server option):
// Envoy's rate-limit service, admit.v1, gRPC health and reflection. ""
// disables it. The default is DefaultGRPCAddr (":8081").
func WithGRPCAddr(addr string) Option {
	return optionFunc(func(o *options) { o.grpcAddr = addr })
}

// WithAdminAddr sets the address of the admin listener (a Server option),
// which serves /healthz, /readyz, /metrics and the HTTP API apart from
// the HTTP listener. The default, "", serves them on the HTTP listener,
// except in gateway mode (WithUpstream), where the HTTP listener proxies
// every path and the admin listener binds DefaultGatewayAdminAddr
// (":8082").
func WithAdminAddr(addr string) Option {
	return optionFunc(func(o *options) { o.adminAddr, o.adminSet = addr, addr != "" })
}

// WithTLS serves the HTTP listeners (the API, the gateway, the admin
// listener) and the gRPC listener over TLS 1.2 or later (a Server option),
// with the certificate chain and private key of the PEM files certFile and
// keyFile, each of at most 1 MiB (a larger file, or one that never ends,
// is read no further and is an error). The files are read at New, which
// fails on files that do not load, and again when they change (their size
// or modification time, looked at on a handshake at most once a second),
// so that a rotated certificate serves the next connections without a
// restart; a change that does not load keeps the files in force and is
// logged. The debug listener (WithDebugAddr) stays plain. The default is
// no TLS.
func WithTLS(certFile, keyFile string) Option {
	return optionFunc(func(o *options) { o.tlsCert, o.tlsKey = certFile, keyFile })
}

// WithClientCA makes the TLS listeners of WithTLS require a client
// certificate signed by one of the certificate authorities of the PEM file
// caFile (mutual TLS; a Server option), of at most 1 MiB, reloaded as
// WithTLS's files are. It needs WithTLS. The default is none: clients need
// no certificate.
func WithClientCA(caFile string) Option {
	return optionFunc(func(o *options) { o.clientCA = caFile })
}

// WithGRPCMaxConnectionAge makes the gRPC server ask each client
// connection to go away once it is age old (a GOAWAY, with random jitter
// of 10%), and close it grace later (a Server option), so that clients
// holding long-lived connections, as Envoy does, reconnect and spread over
// the instances behind a load balancer (envoyproxy/ratelimit's
// GRPC_MAX_CONNECTION_AGE and _GRACE). The defaults are
// DefaultGRPCMaxConnectionAge and DefaultGRPCMaxConnectionAgeGrace; an age
// of 0 keeps connections forever. Negative durations are an error.
func WithGRPCMaxConnectionAge(age, grace time.Duration) Option {
	return optionFunc(func(o *options) {
		if age < 0 || grace < 0 {
			o.fail("WithGRPCMaxConnectionAge(%v, %v): negative duration", age, grace)
			return
		}
		o.connAge, o.connAgeGrace = age, grace
	})
}

// WithAllowReset serves POST /v1/reset on the HTTP API (see WithReset), so
// that an operator can give a client its limits back (a Server option).
// Whoever reaches the API can then reset any limit: enable it where the
// API is private (WithAdminAddr). The default is false.
func WithAllowReset(on bool) Option {
	return optionFunc(func(o *options) { o.allowReset = on })
}

// WithMergeDomains lets several policy files (WithPolicyFiles) define
// one domain, merged into one (policy.MergeDomains), as
// envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG (a Server option). The
// default, false, reports a domain defined twice as an error.
func WithMergeDomains(on bool) Option {
	return optionFunc(func(o *options) { o.mergeDomains = on })
}

// WithRLSHeaders sets the fields Envoy's rate-limit service asks Envoy to
// add to the client's response (a Server option; see RLSHeaders and
// WithGRPCHeaderStyle). The default is RLSHeadersIETF.
func WithRLSHeaders(h RLSHeaders) Option {
	return optionFunc(func(o *options) {
		if h > RLSHeadersNone {
			o.fail("WithRLSHeaders(%v)", h)
			return
		}
		o.rlsHeaders = h
	})
}

// WithDebugAddr serves Go's profiler (net/http/pprof: /debug/pprof/ and
// its profiles) and /debug/policy (the policy files in force as they were
// loaded, each with its SHA-256) on a listener of its own at addr (a
// Server option), as envoyproxy/ratelimit's debug port does. Bind it to a loopback address
// or an otherwise private one: it shows the process's internals and can
// keep a CPU busy. Its requests have no write timeout (a CPU profile runs
// for as long as it asks), and Shutdown closes it at once rather than
// waiting for them. The default, empty, serves no profiler.
func WithDebugAddr(addr string) Option {
	return optionFunc(func(o *options) { o.debugAddr = addr })
}

// WithPolicyFiles makes the Server load its policy from paths (a Server
// option): policy files in this package's YAML format or envoyproxy/
// ratelimit's (see policy.Parse), and directories, each standing for its
// *.yaml and *.yml files (not those of its subdirectories), in name
// order. The files are merged into one policy (policy.LoadFiles) and
// reloaded on Reload and when they change (WithReloadInterval); a
// directory is read again each time, so files added to it are loaded.
// The default is none: the built-in policy (DefaultPolicy).
func WithPolicyFiles(paths ...string) Option {
	return optionFunc(func(o *options) {
		for _, p := range paths {
			if p == "" {
				o.fail("WithPolicyFiles: an empty path")
				return
			}
		}
		o.files = append(o.files, paths...)
	})
}

// WithPolicy makes the Server enforce p, a policy built in Go (a Server
// option); Reload then has nothing to reload. It cannot be combined with
// WithPolicyFiles. The default is the built-in policy (DefaultPolicy).
func WithPolicy(p *policy.Policy) Option {
	return optionFunc(func(o *options) {
		if p == nil {
			o.fail("WithPolicy: nil policy")
			return
		}
		o.pol = p
	})
}

// WithRedis gives the Server a Redis deployment for the rules kept in
// Redis (a Server option), so that several Servers on one Redis enforce
// one limit together: the Server builds a redisstore.Store on client
// (closed by Close) and its engines keep the policy's rules with store:
// redis there, and those without a store in an envoyproxy/ratelimit file.
// The built-in policy is then kept in Redis too (see DefaultPolicy). The
// Server does not close client. NewRedisClient makes a client from a URL.
// The default is none: everything in memory.
func WithRedis(client redis.UniversalClient) Option {
	return optionFunc(func(o *options) { o.redis = client })
}

// WithEngineOptions adds options to every engine the Server builds (a
// Server option), such as policy.WithKeyPrefix, policy.WithMaxKeys or
// policy.WithClock; the Server sets the Redis store, the observer, the
// logger and the previous engine itself. The default is none.
func WithEngineOptions(opts ...policy.Option) Option {
	return optionFunc(func(o *options) { o.engineOpts = append(o.engineOpts, opts...) })
}

// WithLogger sets the structured logger of the Server and its gateway
// (both): start, reloads, failures of the store, upstream errors,
// shutdown. The default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.log = l })
}

// WithRegistry sets the Prometheus registry the Server registers its
// metrics on and serves at /metrics (a Server option). The default is a
// new registry of the Server's own, with the Go and process collectors;
// the global registry is never used.
func WithRegistry(reg *prometheus.Registry) Option {
	return optionFunc(func(o *options) { o.reg = reg })
}

// WithShutdownTimeout sets how long a graceful shutdown (Run's, when its
// context ends) waits for the requests in flight before it cuts them off
// (a Server option). The default is DefaultShutdownTimeout (10 s); d must
// be positive.
func WithShutdownTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.fail("WithShutdownTimeout(%v): want a positive duration", d)
			return
		}
		o.shutdown = d
	})
}

// WithReloadInterval sets how often the Server looks at its policy files
// for a change (size, modification time, content) and reloads them (a
// Server option). 0 turns the polling off: only Reload reloads. The
// default is DefaultReloadInterval (2 s); d must not be negative.
func WithReloadInterval(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.fail("WithReloadInterval(%v): want a duration >= 0", d)
			return
		}
		o.reload = d
	})
}

// WithMaxRequestBytes caps the body of an HTTP API request and the size
// of a gRPC message, in bytes (a Server option): a larger one is refused
// (413, RESOURCE_EXHAUSTED). The default is DefaultMaxBodyBytes (1 MiB);
// n must be from 1 to 2^31-1.
func WithMaxRequestBytes(n int64) Option {
	return optionFunc(func(o *options) {
		if n <= 0 || n > 1<<31-1 {
			o.fail("WithMaxRequestBytes(%d): want 1 to %d", n, 1<<31-1)
			return
		}
		o.maxBody = n
	})
}

// WithMaxHeaderBytes caps the header of an HTTP request, request line
// included, in bytes (a Server option): a larger one is refused with 431.
// The default is DefaultMaxHeaderBytes (1 MiB); n must be positive.
func WithMaxHeaderBytes(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 {
			o.fail("WithMaxHeaderBytes(%d): want a positive size", n)
			return
		}
		o.maxHeader = n
	})
}

func timeoutOption(name string, d time.Duration, set func(*options)) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.fail("%s(%v): want a duration >= 0 (0: no timeout)", name, d)
			return
		}
		set(o)
	})
}

// WithReadHeaderTimeout sets how long an HTTP client has to send a
// request's header (a Server option; http.Server.ReadHeaderTimeout): a
// client sending it slower (slow loris) is cut off. 0 means no timeout.
// The default is DefaultReadHeaderTimeout (5 s).
func WithReadHeaderTimeout(d time.Duration) Option {
	return timeoutOption("WithReadHeaderTimeout", d, func(o *options) { o.readHeader = d })
}

// WithReadTimeout sets how long an HTTP client has to send a whole
// request, body included (a Server option; http.Server.ReadTimeout). 0
// means no timeout. The default is DefaultReadTimeout (60 s).
func WithReadTimeout(d time.Duration) Option {
	return timeoutOption("WithReadTimeout", d, func(o *options) { o.read = d })
}

// WithWriteTimeout sets how long the Server has to write a response,
// counted from the end of the request's header (a Server option;
// http.Server.WriteTimeout): it bounds a gateway's response streamed from
// the upstream too. 0 means no timeout. The default is
// DefaultWriteTimeout (60 s).
func WithWriteTimeout(d time.Duration) Option {
	return timeoutOption("WithWriteTimeout", d, func(o *options) { o.write = d })
}

// WithIdleTimeout sets how long an idle keep-alive HTTP connection is
// kept open (a Server option; http.Server.IdleTimeout). 0 means the read
// timeout. The default is DefaultIdleTimeout (120 s).
func WithIdleTimeout(d time.Duration) Option {
	return timeoutOption("WithIdleTimeout", d, func(o *options) { o.idle = d })
}

// WithUpstream turns the Server's HTTP listener into a gateway (a Server
// option): each request is decided by the policy (WithGatewayDomain, the
// gateway's descriptors) and, if admitted, proxied to upstream (see
// Gateway). The HTTP API then moves to the admin listener (see
// WithAdminAddr). upstream must be an absolute http or https URL; its path
// is put in front of the requests' paths. The default is none: no
// gateway.
func WithUpstream(upstream *url.URL) Option {
	return optionFunc(func(o *options) {
		if err := checkUpstream(upstream); err != nil {
			o.fail("WithUpstream: %v", err)
			return
		}
		o.upstream = upstream
	})
}

func checkUpstream(u *url.URL) error {
	switch {
	case u == nil:
		return fmt.Errorf("nil URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("scheme %q: want http or https", truncateString(u.Scheme, 32))
	case u.Host == "":
		return fmt.Errorf("no host")
	case u.User != nil:
		return fmt.Errorf("credentials in the URL are not forwarded; give them as headers upstream")
	case u.Fragment != "":
		return fmt.Errorf("a fragment means nothing to an upstream")
	}
	return nil
}

// WithGatewayDomain sets the policy domain the gateway checks requests
// against (a Server option; NewGateway takes it as an argument). The
// default is the policy's domain when it has exactly one; with several,
// the option is required. A reload whose policy lacks the domain fails.
func WithGatewayDomain(domain string) Option {
	return optionFunc(func(o *options) {
		if domain == "" {
			o.fail("WithGatewayDomain: empty domain")
			return
		}
		o.domain = domain
	})
}

// WithTrustedProxies trusts the proxies in front of the gateway whose
// addresses are in prefixes (a gateway option): the client address of a
// request from one of them is taken from X-Forwarded-For (see
// httplimit.ClientIP), and its X-Forwarded-For, X-Forwarded-Proto,
// X-Forwarded-Host and X-Real-IP are passed on. A request from anyone
// else is keyed by its peer address, and those headers are replaced (the
// peer's address, the connection's scheme, the Host asked for) or
// removed. The default trusts no proxy; the option adds to earlier ones.
func WithTrustedProxies(prefixes ...netip.Prefix) Option {
	return optionFunc(func(o *options) {
		for _, p := range prefixes {
			if !p.IsValid() {
				o.fail("WithTrustedProxies: invalid prefix %v", p)
				return
			}
			o.trusted = append(o.trusted, p.Masked())
		}
	})
}

// WithDescriptorSpecs sets the descriptors the gateway derives from each
// request, written as ParseDescriptor reads them (a gateway option); the
// client_ip source follows WithTrustedProxies. An invalid specification is
// an error of New and NewGateway. The default is DefaultDescriptorSpecs.
func WithDescriptorSpecs(specs ...string) Option {
	return optionFunc(func(o *options) {
		if len(specs) == 0 {
			o.fail("WithDescriptorSpecs: no descriptors")
			return
		}
		o.specs = append([]string(nil), specs...)
		o.descs = nil
	})
}

// WithDescriptors sets the descriptors the gateway derives from each
// request, built in Go (a gateway option): see policy.HTTPDescriptor. The
// default is DefaultDescriptorSpecs.
func WithDescriptors(descs ...policy.HTTPDescriptor) Option {
	return optionFunc(func(o *options) {
		if len(descs) == 0 {
			o.fail("WithDescriptors: no descriptors")
			return
		}
		o.descs = append([]policy.HTTPDescriptor(nil), descs...)
		o.specs = nil
	})
}

// WithUpstreamDialTimeout bounds the time the gateway takes to connect
// to its upstream (a gateway option); a failure is answered 502. The
// default is DefaultUpstreamDialTimeout (5 s); d must be positive.
func WithUpstreamDialTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.fail("WithUpstreamDialTimeout(%v): want a positive duration", d)
			return
		}
		o.dialTimeout = d
	})
}

// WithUpstreamTimeout bounds the time the gateway waits for the header of
// the upstream's response once the request is sent (a gateway option;
// the body may then take as long as WithWriteTimeout allows); a timeout
// is answered 504. The default is DefaultUpstreamTimeout (30 s); d must
// be positive.
func WithUpstreamTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.fail("WithUpstreamTimeout(%v): want a positive duration", d)
			return
		}
		o.respTimeout = d
	})
}

// WithUpstreamMaxBodyBytes caps the body of a request the gateway
// forwards, in bytes (a gateway option): a request declaring a larger
// Content-Length is refused with 413 before it is decided, and a streamed
// body is cut off at the cap (413 if no response was sent yet). 0, the
// default, forwards bodies of any size; n must not be negative.
func WithUpstreamMaxBodyBytes(n int64) Option {
	return optionFunc(func(o *options) {
		if n < 0 {
			o.fail("WithUpstreamMaxBodyBytes(%d): want a size >= 0", n)
			return
		}
		o.gwMaxBody = n
	})
}

// WithTransport sets the RoundTripper the gateway sends requests upstream
// with (a gateway option), instead of its own transport (see Gateway:
// WithUpstreamDialTimeout and WithUpstreamTimeout, up to 256 idle
// connections to the upstream, kept 90 s, HTTP_PROXY ignored). The
// default is that transport.
func WithTransport(rt http.RoundTripper) Option {
	return optionFunc(func(o *options) {
		if rt == nil {
			o.fail("WithTransport: nil RoundTripper")
			return
		}
		o.transport = rt
	})
}

// WithLimitOptions adds options to the gateway's httplimit middleware (a
// gateway option): httplimit.WithFailClosed, WithShadow, WithFields,
// WithExemptPaths, WithProblemJSON... (WithCost does not apply). The
// default is none: 429 with the IETF and X-RateLimit fields, failing open.
func WithLimitOptions(opts ...httplimit.Option) Option {
	return optionFunc(func(o *options) { o.limitOpts = append(o.limitOpts, opts...) })
}
