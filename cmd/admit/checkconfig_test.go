package main

// check-config in-process, and several files of one domain merged (check-config, serve).

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckConfig(t *testing.T) {
	ours := writeTemp(t, "ours.yaml", ourPolicy)
	envoy := writeTemp(t, "envoy.yaml", envoyPolicy)
	bad := writeTemp(t, "bad.yaml", "domain: shop\nrules:\n  - name: x\n    match: k\n    rate: often\n  - name: x\n    match: j\n    rate: 1/s\n")
	garbage := writeTemp(t, "garbage.yaml", "{{{")
	redisRule := writeTemp(t, "redis.yaml", "domain: r\nrules:\n  - {name: x, match: k, rate: 1/s, store: redis}\n")

	out, errOut, code := runCmd(t, nil, "check-config", ours, envoy, redisRule)
	if code != 0 || errOut != "" || !strings.Contains(out, "ok: 3 files, 3 domains (shop, legacy, r), 3 rules") {
		t.Fatalf("valid files: %d %q %q", code, out, errOut)
	}
	out, errOut, code = runCmd(t, nil, "check-config", bad, garbage, ours)
	if code != exitFailure || out != "" {
		t.Fatalf("invalid files: %d %q", code, out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	want := []string{bad + ":5:11: rules[0].rate:", bad + ":6:11: rules[1].name:", garbage + ":1:"}
	if len(lines) != len(want) {
		t.Fatalf("problems:\n%s", errOut)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d: %q, want it to start with %q", i, lines[i], w)
		}
	}
	// A rate shared by weight (share:), and its mistakes at file:line.
	shared := writeTemp(t, "shared.yaml", "domain: s\nrules:\n  - name: backend\n    match: tenant\n    rate: 1000/s\n    share: {weights: {acme: 3, globex: 2}, default: 1}\n")
	if out, errOut, code := runCmd(t, nil, "check-config", shared); code != 0 || !strings.Contains(out, "ok: 1 file") {
		t.Errorf("share: %d %q %q", code, out, errOut)
	}
	badShare := writeTemp(t, "badshare.yaml", "domain: s\nrules:\n  - name: backend\n    match: tenant\n    quota: 1000/day\n    share: {weights: {acme: 0}}\n")
	if _, errOut, code := runCmd(t, nil, "check-config", badShare); code != exitFailure || !strings.Contains(errOut, badShare+":6:29: rules[0].share.weights.acme: 0 is too small") {
		t.Errorf("bad share: %d %q", code, errOut)
	}
	// Files that are valid alone but clash when merged.
	out, errOut, code = runCmd(t, nil, "check-config", ours, writeTemp(t, "again.yaml", ourPolicy))
	if code != exitFailure || !strings.Contains(errOut, "shop") {
		t.Errorf("a domain twice: %d %q %q", code, out, errOut)
	}
	// A missing file, a directory.
	_, errOut, code = runCmd(t, nil, "check-config", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != exitFailure || !strings.Contains(errOut, "missing.yaml: no such file") {
		t.Errorf("missing file: %d %q", code, errOut)
	}
	dir := filepath.Dir(ours)
	if out, _, code := runCmd(t, nil, "check-config", dir); code != 0 || !strings.Contains(out, "ok: 1 file,") {
		t.Errorf("directory: %d %q", code, out)
	}
	// ADMIT_CONFIG names the files when no argument does.
	if out, _, code := runCmd(t, map[string]string{"ADMIT_CONFIG": ours + "," + envoy}, "check-config"); code != 0 || !strings.Contains(out, "2 files") {
		t.Errorf("ADMIT_CONFIG: %d %q", code, out)
	}
	// JSON.
	out, _, code = runCmd(t, nil, "check-config", "--format", "json", bad)
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitFailure {
		t.Fatalf("json: %d %v %q", code, err, out)
	}
	if rep.OK || len(rep.Problems) != 2 || rep.Problems[0].Line != 5 || rep.Problems[0].Column != 11 ||
		rep.Problems[0].Field != "rules[0].rate" || rep.Problems[0].File != bad || len(rep.Files) != 1 || rep.Files[0].Format != "admit" {
		t.Errorf("json report: %+v", rep)
	}
	out, _, code = runCmd(t, nil, "check-config", "--format=json", envoy)
	rep = checkReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || !rep.OK || rep.Files[0].Format != "envoy" ||
		rep.Rules != 1 || rep.Domains[0] != "legacy" || rep.Problems == nil {
		t.Errorf("json of a valid file: %d %v %q", code, err, out)
	}
}

// TestMergeDomains: two envoyproxy/ratelimit files of one domain are an
// error, unless --merge-domains (ADMIT_MERGE_DOMAINS) merges them, for
// check-config and serve alike.
func TestMergeDomains(t *testing.T) {
	a := writeTemp(t, "a.yaml", envoyPolicy)
	b := writeTemp(t, "b.yaml", "domain: legacy\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	_, errOut, code := runCmd(t, nil, "check-config", a, b)
	if code != exitFailure || !strings.Contains(errOut, `duplicate domain "legacy"`) {
		t.Errorf("without merging: %d %q", code, errOut)
	}
	out, errOut, code := runCmd(t, nil, "check-config", "--merge-domains", a, b)
	if code != 0 || !strings.Contains(out, "ok: 2 files, 1 domain (legacy), 2 rules") {
		t.Errorf("--merge-domains: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := runCmd(t, nil, "serve", "--config", a, "--config", b, "--http-addr", "127.0.0.1:0", "--grpc-addr", ""); code != exitFailure || !strings.Contains(errOut, "duplicate domain") {
		t.Errorf("serve without merging: %d %q", code, errOut)
	}
	s := runServe(t, map[string]string{"ADMIT_MERGE_DOMAINS": "true"}, nil, "--config", a, "--config", b, "--http-addr", "127.0.0.1:0", "--grpc-addr", "")
	resp, err := http.Post("http://"+s.http+"/v1/check", "application/json",
		strings.NewReader(`{"domain":"legacy","descriptors":[{"entries":[{"key":"user","value":"u"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"limit":{"rate":5`) {
		t.Errorf("a descriptor of the second file: %s", body)
	}
}

// TestCheckConfigPrefetch: check-config reports a prefetch the policy
// cannot have at its file:line:column, as serve refuses it.
func TestCheckConfigPrefetch(t *testing.T) {
	bad := writeTemp(t, "prefetch.yaml", "domain: p\nrules:\n"+
		"  - {name: daily, match: k, quota: 1000/day, store: redis, prefetch: auto}\n"+
		"  - {name: local, match: j, rate: 10/s, prefetch: 5}\n"+
		"  - {name: big, match: l, rate: 10/s burst 4, store: redis, prefetch: 5}\n"+
		"  - {name: log, match: m, rate: 10/s, algorithm: sliding_log, store: redis, prefetch: 2}\n"+
		"  - {name: zero, match: n, rate: 10/s, store: redis, prefetch: 0}\n")
	out, errOut, code := runCmd(t, nil, "check-config", bad)
	if code != exitFailure || out != "" {
		t.Fatalf("check-config: %d %q %q", code, out, errOut)
	}
	want := []string{
		bad + ":3:70: rules[0].prefetch: prefetch on a rule with a quota:",
		bad + ":4:51: rules[1].prefetch: prefetch without a shared store:",
		bad + ":5:71: rules[2].prefetch: a block of 5 events is larger than the burst, 4:",
		bad + ":6:87: rules[3].prefetch: prefetch on a rule with a sliding log:",
		bad + ":7:64: rules[4].prefetch: a block of 0 events: want a block size of at least 1, auto or off",
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != len(want) {
		t.Fatalf("problems:\n%s", errOut)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d: %q, want it to start with %q", i, lines[i], w)
		}
	}
	good := writeTemp(t, "good.yaml", "domain: p\ndefaults: {store: redis, prefetch: auto}\nrules:\n"+
		"  - {name: hot, match: k, rate: 1000/s burst 100}\n  - {name: own, match: j, rate: 10/s, prefetch: 4}\n")
	if out, errOut, code := runCmd(t, nil, "check-config", good); code != 0 || !strings.Contains(out, "ok: 1 file, 1 domain (p), 2 rules") {
		t.Errorf("a policy that prefetches: %d %q %q", code, out, errOut)
	}
}

// TestCheckConfigSlidingWindowApprox: check-config accepts both forms of
// the sliding window, and names the approximate one among the algorithms
// when it refuses a name.
func TestCheckConfigSlidingWindowApprox(t *testing.T) {
	ok := writeTemp(t, "sw.yaml", "domain: d\nrules:\n  - {name: a, match: k, rate: 3/s, algorithm: sliding_window_approx}\n  - {name: s, match: j, rate: 3/s, algorithm: sliding_window, store: redis}\n")
	if out, errOut, code := runCmd(t, nil, "check-config", ok); code != 0 || errOut != "" || !strings.Contains(out, "2 rules") {
		t.Errorf("both forms: %d %q %q", code, out, errOut)
	}
	bad := writeTemp(t, "bad.yaml", "domain: d\nrules:\n  - {name: a, match: k, rate: 3/s, algorithm: sliding_window_aprox}\n")
	if _, errOut, code := runCmd(t, nil, "check-config", bad); code != exitFailure || !strings.Contains(errOut, `unknown algorithm "sliding_window_aprox"`) || !strings.Contains(errOut, "sliding_window_approx") {
		t.Errorf("a misspelt form: %d %q", code, errOut)
	}
}
