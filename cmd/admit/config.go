package main

import (
	"errors"
	"reflect"
	"strings"

	"github.com/admit-go/admit/server"
)

// serveConfig is what admit serve's settings set: the server's Config,
// and the command's own settings (the log, the settings file).
type serveConfig struct {
	server.Config
	LogFormat    string
	LogLevel     string
	ServerConfig string
}

// defaultServeConfig returns serve's settings before any flag, variable
// or file: server.DefaultConfig and the command's defaults.
func defaultServeConfig() serveConfig {
	return serveConfig{Config: server.DefaultConfig(), LogFormat: "text", LogLevel: "info"}
}

// setting is one row of serveSettings, the one table of admit serve's
// settings. A row is at once a flag (--NAME), an environment variable
// (ADMIT_NAME, see envName), a key of the --server-config file (NAME)
// and a line of `admit help serve` and of docs/SERVE.md; it sets one
// field of serveConfig, through its kind, which parses the text the three
// sources give. Adding a setting is adding a row.
type setting struct {
	name    string // the flag without "--", and the file's key
	field   string // the field of serveConfig (server.Config's, promoted) it sets
	arg     string // what the value is, in the help: ADDR, FILE, DURATION; "" for a switch
	kind    kind   // how text parses into the field
	doc     string // what it does, one Markdown paragraph (code in backquotes)
	def     string // the default in words (Markdown), when the field's default does not say it
	gateway bool   // only with --upstream (an error without it, but from the environment)
}

// env returns the setting's environment variable.
func (s *setting) env() string { return envName(s.name) }

// bind returns the setting's value bound to its field of c.
func (s *setting) bind(c *serveConfig) value {
	return s.kind(reflect.ValueOf(c).Elem().FieldByName(s.field).Addr().Interface())
}

// settingOfField returns the row setting a server.Config field, or nil.
func settingOfField(field string) *setting {
	for i := range serveSettings {
		if serveSettings[i].field == field {
			return &serveSettings[i]
		}
	}
	return nil
}

const redisURLs = "`redis://[user:pass@]host:port[/db]`, `rediss://...` (TLS), `unix:///path/redis.sock`, " +
	"`redis+sentinel://sentinel:26379?master_name=NAME[&addr=sentinel2:26379]`, " +
	"`redis+cluster://node1:6379?addr=node2:6379&addr=node3:6379`"

