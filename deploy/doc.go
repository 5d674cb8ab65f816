// Package deploy holds admit serve's deployment recipes (a Dockerfile, a
// Kubernetes manifest, an Envoy configuration, a Grafana dashboard,
// Prometheus alerting rules) and the tests that check them: the manifest
// decoded with Kubernetes' own API types, the Envoy configuration with
// go-control-plane's and Envoy's validation rules, the policy they carry
// with admit's parser, the dashboard's and the rules' PromQL with
// Prometheus's parser against the metrics a running admit serve exports,
// the rules with promtool. It is a module of its own, so that those types
// never enter admit's go.mod.
package deploy
