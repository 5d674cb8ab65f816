package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/admit-go/admit/internal/status"
	"github.com/admit-go/admit/policy"
)

func statusGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestStatusListeners: the status page is the admin listener's only; on a
// shared HTTP listener it answers loopback clients; --no-status removes
// it; the layers' and build's metrics are on the registry.
func TestStatusListeners(t *testing.T) {
	s := startServer(t, withAdminAddr("127.0.0.1:0"))
	if code, _ := statusGet(t, "http://"+s.HTTPAddr().String()+"/status.json"); code != 404 {
		t.Errorf("/status.json on the API listener: %d, want 404", code)
	}
	code, body := statusGet(t, "http://"+s.AdminAddr().String()+"/status.json")
	if code != 200 || !strings.Contains(body, `"source":"built-in"`) || !strings.Contains(body, `"rule":"global"`) {
		t.Errorf("/status.json on the admin listener: %d %s", code, body)
	}
	if code, body := statusGet(t, "http://"+s.AdminAddr().String()+"/status.json?a=b"); code != 400 || !strings.Contains(body, "no query string") {
		t.Errorf("with a query: %d %s", code, body)
	}
	if code, body := statusGet(t, "http://"+s.AdminAddr().String()+"/metrics"); code != 200 || !strings.Contains(body, "admit_build_info{") || !strings.Contains(body, `admit_layer_in_flight{rule="global"} 0`) {
		t.Errorf("/metrics: %d, no admit_build_info or admit_layer_in_flight", code)
	}

	shared := startServer(t)
	if code, _ := statusGet(t, "http://"+shared.HTTPAddr().String()+"/status"); code != 200 {
		t.Errorf("/status on a shared listener, from loopback: %d, want 200", code)
	}

	off := startServer(t, func(c *Config) { c.NoStatus = true })
	if code, _ := statusGet(t, "http://"+off.HTTPAddr().String()+"/status.json"); code != 404 {
		t.Errorf("/status.json with NoStatus: %d, want 404", code)
	}
}

// TestAdaptiveFloorMetric: an adaptive layer's limits and the floor they
// may not go below are on the registry (admit_adaptive_limit, stat
// floor): events per second for an adaptive rate, slots for adaptive
// concurrency.
func TestAdaptiveFloorMetric(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`domain: api
rules:
  - {name: learnt, match: user, adaptive_rate: {min: 120/min, max: 600/min}}
  - {name: backend, match: route, adaptive_concurrency: {min: 3, max: 50}}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withPolicy(p))
	for _, d := range []string{`{"key":"user","value":"u"}`, `{"key":"route","value":"/x"}`} {
		resp, err := http.Post("http://"+s.HTTPAddr().String()+"/v1/check", "application/json",
			strings.NewReader(`{"domain":"api","descriptors":[{"entries":[`+d+`]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for rule, want := range map[string]float64{"learnt": 2, "backend": 3} {
		if v, ok := metric(t, s.registry(), "admit_adaptive_limit", "rule", rule, "stat", "floor"); !ok || v != want {
			t.Errorf("admit_adaptive_limit{rule=%q,stat=floor} = %v, %v; want %v", rule, v, ok, want)
		}
		if v, ok := metric(t, s.registry(), "admit_adaptive_limit", "rule", rule, "stat", "min"); !ok || v < want {
			t.Errorf("admit_adaptive_limit{rule=%q,stat=min} = %v, %v; want at least the floor %v", rule, v, ok, want)
		}
	}
}

// TestStatusLimits: every rule's row of /status.json says its limit as
// the policy file writes it: a rate with its burst, a concurrency cap, and
// a quota with its calendar period and, when not the defaults, its time
// zone and first day of the week (tiers' quotas too).
func TestStatusLimits(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`domain: api
tier_tables:
  plans:
    default: free
    tiers:
      free: {quota: 100/hour}
rules:
  - {name: per-user, match: user, rate: 10/s burst 20}
  - {name: daily, match: account, quota: 1000/day}
  - name: paris
    match: org
    quota: {limit: 5000, period: month, timezone: Europe/Paris}
  - name: weekly
    match: team
    quota: {limit: 70, period: week, week_start: sunday}
  - {name: jobs, match: job, concurrency: 4}
  - {name: plans, match: tenant, tiers: plans}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withPolicy(p))
	code, body := statusGet(t, "http://"+s.HTTPAddr().String()+"/status.json")
	if code != 200 {
		t.Fatalf("/status.json: %d %s", code, body)
	}
	var snap status.Snapshot
	if err := json.Unmarshal([]byte(body), &snap); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range snap.Rules {
		got[r.Rule] = r.Kind + " " + r.Limit
	}
	for rule, want := range map[string]string{
		"per-user":   "rate 10/s burst 20",
		"daily":      "quota 1000/day",
		"paris":      "quota 5000/month (Europe/Paris)",
		"weekly":     "quota 70/week (UTC, week_start: sunday)",
		"jobs":       "concurrency 4 in flight",
		"plans/free": "quota 100/hour",
	} {
		if got[rule] != want {
			t.Errorf("rule %q: %q, want %q (all: %q)", rule, got[rule], want, got)
		}
	}
}
