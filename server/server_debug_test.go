package server

// The debug listener: the profiler, and the policy in force at /debug/policy.

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/policy"
)

// TestServerDebug: the profiler's listener; a port that is taken fails
// Start; Shutdown does not wait for a CPU profile in progress.
func TestServerDebug(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := newWith(withHTTPAddr("127.0.0.1:0"), withGRPCAddr(""), withDebugAddr(l.Addr().String()), withLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "debug listener") {
		t.Fatalf("Start on a taken port: %v", err)
	}

	s = startServer(t, withGRPCAddr(""), withDebugAddr("127.0.0.1:0"))
	if s.DebugAddr() == nil {
		t.Fatal("no debug address")
	}
	// A CPU profile of 30 s is running when the Server shuts down. The
	// Server is in this process: the profiler is taken once
	// runtime/pprof cannot start another.
	profile := func() chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := http.Get("http://" + s.DebugAddr().String() + "/debug/pprof/profile?seconds=30")
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		return done
	}
	done := profile()
	deadline := time.Now().Add(10 * time.Second)
	for pprof.StartCPUProfile(io.Discard) == nil {
		pprof.StopCPUProfile()
		select {
		case <-done: // refused while this test held the profiler: again
			done = profile()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the profile did not start")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown during a profile: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Shutdown took %v: it waited for the profile", d)
	}
}

// TestServerDebugPolicy: /debug/policy shows the files in force as they
// were loaded: a new valid file after a reload, still that one after a
// change that does not load; the built-in policy; a policy given in Go.
func TestServerDebugPolicy(t *testing.T) {
	get := func(s *Server) string {
		t.Helper()
		resp, err := http.Get("http://" + s.DebugAddr().String() + "/debug/policy")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("/debug/policy: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return string(b)
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, reloadPolicy)
	s := startServer(t, withGRPCAddr(""), withDebugAddr("127.0.0.1:0"), withPolicyFiles(path), withReloadInterval(0))
	if body := get(s); !strings.Contains(body, "# file "+path+" (sha256 ") || !strings.Contains(body, "rate: 5/hour") {
		t.Errorf("at start:\n%s", body)
	}
	writeFile(t, path, strings.Replace(reloadPolicy, "5/hour", "7/hour", 1))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if body := get(s); !strings.Contains(body, "rate: 7/hour") {
		t.Errorf("after a reload:\n%s", body)
	}
	writeFile(t, path, "garbage: [")
	if err := s.Reload(); err == nil {
		t.Fatal("a garbage file reloaded")
	}
	if body := get(s); !strings.Contains(body, "rate: 7/hour") || strings.Contains(body, "garbage") {
		t.Errorf("after a change that did not load:\n%s", body)
	}

	builtin := startServer(t, withGRPCAddr(""), withDebugAddr("127.0.0.1:0"))
	if body := get(builtin); !strings.Contains(body, "# file "+defaultPolicyFile) || !strings.Contains(body, string(DefaultPolicyYAML())) {
		t.Errorf("built-in:\n%s", body)
	}
	p, err := policy.Parse("p.yaml", []byte(reloadPolicy))
	if err != nil {
		t.Fatal(err)
	}
	inGo := startServer(t, withGRPCAddr(""), withDebugAddr("127.0.0.1:0"), withPolicy(p))
	if body := get(inGo); !strings.Contains(body, "# given in Go (WithPolicy): domains api, 1 rules") {
		t.Errorf("in Go:\n%s", body)
	}
}
