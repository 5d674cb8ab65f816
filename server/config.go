package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/internal/policyfmt"
	"github.com/admit-go/admit/policy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Config configures a Server (New) and a Gateway (NewGateway): one field
// per setting, each saying its default. The zero value of a field means
// its default, so the zero Config is `admit serve` with no flags: the
// built-in policy, in memory, HTTP on :8080 and gRPC on :8081.
//
// Text fields (addresses, files, durations, sizes, URLs) are what the
// flags and ADMIT_* variables of `admit serve` set, under the names given
// in each field's comment; the fields holding Go values (a logger, a
// registry, a Redis client, a policy built in Go...) are not settable from
// flags. A duration that can be turned off is turned off by a negative
// value, as in net/http; the flags say 0 for it.
//
// Validate reports the first invalid field; New and NewGateway call it.
type Config struct {
	// HTTPAddr is the address of the HTTP listener (--http-addr):
	// "host:port", ":port", port 0 for a free port (Server.HTTPAddr
	// tells which), or "unix:PATH" (also "unix://PATH") for a Unix
	// socket, which replaces a socket file nobody answers on and is
	// removed at Close. It serves the HTTP API, /healthz, /readyz and
	// /metrics, or, with Upstream, the gateway (which knows no client
	// address on a Unix socket). "off" disables it. The default is
	// ":8080".
	HTTPAddr string
	// GRPCAddr is the address of the gRPC listener (--grpc-addr), in
	// HTTPAddr's forms: Envoy's rate-limit service, admit.v1, gRPC health
	// and reflection. "off" disables it. The default is ":8081".
	GRPCAddr string
	// AdminAddr is the address of the admin listener (--admin-addr),
	// which serves /healthz, /readyz, /metrics and the HTTP API apart
	// from the HTTP listener. The default, "", serves them on the HTTP
	// listener, except with Upstream, where the HTTP listener proxies
	// every path and the admin listener binds ":8082".
	AdminAddr string
	// DebugAddr is the address of a listener serving Go's profiler
	// (/debug/pprof/) and /debug/policy, the policy files in force with
	// their SHA-256 (--debug-addr). Bind it to a private address: it
	// shows the process's internals. Its requests have no timeouts, and
	// Shutdown closes it at once. The default, "", serves no profiler.
	DebugAddr string

	// TLSCert and TLSKey are the PEM files of the certificate chain and
	// private key the HTTP listeners and the gRPC listener serve TLS 1.2+
	// with (--tls-cert, --tls-key), each of at most 1 MiB, read at New
	// and again when they change (a rotated certificate serves the next
	// connections; a change that does not load is logged and the old
	// files stay in force). Both or neither. The debug listener stays
	// plain. The default is no TLS.
	TLSCert, TLSKey string
	// TLSClientCA is a PEM file of certificate authorities: the TLS
	// listeners then require a client certificate signed by one of them
	// (mutual TLS; --tls-client-ca). It needs TLSCert. The default is
	// none: clients need no certificate.
	TLSClientCA string

	// GRPCMaxConnectionAge is the age at which the gRPC server asks a
	// client connection to go away (a GOAWAY, with 10% jitter), so that
	// long-lived clients such as Envoy reconnect and spread over the
	// instances (--grpc-max-connection-age; envoyproxy/ratelimit's
	// GRPC_MAX_CONNECTION_AGE). Negative keeps connections forever. The
	// default is 24h.
	GRPCMaxConnectionAge time.Duration
	// GRPCMaxConnectionAgeGrace is how long after the GOAWAY the
	// connection is closed, cutting off calls still in flight
	// (--grpc-max-connection-age-grace). Negative means none. The default
	// is 1h.
	GRPCMaxConnectionAgeGrace time.Duration
	// RLSHeaders is the style of the fields Envoy's rate-limit service
	// asks Envoy to add to the client's response (--rls-headers): "ietf"
	// (RateLimit-Policy, RateLimit, and Retry-After when refused),
	// "envoy" (envoyproxy/ratelimit's RateLimit-Limit, -Remaining,
	// -Reset) or "none". The default is "ietf".
	RLSHeaders string
	// AllowReset serves POST /v1/reset and admit.v1's Reset, which give a
	// client its limits back (--allow-reset). Whoever reaches the APIs
	// can then reset any limit: keep them private (AdminAddr). The
	// default is false: they answer 403 and PERMISSION_DENIED.
	AllowReset bool
	// NoStatus turns off the status page (/status, /status.json; see
	// docs/SERVE.md) and what it counts (--no-status). The page is
	// served on the admin listener, or, without one, on the HTTP
	// listener to loopback clients only. The default is false: served.
	NoStatus bool

	// PolicyFiles are the policy files (--config): files in admit's YAML
	// format or envoyproxy/ratelimit's, and directories standing for
	// their *.yaml and *.yml files, merged into one policy and reloaded
	// on Server.Reload and when they change. The default is none: Policy,
	// or else the built-in policy (DefaultPolicyYAML).
	PolicyFiles []string
	// MergeDomains lets several PolicyFiles define one domain, merged
	// (--merge-domains; envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG). The
	// default, false, reports a domain defined twice.
	MergeDomains bool
	// ReloadInterval is how often the Server looks at PolicyFiles for a
	// change (--reload-interval). Negative turns the polling off: only
	// Reload reloads. The default is 2s.
	ReloadInterval time.Duration
	// Policy is a policy built in Go, enforced instead of files (not
	// settable from flags); Reload has nothing to reload. It excludes
	// PolicyFiles. The default is nil.
	Policy *policy.Policy

	// Redis is the URL of the Redis deployment the rules kept in Redis
	// (store: redis, and those of envoyproxy/ratelimit files) use, so
	// that every instance on it enforces one limit (--redis):
	//
	//	redis://[user:password@]host[:port][/db][?option=value&...]
	//	rediss://...                  the same over TLS
	//	unix://[user:password@]/path/to/redis.sock[?db=N&...]
	//	redis+sentinel://[user:password@]sentinel[:port][/db]?master_name=NAME[&addr=sentinel2:port...]
	//	rediss+sentinel://...         the same over TLS
	//	redis+cluster://[user:password@]node[:port][?addr=node2:port&addr=node3:port...]
	//	rediss+cluster://...          the same over TLS
	//
	// The options are go-redis's URL options (an unknown one is an
	// error); those the URL leaves out fail fast: dial_timeout=1s,
	// dialer_retries=1, max_retries=-1. The Server connects at its first
	// command and closes the client at Close. The default, "", keeps
	// everything in memory.
	Redis string
	// RedisTLSCA, RedisTLSCert and RedisTLSKey are PEM files for a
	// rediss:// Redis: the CAs its certificate is verified against
	// instead of the system's (--redis-tls-ca), and the client
	// certificate and key it may require (--redis-tls-cert,
	// --redis-tls-key; re-read when they change). They need Redis. The
	// defaults are none.
	RedisTLSCA, RedisTLSCert, RedisTLSKey string
	// RedisClient is a Redis client of the embedding program, used
	// instead of a URL (not settable from flags); the Server does not
	// close it. It excludes Redis. The default is nil.
	RedisClient redis.UniversalClient
	// KeyPrefix is put in front of the Redis keys of every rule, so that
	// services sharing a Redis keep apart (--key-prefix), at most 256
	// bytes. The default is none.
	KeyPrefix string
	// Shadow decides and counts every request and refuses none
	// (--shadow; envoyproxy/ratelimit's SHADOW_MODE). The default is
	// false.
	Shadow bool
	// RetryJitter spreads the retry time t of every refusal the Server
	// reports over [t, t+j], j being RetryJitter × t at most
	// RetryJitterMax (--retry-jitter, a fraction or a percentage such as
	// 10%; see admit.Jitter), so that the clients a window or quota
	// reset releases do not come back as one herd: the HTTP API's
	// retry_after_ms and Retry-After, admit.v1's retry_after, the RLS's
	// Retry-After and the refused descriptor's duration_until_reset, and
	// the gateway's 429s say the jittered time, never earlier than the
	// exact one. It changes what refusals say, never what is counted. New
	// gives it to the engines it builds as Engine.RetryJitter (unless
	// that is set); NewAPI, RegisterGRPC and NewGateway, given engines
	// built elsewhere, report what those engines' own
	// policy.Config.RetryJitter says. Negative turns it off; at most 1.
	// The default is 0.1 (10%).
	RetryJitter float64
	// RetryJitterMax caps the jitter j (--retry-jitter-max), so that the
	// hours until a daily quota's reset add at most this. Negative means
	// no cap. The default is 1m.
	RetryJitterMax time.Duration
	// Engine is the Config of every engine the Server builds, for what
	// flags do not set, such as MaxKeys, MaxOverrides or Clock (not
	// settable from flags). The Server sets its Backends, DefaultStore,
	// Observer, Logger and Previous itself, and its Shadow and KeyPrefix
	// when the fields above are set. The zero Engine is policy.Config's
	// defaults.
	Engine policy.Config

	// ShutdownTimeout is how long a graceful shutdown (Run's) waits for
	// the requests in flight before cutting them off
	// (--shutdown-timeout). The default is 10s.
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout is how long an HTTP client has to send a
	// request's header (--read-header-timeout; slow loris). Negative
	// means no timeout. The default is 5s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long an HTTP client has to send a whole request
	// (--read-timeout). Negative means no timeout. The default is 60s.
	ReadTimeout time.Duration
	// WriteTimeout is how long the Server has to write a response, from
	// the end of the request's header, proxied ones included
	// (--write-timeout). Negative means no timeout. The default is 60s.
	WriteTimeout time.Duration
	// IdleTimeout is how long an idle keep-alive HTTP connection is kept
	// (--idle-timeout). Negative leaves it to the read timeout
	// (http.Server's zero IdleTimeout). The default is 120s.
	IdleTimeout time.Duration
	// MaxRequestBytes caps the body of an HTTP API request and the size
	// of a gRPC message (--max-body-bytes): larger ones are refused (413,
	// RESOURCE_EXHAUSTED). At most 2^31-1. The default is 1 MiB.
	MaxRequestBytes int64
	// MaxHeaderBytes caps an HTTP request's header, request line
	// included (--max-header-bytes): larger ones are refused with 431. At
	// most 1 GiB. The default is 1 MiB.
	MaxHeaderBytes int

	// The gateway's fields, used only with Upstream.

	// Upstream turns the HTTP listener into a gateway proxying the
	// requests the policy admits to this absolute http:// or https:// URL,
	// whose path is put in front of the requests' paths (--upstream); the
	// HTTP API moves to AdminAddr. The default, "", is no gateway.
	Upstream string
	// GatewayDomain is the policy domain the gateway checks requests
	// against (--domain). The default is the policy's only domain; it is
	// required when the policy has several.
	GatewayDomain string
	// Descriptors are the descriptors the gateway derives from each
	// request, outermost first (--descriptor), each
	// "KEY=SOURCE[,KEY=SOURCE...]" where SOURCE is client_ip,
	// header:NAME, query:NAME, path, method, host or const:VALUE ('!' in
	// front: required). The default is DefaultConfig().Descriptors: per
	// client address, per X-User and per X-Tenant.
	Descriptors []string
	// HTTPDescriptors are gateway descriptors built in Go, used instead
	// of Descriptors (not settable from flags). The default is none.
	HTTPDescriptors []policy.HTTPDescriptor
	// TrustedProxies are the proxies in front of the gateway whose
	// X-Forwarded-For gives the client's address and whose forwarding
	// headers are passed on (--trusted-proxies); anyone else's are
	// replaced. The default trusts none.
	TrustedProxies []netip.Prefix
	// UpstreamDialTimeout bounds connecting to the upstream
	// (--upstream-dial-timeout); a failure is answered 502. The default
	// is 5s.
	UpstreamDialTimeout time.Duration
	// UpstreamTimeout bounds the wait for the header of the upstream's
	// response (--upstream-timeout); a timeout is answered 504. The
	// default is 30s.
	UpstreamTimeout time.Duration
	// UpstreamMaxBodyBytes caps the body of a request the gateway
	// forwards (--upstream-max-body-bytes): a larger declared
	// Content-Length is refused with 413 before it is decided, a streamed
	// body is cut off at the cap. The default, 0, is no cap.
	UpstreamMaxBodyBytes int64
	// Transport sends the gateway's requests upstream instead of its own
	// transport (UpstreamDialTimeout, UpstreamTimeout, 256 idle
	// connections kept 90s, HTTP_PROXY ignored); not settable from flags.
	Transport http.RoundTripper
	// Middleware configures the gateway's httplimit middleware, such as
	// its FailClosed or ExemptPaths (not settable from flags). The zero
	// value is httplimit's defaults: 429 with the IETF and X-RateLimit
	// fields, failing open. Its Cost must be nil: the policy decides the
	// cost.
	Middleware httplimit.Config

	// Logger receives the Server's and the gateway's records: start,
	// reloads, store failures, upstream errors, shutdown (not settable
	// from flags). The default is slog.Default().
	Logger *slog.Logger
	// Registry is the Prometheus registry the Server's metrics are
	// registered on and /metrics serves (not settable from flags). The
	// default is a registry of the Server's own with the Go and process
	// collectors; the global one is never used.
	Registry *prometheus.Registry
}

