package main

// admit simulate in-process: its outputs, its examples, and bad input.

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const simPolicy = `
version: 1
domain: api
rules:
  - name: per-tenant
    match: tenant
    rate: 10/s burst 10
    store: redis
    failure: {policy: fallback, local_share: 1}
`

const simTraffic = `
duration: 2m
step: 1s
instances: 2
backend: {concurrency: 4, service: 10ms}
faults: [{store: redis, from: 30s, to: 60s}]
clients:
  - name: tenants
    count: 3
    domain: api
    descriptors: [{tenant: "t{i}"}]
    arrival: {process: poisson, rate: 15/s}
    retry: {on_429: retry_after, jitter: 0.5}
`

func TestSimulate(t *testing.T) {
	pol := writeTemp(t, "policy.yaml", simPolicy)
	tr := writeTemp(t, "traffic.yaml", simTraffic)
	out := filepath.Join(t.TempDir(), "report")
	stdout, stderr, code := runCmd(t, nil, "simulate", "--policy", pol, "--traffic", tr, "--out", out, "--compare", "gcra,fixed_window")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"== gcra", "== fixed_window", "per-tenant", "Little's law", "outage: while redis was down (30s to 1m0s)", "report: " + filepath.Join(out, "report.html")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout)
		}
	}
	for _, name := range []string{"report.html", "results.json", "series.csv", "tallies.csv", "compare.png", "compare.svg", "traffic-gcra.png", "backend-fixed_window.svg"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	fh, err := os.Open(filepath.Join(out, "compare.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := png.Decode(fh); err != nil {
		t.Errorf("compare.png: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Runs []struct{ Label string } }
	if err := json.Unmarshal(data, &res); err != nil || len(res.Runs) != 2 || res.Runs[1].Label != "fixed_window" {
		t.Errorf("results.json: %v %+v", err, res)
	}
	// The same seed, the same summary.
	again, _, _ := runCmd(t, nil, "simulate", "--policy", pol, "--traffic", tr, "--compare", "gcra,fixed_window")
	if cut := strings.Index(stdout, "\nreport:"); again != stdout[:cut] {
		t.Errorf("two runs differ:\n%s\n---\n%s", again, stdout[:cut])
	}
	// --strict fails on the outage's warning.
	if _, _, code := runCmd(t, nil, "simulate", "--policy", pol, "--traffic", tr, "--strict"); code != exitFailure {
		t.Errorf("--strict with warnings: exit %d, want %d", code, exitFailure)
	}
}

func TestSimulateBadInput(t *testing.T) {
	pol := writeTemp(t, "policy.yaml", simPolicy)
	tr := writeTemp(t, "traffic.yaml", simTraffic)
	badTraffic := writeTemp(t, "bad.yaml", "duration: 0s\nclients: []\n")
	badLog := writeTemp(t, "log.yaml", "duration: 1m\nclients:\n  - name: r\n    domain: api\n    descriptors: [{tenant: \"{key}\"}]\n    arrival: {process: replay, log: access.log, format: clf}\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(badLog), "access.log"), []byte("1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 200 1\nnot a log line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"simulate"}, exitUsage, "needs --policy FILE and --traffic FILE"},
		{[]string{"simulate", "--policy", pol}, exitUsage, "needs --policy"},
		{[]string{"simulate", "--policy", pol, "--traffic", tr, "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"simulate", "--policy", pol, "--traffic", tr, "--compare", "gcra,bogus"}, exitUsage, "--compare"},
		{[]string{"simulate", "--policy", pol, "--traffic", tr, "--seed", "-1"}, exitUsage, "seed"},
		{[]string{"simulate", "--policy", pol, "--traffic", badTraffic}, exitFailure, badTraffic + ":1:"},
		{[]string{"simulate", "--policy", pol, "--traffic", badLog}, exitFailure, "access.log:2:"},
		{[]string{"simulate", "--policy", tr, "--traffic", tr}, exitFailure, tr + ":"},
		{[]string{"simulate", "--policy", filepath.Join(t.TempDir(), "none.yaml"), "--traffic", tr}, exitFailure, "none.yaml"},
		{[]string{"simulate", "--policy", pol, "--traffic", tr, "--seed", "99999999999999999999999"}, exitUsage, "seed"},
		{[]string{"simulate", "--policy", pol, "--traffic", tr, "--out", filepath.Join(tr, "report")}, exitFailure, "--out " + filepath.Join(tr, "report")},
		{[]string{"simulate", "--policy", pol, "--traffic", writeTemp(t, "empty.yaml", "")}, exitFailure, "empty.yaml"},
	}
	for _, c := range cases {
		stdout, stderr, code := runCmd(t, nil, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q (stdout %q)", c.args, code, stderr, c.code, c.want, stdout)
		}
	}
}
