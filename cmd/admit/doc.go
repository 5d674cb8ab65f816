// Command admit is admit's rate-limit service and its tools.
//
//	admit serve [flags]                 run the service
//	admit check-config [flags] FILE...  check policy files
//	admit version                       print the version
//	admit help [command]                print help
//
// # admit serve
//
// serve decides rate-limit requests against a policy (package policy):
//
//   - over HTTP (--http-addr, default :8080): the JSON API of package
//     server (POST /v1/check, /v1/acquire, /v1/release, /v1/extend, and
//     envoyproxy/ratelimit's POST /json), GET /healthz, /readyz and
//     /metrics (Prometheus);
//   - over gRPC (--grpc-addr, default :8081): Envoy's rate-limit service
//     (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit),
//     admit.v1, grpc.health.v1 and server reflection;
//   - with --upstream URL, as a gateway: the HTTP listener proxies every
//     request the policy admits to URL, and the API, health and metrics
//     move to --admin-addr (default :8082).
//
// With no flags it enforces the built-in policy (server/default.yaml, the
// domain "api") in memory, prints where it listens and a command to try:
//
//	$ admit serve
//	admit serve: policy built-in (domain "api", server/default.yaml), in memory
//	admit serve: HTTP API on http://localhost:8080
//	admit serve: gRPC (Envoy RLS v3, admit.v1, health, reflection) on localhost:8081
//	admit serve: try: curl -s -H 'Content-Type: application/json' -d '{"domain":"api",...}' http://localhost:8080/v1/check
//
// --config loads policy files, in admit's YAML format or envoyproxy/
// ratelimit's (a directory stands for its *.yaml and *.yml files), and
// --redis keeps the rules' state in Redis so that several instances
// enforce one limit. Policy files are reloaded on SIGHUP and when they
// change (--reload-interval): a file that does not load (garbage,
// deleted, half written) leaves the policy in force, is logged with its
// file, line and column, and is counted in
// admit_config_reloads_total{result="failure"}; the limits a reload does
// not change keep their state. SIGTERM and SIGINT stop accepting
// connections, let the requests in flight finish within
// --shutdown-timeout, and exit 0 (1 if requests had to be cut off); a
// second signal kills at once.
//
// Every flag has an environment variable, ADMIT_ and its name in upper
// case with '_' for '-' (--http-addr: ADMIT_HTTP_ADDR); a flag given on
// the command line wins over its variable, and a variable with an invalid
// value is an error naming it. Flags that may repeat (--config,
// --descriptor, --trusted-proxies) take several items in their variable,
// separated by commas (';' for ADMIT_DESCRIPTOR). --server-config FILE
// (ADMIT_SERVER_CONFIG) reads the settings from a YAML file whose keys
// are the flags' names (http-addr: ":9000"); a variable wins over the
// file's key, and a flag over both. One table, serveSettings in
// config.go, defines every setting: its flag, variable, key, help and
// line of docs/SERVE.md. docs/SERVE.md lists
// every flag with its default, the Redis URL forms, the gateway's
// descriptors and headers, the metrics and the signals; `admit help
// serve` prints the flags.
//
// # admit check-config
//
// check-config parses policy files (or the files of --config /
// ADMIT_CONFIG), merges them as serve would, and builds the engine
// without contacting Redis. It exits 0 if the policy is valid, 1 if not,
// reporting each problem on stderr as
//
//	file:line:column: field: message
//
// (--format json writes one report on stdout instead), and 2 for bad
// arguments.
//
// # Exit status
//
// 0 on success, 1 when a command fails (invalid policy, a listener that
// cannot bind, a shutdown that cut requests off), 2 for bad arguments,
// flags or environment variables.
package main