// addrOff is the address that disables a listener (Config.HTTPAddr,
// Config.GRPCAddr).
const addrOff = "off"

// DefaultConfig returns the Config whose every field holds its default,
// as New gives a zero field: New(DefaultConfig()) and New(Config{}) are
// the same Server.
func DefaultConfig() Config {
	return Config{
		HTTPAddr:                  ":8080",
		GRPCAddr:                  ":8081",
		GRPCMaxConnectionAge:      24 * time.Hour,
		GRPCMaxConnectionAgeGrace: time.Hour,
		RLSHeaders:                "ietf",
		ReloadInterval:            2 * time.Second,
		ShutdownTimeout:           10 * time.Second,
		ReadHeaderTimeout:         5 * time.Second,
		ReadTimeout:               60 * time.Second,
		WriteTimeout:              60 * time.Second,
		IdleTimeout:               120 * time.Second,
		MaxRequestBytes:           defaultMaxBodyBytes,
		MaxHeaderBytes:            http.DefaultMaxHeaderBytes,
		Descriptors:               append([]string(nil), defaultDescriptorSpecs...),
		UpstreamDialTimeout:       5 * time.Second,
		UpstreamTimeout:           30 * time.Second,
		RetryJitter:               defaultRetryJitter,
		RetryJitterMax:            time.Minute,
	}
}

