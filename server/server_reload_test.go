package server

// Reloading the policy files: on Reload, on a change, from a directory.

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServerReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writeFile(t, path, reloadPolicy)
	up := &echoUpstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := startServer(t, withPolicyFiles(path), withReloadInterval(0), withUpstream(u), withAdminAddr("127.0.0.1:0"),
		withLogger(log))
	front := "http://" + s.HTTPAddr().String()
	remaining := func() string {
		t.Helper()
		r, _ := get(t, front+"/")
		return fmt.Sprintf("%d/%s", r.StatusCode, r.Header.Get("X-Ratelimit-Remaining"))
	}
	counts := func() (ok, failed float64) {
		ok, _ = metric(t, s.registry(), "admit_config_reloads_total", "result", "success")
		failed, _ = metric(t, s.registry(), "admit_config_reloads_total", "result", "failure")
		return ok, failed
	}
	for _, want := range []string{"200/4", "200/3", "200/2"} {
		if got := remaining(); got != want {
			t.Fatalf("before reloads: %s, want %s", got, want)
		}
	}

	// Unchanged files: nothing happens.
	s.pollOnce()
	if ok, failed := counts(); ok != 0 || failed != 0 {
		t.Fatalf("a poll of unchanged files reloaded: %v %v", ok, failed)
	}

	// A new rule: the unchanged one keeps its state.
	writeFile(t, path, reloadPolicy+"  - {name: extra, match: user, rate: 1/hour}\n")
	bumpTime(t, path, time.Second)
	s.pollOnce()
	if ok, failed := counts(); ok != 1 || failed != 0 {
		t.Fatalf("after an edit: %v successes, %v failures", ok, failed)
	}
	if got := remaining(); got != "200/1" {
		t.Fatalf("the unchanged rule lost its state: %s, want 200/1", got)
	}
	if len(s.Policy().Domains[0].Rules) != 2 {
		t.Fatal("Policy is not the new policy")
	}

	// Garbage, a half-written file, a deleted file: the policy in force
	// stays, each change is one failure, logged with its position.
	old := s.Engine()
	for i, content := range []string{"{{{ not yaml", "domain: api\nrules:\n  - name: global\n    mat", ""} {
		if content == "" {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		} else {
			writeFile(t, path, content)
			bumpTime(t, path, time.Duration(i+2)*time.Second)
		}
		s.pollOnce()
		s.pollOnce() // the same bad file is reported once
		if ok, failed := counts(); ok != 1 || failed != float64(i+1) {
			t.Fatalf("bad file %d: %v successes, %v failures", i, ok, failed)
		}
		if s.Engine() != old {
			t.Fatalf("bad file %d replaced the engine", i)
		}
		if v, _ := metric(t, s.registry(), "admit_config_last_reload_successful"); v != 0 {
			t.Fatalf("last_reload_successful = %v after a failure", v)
		}
	}
	if got := remaining(); got != "200/0" {
		t.Fatalf("the policy in force after the failures: %s, want 200/0", got)
	}
	if got := remaining(); got != "429/0" {
		t.Fatalf("the policy in force after the failures: %s, want 429/0", got)
	}
	if l := logs.String(); !strings.Contains(l, "pos="+path+":4 ") || !strings.Contains(l, "reload failed") {
		t.Errorf("the failure's log does not name the position:\n%s", l)
	}

	// A changed limit starts afresh.
	writeFile(t, path, strings.Replace(reloadPolicy, "5/hour", "10/hour", 1))
	s.pollOnce()
	if ok, _ := counts(); ok != 2 {
		t.Fatalf("after fixing the file: %v successes", ok)
	}
	if got := remaining(); got != "200/9" {
		t.Fatalf("a changed limit: %s, want 200/9", got)
	}

	// A policy without the gateway's domain is refused.
	writeFile(t, path, strings.Replace(reloadPolicy, "domain: api", "domain: other", 1))
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), `"api"`) {
		t.Fatalf("Reload without the gateway's domain: %v", err)
	}
	if got := remaining(); got != "200/8" {
		t.Fatalf("after a refused reload: %s, want 200/8", got)
	}

	// Reload reloads unchanged files too.
	writeFile(t, path, strings.Replace(reloadPolicy, "5/hour", "10/hour", 1))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if ok, failed := counts(); ok != 4 || failed != 4 {
		t.Fatalf("reloads: %v successes, %v failures; want 4, 4", ok, failed)
	}
	if got := remaining(); got != "200/7" {
		t.Fatalf("after reloads of an unchanged file: %s, want 200/7", got)
	}
}

func TestServerReloadDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), reloadPolicy)
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a policy")
	writeFile(t, filepath.Join(dir, ".hidden.yaml"), "garbage {{{")
	s := startServer(t, withPolicyFiles(dir), withReloadInterval(5*time.Millisecond))
	if n := len(s.Policy().Domains); n != 1 {
		t.Fatalf("%d domains", n)
	}
	// A file added to the directory is loaded by the poller.
	writeFile(t, filepath.Join(dir, "b.yml"), "domain: envoy\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 3}\n")
	eventually(t, 10*time.Second, "the poller loads the new file", func() bool { return len(s.Policy().Domains) == 2 })
	if !s.Engine().HasDomain("envoy") {
		t.Fatal("the engine lacks the new domain")
	}
}

// TestServerReloadConfigMap: a ConfigMap mounted as a directory, as the
// kubelet writes it (deploy/kubernetes/admit.yaml): each file a link
// through ..data to a hidden directory of the version, and an update a
// new version's directory swapped in by renaming a new ..data link over
// the old one. The poller loads the new version, and the hidden
// directories are not read as policy files.
func TestServerReloadConfigMap(t *testing.T) {
	dir := t.TempDir()
	version := func(name, domain string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name, "policy.yaml"), "domain: "+domain+"\nrules:\n  - {name: a, match: user, rate: 5/s}\n")
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_11_27_01", "first")
	if err := os.Symlink(filepath.Join("..data", "policy.yaml"), filepath.Join(dir, "policy.yaml")); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withPolicyFiles(dir), withReloadInterval(0))
	if !s.Engine().HasDomain("first") || len(s.Policy().Domains) != 1 {
		t.Fatalf("the mounted ConfigMap's policy is not in force: %d domains", len(s.Policy().Domains))
	}
	version("..2026_11_27_02", "second")
	s.pollOnce()
	if !s.Engine().HasDomain("second") || s.Engine().HasDomain("first") {
		t.Fatal("the ConfigMap's update did not reload")
	}
}
