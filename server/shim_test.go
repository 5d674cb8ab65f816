package server

// The tests' shorthand for Configs: each with* function sets a field of
// a Config the way the option of the same name did before Config
// replaced the options (an empty address is "off", a zero timeout that
// can be turned off is negative), so that the tests keep their meaning.
// Not part of the package: test files only.

import (
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

type option func(*Config)

func configOf(opts ...option) Config {
	var c Config
	for _, o := range opts {
		o(&c)
	}
	return c
}

// newWith is New(configOf(opts...)).
func newWith(opts ...option) (*Server, error) { return New(configOf(opts...)) }

// newGatewayWith is NewGateway with the upstream and domain given apart.
func newGatewayWith(u *url.URL, e *policy.Engine, domain string, opts ...option) (*Gateway, error) {
	c := configOf(opts...)
	if u != nil {
		c.Upstream = u.String()
	}
	c.GatewayDomain = domain
	return NewGateway(e, c)
}

func addrOr(a string) string {
	if a == "" {
		return addrOff
	}
	return a
}

// offable maps the options' "0: none" to the Config's negative.
func offable(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func withHTTPAddr(a string) option  { return func(c *Config) { c.HTTPAddr = addrOr(a) } }
func withGRPCAddr(a string) option  { return func(c *Config) { c.GRPCAddr = addrOr(a) } }
func withAdminAddr(a string) option { return func(c *Config) { c.AdminAddr = a } }
func withDebugAddr(a string) option { return func(c *Config) { c.DebugAddr = a } }
func withTLS(cert, key string) option {
	return func(c *Config) { c.TLSCert, c.TLSKey = cert, key }
}
func withClientCA(ca string) option { return func(c *Config) { c.TLSClientCA = ca } }
func withGRPCMaxConnectionAge(age, grace time.Duration) option {
	return func(c *Config) { c.GRPCMaxConnectionAge, c.GRPCMaxConnectionAgeGrace = offable(age), offable(grace) }
}
func withPolicyFiles(paths ...string) option {
	return func(c *Config) { c.PolicyFiles = append(c.PolicyFiles, paths...) }
}
func withPolicy(p *policy.Policy) option { return func(c *Config) { c.Policy = p } }
func withRedis(client redis.UniversalClient) option {
	return func(c *Config) { c.RedisClient = client }
}
func withEngine(cfg policy.Config) option {
	return func(c *Config) { c.Engine = cfg }
}
func withLogger(l *slog.Logger) option           { return func(c *Config) { c.Logger = l } }
func withRegistry(r *prometheus.Registry) option { return func(c *Config) { c.Registry = r } }
func withShutdownTimeout(d time.Duration) option { return func(c *Config) { c.ShutdownTimeout = d } }
func withReloadInterval(d time.Duration) option {
	return func(c *Config) { c.ReloadInterval = offable(d) }
}
func withMaxRequestBytes(n int64) option { return func(c *Config) { c.MaxRequestBytes = n } }
func withMaxHeaderBytes(n int) option    { return func(c *Config) { c.MaxHeaderBytes = n } }
func withReadHeaderTimeout(d time.Duration) option {
	return func(c *Config) { c.ReadHeaderTimeout = offable(d) }
}
func withGatewayDomain(d string) option { return func(c *Config) { c.GatewayDomain = d } }
func withUpstreamDialTimeout(d time.Duration) option {
	return func(c *Config) { c.UpstreamDialTimeout = d }
}
func withUpstreamTimeout(d time.Duration) option { return func(c *Config) { c.UpstreamTimeout = d } }
func withUpstreamMaxBodyBytes(n int64) option    { return func(c *Config) { c.UpstreamMaxBodyBytes = n } }
func withTransport(rt http.RoundTripper) option  { return func(c *Config) { c.Transport = rt } }
func withMiddleware(mc httplimit.Config) option {
	return func(c *Config) { c.Middleware = mc }
}
func withUpstream(u *url.URL) option {
	return func(c *Config) {
		if u != nil {
			c.Upstream = u.String()
		}
	}
}
func withTrustedProxies(ps ...netip.Prefix) option {
	return func(c *Config) { c.TrustedProxies = append(c.TrustedProxies, ps...) }
}
func withDescriptorSpecs(specs ...string) option {
	return func(c *Config) { c.Descriptors, c.HTTPDescriptors = specs, nil }
}
func withDescriptors(d ...policy.HTTPDescriptor) option {
	return func(c *Config) { c.HTTPDescriptors, c.Descriptors = d, nil }
}

// testRedisClient is the client of a Redis URL, with its kind.
func testRedisClient(rawURL string, ro ...*redisOptions) (redis.UniversalClient, redisKind, error) {
	o := &redisOptions{}
	if len(ro) > 0 {
		o = ro[0]
	}
	return redisClient(rawURL, o)
}

type redisOption = *redisOptions

func withRedisTLS(ca, cert, key string, log *slog.Logger) redisOption {
	return &redisOptions{ca: ca, cert: cert, key: key, log: log}
}