// defaultRetryJitter is Config.RetryJitter's default.
const defaultRetryJitter = 0.1

// gatewayAdminAddr is the admin listener's address in gateway mode when
// Config.AdminAddr is empty.
const gatewayAdminAddr = ":8082"

// ConfigError reports an invalid field of a Config: Field is its name
// (such as "Redis"), Err what is wrong with it. It matches
// admit.ErrInvalidConfig, and Err, with errors.Is.
type ConfigError struct {
	Field string
	Err   error
}

// Error returns "admit: invalid config: server: Config.FIELD: ERR".
func (e *ConfigError) Error() string {
	return fmt.Sprintf("%v: Config.%s: %v", errInvalidConfig, e.Field, e.Err)
}

// Unwrap returns an error wrapping admit.ErrInvalidConfig, and Err.
func (e *ConfigError) Unwrap() []error { return []error{errInvalidConfig, e.Err} }

func fieldErr(field, format string, args ...any) *ConfigError {
	return &ConfigError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Validate reports whether c is a valid configuration: nil, or a
// *ConfigError naming the first invalid field in the order of the
// struct. It checks every field alone (no negative size, no unknown
// RLSHeaders style, a Redis URL of a known form whose TLS files load, an
// Upstream URL that is absolute http or https, descriptors that parse)
// and the fields together (TLSKey with TLSCert, Policy or PolicyFiles,
// Redis or RedisClient, the gateway's fields only with Upstream, at least
// one listener). It does not read the TLS or policy files: New does, and
// reports them.
func (c Config) Validate() error {
	for _, check := range []func(*Config) error{checkListeners, checkTLS, checkPolicy, checkStore, checkLimits, checkGateway} {
		if err := check(&c); err != nil {
			return err
		}
	}
	return nil
}

func checkListeners(c *Config) error {
	for _, a := range []struct{ name, addr string }{
		{"HTTPAddr", c.HTTPAddr}, {"GRPCAddr", c.GRPCAddr}, {"AdminAddr", c.AdminAddr}, {"DebugAddr", c.DebugAddr},
	} {
		if strings.HasPrefix(a.addr, "unix:") {
			if _, ok := unixPath(a.addr); !ok {
				return fieldErr(a.name, "%q: want unix:PATH", truncateString(a.addr, 64))
			}
		}
		if a.addr == addrOff && (a.name == "AdminAddr" || a.name == "DebugAddr") {
			return fieldErr(a.name, `"off": leave it empty for the default`)
		}
	}
	if c.HTTPAddr == addrOff && c.GRPCAddr == addrOff {
		return fieldErr("HTTPAddr", "no HTTP and no gRPC listener: nothing to serve")
	}
	switch c.RLSHeaders {
	case "", "ietf", "envoy", "none":
	default:
		return fieldErr("RLSHeaders", "%q: want ietf, envoy or none", truncateString(c.RLSHeaders, 32))
	}
	return nil
}

func checkTLS(c *Config) error {
	switch {
	case c.TLSCert != "" && c.TLSKey == "":
		return fieldErr("TLSKey", "a certificate needs its key: TLSCert is set")
	case c.TLSKey != "" && c.TLSCert == "":
		return fieldErr("TLSCert", "a key needs its certificate: TLSKey is set")
	case c.TLSClientCA != "" && c.TLSCert == "":
		return fieldErr("TLSClientCA", "a client CA needs the server's certificate: set TLSCert and TLSKey")
	}
	return nil
}

func checkPolicy(c *Config) error {
	for _, p := range c.PolicyFiles {
		if p == "" {
			return fieldErr("PolicyFiles", "an empty path")
		}
	}
	if c.Policy != nil && len(c.PolicyFiles) > 0 {
		return fieldErr("Policy", "Policy and PolicyFiles exclude each other")
	}
	return nil
}

func checkStore(c *Config) error {
	if c.RedisClient != nil && c.Redis != "" {
		return fieldErr("RedisClient", "RedisClient and Redis exclude each other")
	}
	if c.Redis == "" && (c.RedisTLSCA != "" || c.RedisTLSCert != "" || c.RedisTLSKey != "") {
		return fieldErr("Redis", "RedisTLSCA, RedisTLSCert and RedisTLSKey need a Redis URL")
	}
	if c.Redis != "" {
		client, err := newRedisClient(c)
		if err != nil {
			return &ConfigError{Field: "Redis", Err: err}
		}
		_ = client.Close()
	}
	if len(c.KeyPrefix) > policyfmt.MaxNameLength {
		return fieldErr("KeyPrefix", "%d bytes, the maximum is %d", len(c.KeyPrefix), policyfmt.MaxNameLength)
	}
	return nil
}

func checkLimits(c *Config) error {
	switch {
	case c.ShutdownTimeout < 0:
		return fieldErr("ShutdownTimeout", "negative duration %v: want a positive one (0: the default)", c.ShutdownTimeout)
	case c.MaxRequestBytes < 0 || c.MaxRequestBytes > 1<<31-1:
		return fieldErr("MaxRequestBytes", "%d: want 1 byte to 2GiB-1 (0: the default)", c.MaxRequestBytes)
	case c.MaxHeaderBytes < 0 || c.MaxHeaderBytes > 1<<30:
		return fieldErr("MaxHeaderBytes", "%d: want 1 byte to 1GiB (0: the default)", c.MaxHeaderBytes)
	case c.RetryJitter != c.RetryJitter || c.RetryJitter > 1:
		return fieldErr("RetryJitter", "%v: want a fraction of at most 1 (0: the default, negative: off)", c.RetryJitter)
	}
	return nil
}

func checkGateway(c *Config) error {
	if c.Upstream != "" {
		if _, err := parseUpstream(c.Upstream); err != nil {
			return &ConfigError{Field: "Upstream", Err: err}
		}
		if c.HTTPAddr == addrOff {
			return fieldErr("Upstream", "the gateway needs the HTTP listener, and HTTPAddr is off")
		}
		if c.AdminAddr != "" && c.AdminAddr == c.HTTPAddr && !strings.HasSuffix(c.HTTPAddr, ":0") {
			return fieldErr("AdminAddr", "the gateway and the admin listener need different addresses (both %q)", c.HTTPAddr)
		}
	}
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			return fieldErr("TrustedProxies", "invalid prefix %v", p)
		}
	}
	if len(c.Descriptors) > 0 && len(c.HTTPDescriptors) > 0 {
		return fieldErr("HTTPDescriptors", "HTTPDescriptors and Descriptors exclude each other")
	}
	for _, spec := range c.Descriptors {
		if _, err := parseDescriptor(spec, nil); err != nil {
			return &ConfigError{Field: "Descriptors", Err: err}
		}
	}
	switch {
	case c.UpstreamDialTimeout < 0:
		return fieldErr("UpstreamDialTimeout", "negative duration %v", c.UpstreamDialTimeout)
	case c.UpstreamTimeout < 0:
		return fieldErr("UpstreamTimeout", "negative duration %v", c.UpstreamTimeout)
	case c.UpstreamMaxBodyBytes < 0:
		return fieldErr("UpstreamMaxBodyBytes", "%d: want a size >= 0", c.UpstreamMaxBodyBytes)
	}
	return nil
}