// serveSettings is the one table of admit serve's settings, in the order
// of docs/SERVE.md. Checks that depend on several settings run in this
// order, so that of two bad values the error always names the first.
var serveSettings = []setting{
	{name: "server-config", field: "ServerConfig", arg: "FILE", kind: text(), def: "none",
		doc: "Read settings from this YAML file: a mapping whose keys are these flags' names (`http-addr: :9000`, `config: [a.yaml, b.yaml]`, `shadow: true`); see [Settings file](#settings-file). A variable or a flag wins over the file's key."},
	{name: "http-addr", field: "HTTPAddr", arg: "ADDR", kind: addr(),
		doc: "Listen for HTTP on ADDR (`host:port`; port 0 picks a free port, which the banner shows; or `unix:PATH`, a Unix socket, which replaces a stale socket file and is removed at exit). It serves the HTTP API, `/healthz`, `/readyz` and `/metrics`, or, with `--upstream`, the gateway. Empty: no HTTP listener."},
	{name: "grpc-addr", field: "GRPCAddr", arg: "ADDR", kind: addr(),
		doc: "Listen for gRPC on ADDR (`host:port` or `unix:PATH`, as for a sidecar Envoy reaching the service over a Unix socket): Envoy's rate-limit service, `admit.v1`, `grpc.health.v1` and reflection. Empty: no gRPC listener."},
	{name: "admin-addr", field: "AdminAddr", arg: "ADDR", kind: text(), def: "on `--http-addr`; `:8082` with `--upstream`",
		doc: "Serve the HTTP API, `/healthz`, `/readyz` and `/metrics` on a listener of their own. With it, the HTTP listener no longer serves `/metrics`."},
	{name: "tls-cert", field: "TLSCert", arg: "FILE", kind: text(), def: "no TLS",
		doc: "Serve the HTTP listeners (API, gateway, admin) and gRPC over TLS with the certificate chain in this PEM file; with `--tls-key`. Re-read when it changes. See [TLS](#tls)."},
	{name: "tls-key", field: "TLSKey", arg: "FILE", kind: text(),
		doc: "The private key of `--tls-cert` (PEM)."},
	{name: "tls-client-ca", field: "TLSClientCA", arg: "FILE", kind: text(),
		doc: "Mutual TLS: require client certificates signed by a CA of this PEM file. Needs `--tls-cert`."},
	{name: "grpc-max-connection-age", field: "GRPCMaxConnectionAge", arg: "DURATION", kind: duration(zeroOff),
		doc: "Ask each gRPC client connection to go away (GOAWAY) once it is this old, so that long-lived clients such as Envoy reconnect and spread over the instances behind a load balancer. 0: never."},
	{name: "grpc-max-connection-age-grace", field: "GRPCMaxConnectionAgeGrace", arg: "DURATION", kind: duration(zeroOff),
		doc: "Then close it this much later, cutting off the calls still in flight. 0: never."},
	{name: "debug-addr", field: "DebugAddr", arg: "ADDR", kind: text(),
		doc: "Serve Go's profiler (`/debug/pprof/`, net/http/pprof) and `/debug/policy` (the policy files in force, as they were loaded, with their SHA-256: what a change that did not load left in force) on a listener of its own, as envoyproxy/ratelimit's debug port (`/rlconfig`) does. Bind it to localhost or a private address: it shows the process's internals. Its requests have no timeouts (a CPU profile runs as long as it asks), and shutdown closes it at once."},
	{name: "config", field: "PolicyFiles", arg: "FILE", kind: list(",", nil), def: "the built-in policy",
		doc: "A policy file in admit's YAML format or envoyproxy/ratelimit's (detected per file), or a directory standing for its `*.yaml` and `*.yml` files (not hidden ones, not subdirectories). May repeat (the variable separates them with commas); the files are merged into one policy (a domain or rule name defined twice is an error)."},
	{name: "redis", field: "Redis", arg: "URL", kind: text(), def: "in memory",
		doc: "Keep the rules' state in Redis at URL, shared by every instance on it: " + redisURLs + " (see [Redis](#redis))."},
	{name: "redis-tls-ca", field: "RedisTLSCA", arg: "FILE", kind: text(), def: "the system's CAs",
		doc: "Verify a `rediss://` Redis against the CAs of this PEM file."},
	{name: "redis-tls-cert", field: "RedisTLSCert", arg: "FILE", kind: text(),
		doc: "Present this client certificate (PEM) to a `rediss://` Redis that requires one (`tls-auth-clients`); with `--redis-tls-key`. Re-read when it changes."},
	{name: "redis-tls-key", field: "RedisTLSKey", arg: "FILE", kind: text(),
		doc: "The private key of `--redis-tls-cert`."},
	{name: "key-prefix", field: "KeyPrefix", arg: "PREFIX", kind: text(),
		doc: "Put PREFIX in front of every rule's Redis keys, so that services sharing one Redis keep apart (at most 256 bytes)."},
	{name: "rls-headers", field: "RLSHeaders", arg: "STYLE", kind: choice("ietf", "envoy", "none"),
		doc: "The fields Envoy's rate-limit service asks Envoy to add to the client's response: `ietf` (`RateLimit-Policy`, `RateLimit`, and `Retry-After` when refused), `envoy` (envoyproxy/ratelimit's `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`) or `none`."},
	{name: "allow-reset", field: "AllowReset", kind: boolean(),
		doc: "Serve `POST /v1/reset` and admit.v1's `Reset`, which give a client its limits back (see [API.md](API.md)). Whoever reaches the API can then reset any limit: keep it private (`--admin-addr`)."},
	{name: "no-status", field: "NoStatus", kind: boolean(),
		doc: "Do not serve the status page (`/status`, `/status.json`; see [The status page](#the-status-page)) nor count what it shows."},
	{name: "merge-domains", field: "MergeDomains", kind: boolean(),
		doc: "Let several `--config` files define one domain, merged (see [Policy files](#policy-files-and-reloads); envoyproxy/ratelimit's `MERGE_DOMAIN_CONFIG`)."},
	{name: "shadow", field: "Shadow", kind: boolean(),
		doc: "Shadow mode: every request is decided and counted (metrics, statuses) and none is refused; envoyproxy/ratelimit's `SHADOW_MODE`."},
	{name: "retry-jitter", field: "RetryJitter", arg: "FRACTION", kind: fraction(),
		doc: "Spread the retry time t of every refusal over [t, t+j], j being this fraction of t (at most `--retry-jitter-max`), so that the clients a window or quota reset releases do not come back as one herd: `Retry-After`, `retry_after_ms`, admit.v1's `retry_after`, the RLS's `Retry-After` and the refused descriptor's `duration_until_reset`. Never earlier than the exact time; nothing else changes (see [Retry jitter](#retry-jitter)). `0.1` or `10%`; 0 turns it off."},
	{name: "retry-jitter-max", field: "RetryJitterMax", arg: "DURATION", kind: duration(zeroOff),
		doc: "The most `--retry-jitter` adds to a retry time (the hours until a daily quota resets would otherwise get minutes). 0: no cap."},
	{name: "reload-interval", field: "ReloadInterval", arg: "DURATION", kind: duration(zeroOff),
		doc: "Look at the policy files for a change this often (see [Reloads](#policy-files-and-reloads)); 0 reloads on SIGHUP only."},
	{name: "shutdown-timeout", field: "ShutdownTimeout", arg: "DURATION", kind: duration(positive),
		doc: "On SIGTERM or SIGINT, wait this long for requests in flight before cutting them off (see [Shutdown](#shutdown)). Must be positive."},
	{name: "max-body-bytes", field: "MaxRequestBytes", arg: "SIZE", kind: size(1, 1<<31-1),
		doc: "Largest HTTP API body (larger: 413) and gRPC message (larger: `RESOURCE_EXHAUSTED`), at most 2GiB-1."},
	{name: "max-header-bytes", field: "MaxHeaderBytes", arg: "SIZE", kind: size(1, 1<<30),
		doc: "Largest HTTP request header, request line included (larger: 431), at most 1GiB."},
	{name: "read-header-timeout", field: "ReadHeaderTimeout", arg: "DURATION", kind: duration(zeroOff),
		doc: "Time a client has to send a request's header; a slower one (slow loris) is disconnected. 0: no limit."},
	{name: "read-timeout", field: "ReadTimeout", arg: "DURATION", kind: duration(zeroOff),
		doc: "Time a client has to send a whole request, body included. 0: no limit."},
	{name: "write-timeout", field: "WriteTimeout", arg: "DURATION", kind: duration(zeroOff),
		doc: "Time to write a response, from the end of the request's header; it bounds the gateway's proxied responses too (raise it for long downloads or event streams). 0: no limit."},
	{name: "idle-timeout", field: "IdleTimeout", arg: "DURATION", kind: duration(zeroOff),
		doc: "Time an idle keep-alive connection is kept. 0: until the read timeout."},
	{name: "log-format", field: "LogFormat", arg: "FORMAT", kind: choice("text", "json"),
		doc: "`text` or `json` (log/slog's handlers), on stderr."},
	{name: "log-level", field: "LogLevel", arg: "LEVEL", kind: choice("debug", "info", "warn", "error"),
		doc: "Log records of this level and above: `debug`, `info`, `warn` or `error`."},
	{name: "upstream", field: "Upstream", arg: "URL", kind: text(), def: "none",
		doc: "Gateway mode: proxy the requests the policy admits to URL (`http://` or `https://`; its path is put in front of the requests' paths). See [Gateway](#gateway)."},
	{name: "domain", field: "GatewayDomain", arg: "DOMAIN", kind: text(), gateway: true, def: "the policy's only domain",
		doc: "The domain the gateway checks requests against; required when the policy has several."},
	{name: "descriptor", field: "Descriptors", arg: "SPEC", kind: list(";", checkDescriptor), gateway: true,
		def: "client address, `X-User`, `X-Tenant` (see [Gateway](#gateway))",
		doc: "A descriptor the gateway derives from each request, `KEY=SOURCE[,KEY=SOURCE...]`, outermost first; SOURCE: `client_ip`, `header:NAME`, `query:NAME`, `path`, `method`, `host`, `const:VALUE` (`!` in front: required). May repeat (the variable separates them with `;`)."},
	{name: "trusted-proxies", field: "TrustedProxies", arg: "CIDRS", kind: prefixes(), gateway: true,
		doc: "Proxies in front of the gateway whose forwarding headers are trusted: comma-separated prefixes (`10.0.0.0/8`) or addresses; the gateway takes the client's address from their `X-Forwarded-For` and passes their forwarding headers on. May repeat."},
	{name: "upstream-dial-timeout", field: "UpstreamDialTimeout", arg: "DURATION", kind: duration(positive),
		doc: "Gateway: give up connecting to the upstream after this (502)."},
	{name: "upstream-timeout", field: "UpstreamTimeout", arg: "DURATION", kind: duration(positive),
		doc: "Gateway: give up waiting for the upstream's response header after this (504)."},
	{name: "upstream-max-body-bytes", field: "UpstreamMaxBodyBytes", arg: "SIZE", kind: size(0, 1<<63-1), gateway: true, def: "no limit",
		doc: "Gateway: refuse request bodies larger than this with 413 (a declared Content-Length at once; a streamed body when it passes the size)."},
}

// checkDescriptor checks one --descriptor as the server will.
func checkDescriptor(s string) error {
	err := server.Config{Upstream: "http://upstream", Descriptors: []string{s}}.Validate()
	var ce *server.ConfigError
	if errors.As(err, &ce) {
		return ce.Err
	}
	return err
}

// defaultText returns the setting's default for the help and the docs,
// in Markdown.
func (s *setting) defaultText() string {
	if s.def != "" {
		return s.def
	}
	d := defaultServeConfig()
	v := s.bind(&d).String()
	if v == "" {
		return "none"
	}
	return "`" + v + "`"
}

// plain returns Markdown text as plain text: code spans without their
// backquotes, links as their text.
func plain(md string) string {
	var b strings.Builder
	for i := 0; i < len(md); i++ {
		switch c := md[i]; c {
		case '`':
		case '[':
			if end := strings.Index(md[i:], "]("); end > 0 {
				if close := strings.IndexByte(md[i+end:], ')'); close > 0 {
					b.WriteString(md[i+1 : i+end])
					i += end + close
					continue
				}
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