// parseUpstream reads a gateway's upstream URL.
func parseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New(redactURLError(err))
	}
	return u, checkUpstream(u)
}

func checkUpstream(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: want an http:// or https:// URL", truncateString(u.Redacted(), 128))
	case u.Host == "":
		return fmt.Errorf("%q: no host", truncateString(u.Redacted(), 128))
	case u.User != nil:
		return fmt.Errorf("credentials in the URL are not forwarded; give them as headers upstream")
	case u.Fragment != "":
		return fmt.Errorf("a fragment means nothing to an upstream")
	}
	return nil
}

// resolved returns c with its defaults filled in: every zero field holds
// its default, "off" addresses are empty (no listener), a negative
// duration that turns something off is 0 (what net/http and gRPC take
// for none), and AdminAddr is ":8082" in gateway mode. The Server and the
// Gateway read only resolved Configs.
func (c Config) resolved() Config {
	d := DefaultConfig()
	str := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	dur := func(v *time.Duration, def time.Duration) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = 0
		}
	}
	str(&c.HTTPAddr, d.HTTPAddr)
	str(&c.GRPCAddr, d.GRPCAddr)
	str(&c.RLSHeaders, d.RLSHeaders)
	for _, a := range []*string{&c.HTTPAddr, &c.GRPCAddr} {
		if *a == addrOff {
			*a = ""
		}
	}
	if c.Upstream != "" && c.AdminAddr == "" {
		c.AdminAddr = gatewayAdminAddr
	}
	for _, f := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.GRPCMaxConnectionAge, d.GRPCMaxConnectionAge}, {&c.GRPCMaxConnectionAgeGrace, d.GRPCMaxConnectionAgeGrace},
		{&c.ReloadInterval, d.ReloadInterval}, {&c.ShutdownTimeout, d.ShutdownTimeout},
		{&c.ReadHeaderTimeout, d.ReadHeaderTimeout}, {&c.ReadTimeout, d.ReadTimeout},
		{&c.WriteTimeout, d.WriteTimeout}, {&c.IdleTimeout, d.IdleTimeout},
		{&c.UpstreamDialTimeout, d.UpstreamDialTimeout}, {&c.UpstreamTimeout, d.UpstreamTimeout},
	} {
		dur(f.v, f.def)
	}
	switch {
	case c.RetryJitter == 0:
		c.RetryJitter = d.RetryJitter
	case c.RetryJitter < 0:
		c.RetryJitter = 0
	}
	dur(&c.RetryJitterMax, d.RetryJitterMax)
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = d.MaxRequestBytes
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if len(c.Descriptors) == 0 && len(c.HTTPDescriptors) == 0 {
		c.Descriptors = d.Descriptors
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
