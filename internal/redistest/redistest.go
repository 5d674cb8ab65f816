package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// RequireEnv is the environment variable that turns a missing redis-server
// or redis-cli from a skip into a test failure when it is set to "1". CI sets
// it so that Redis tests can never be skipped there by accident.
const RequireEnv = "ADMIT_REQUIRE_REDIS"

// mainRunning is set by Main; the shared servers refuse to start without it,
// since nothing else would stop them.
var mainRunning atomic.Bool

// The shared servers, started lazily by Standalone and SharedCluster. A failed start
// is not remembered: the next call tries again.
var (
	sharedStandaloneMu sync.Mutex
	sharedStandalone   *Server

	sharedClusterMu sync.Mutex
	sharedCluster   *Cluster
)

// live holds every server this package has started and not yet stopped, so
// that Main can stop the ones a crashed test left behind.
var (
	liveMu sync.Mutex
	live   = map[*Server]struct{}{}
)

// Main runs the tests of a package that uses Redis and then stops every
// server this package started, including the shared ones, before it exits
// with the tests' exit code. Call it from the package's TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// Standalone and SharedCluster fail the test when Main is not running, because
// nothing else would stop the servers they share.
func Main(m *testing.M) {
	mainRunning.Store(true)
	code := m.Run()
	stopAll()
	os.Exit(code)
}

// stopAll stops every live server.
func stopAll() {
	liveMu.Lock()
	servers := make([]*Server, 0, len(live))
	for s := range live {
		servers = append(servers, s)
	}
	liveMu.Unlock()
	for _, s := range servers {
		s.stop()
	}
	sharedStandaloneMu.Lock()
	sharedStandalone = nil
	sharedStandaloneMu.Unlock()
	sharedClusterMu.Lock()
	sharedCluster = nil
	sharedClusterMu.Unlock()
}

// Standalone returns the package's shared standalone server, starting it on
// first use. All tests of the test binary share it: use keys under Prefix(t),
// never FLUSHDB, and never kill it (Kill, Restart and Stop panic on a shared
// server; use NewStandalone for that).
//
// Standalone skips the test when redis-server is not on PATH (fails it when
// ADMIT_REQUIRE_REDIS=1), and fails it when the package's TestMain does not
// call Main.
func Standalone(t testing.TB) *Server {
	t.Helper()
	bin := lookPath(t, "redis-server")
	requireMain(t, "Standalone")
	sharedStandaloneMu.Lock()
	defer sharedStandaloneMu.Unlock()
	if sharedStandalone == nil {
		s, err := startServer(bin, kindStandalone, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.shared = true
		sharedStandalone = s
	}
	return sharedStandalone
}

// ExampleAddr returns the address of the package's shared standalone server,
// starting it on first use, for Examples, which have no testing.TB to skip
// or fail: it panics with the reason when no server can be started
// (redis-server missing, or Main not running). Tests use Standalone.
func ExampleAddr() string {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		panic("redistest: the Examples of this package need redis-server on PATH (apt-get install redis-server; scripts/test installs it): " + err.Error())
	}
	if !mainRunning.Load() {
		panic("redistest: ExampleAddr needs the package's TestMain to call redistest.Main")
	}
	sharedStandaloneMu.Lock()
	defer sharedStandaloneMu.Unlock()
	if sharedStandalone == nil {
		s, err := startServer(bin, kindStandalone, nil)
		if err != nil {
			panic(err)
		}
		s.shared = true
		sharedStandalone = s
	}
	return sharedStandalone.Addr()
}

// SharedCluster returns the package's shared three-master Redis Cluster, starting
// it on first use (about two seconds). All tests of the test binary share it:
// use keys under Prefix(t), never FLUSHALL, and never kill its nodes (use
// NewCluster for that).
//
// SharedCluster skips the test when redis-server or redis-cli is not on PATH (fails
// it when ADMIT_REQUIRE_REDIS=1), and fails it when the package's TestMain
// does not call Main.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	server := lookPath(t, "redis-server")
	cli := lookPath(t, "redis-cli")
	requireMain(t, "SharedCluster")
	sharedClusterMu.Lock()
	defer sharedClusterMu.Unlock()
	if sharedCluster == nil {
		c, err := startCluster(server, cli)
		if err != nil {
			t.Fatal(err)
		}
		c.shared = true
		for _, n := range c.nodes {
			n.shared = true
		}
		sharedCluster = c
	}
	return sharedCluster
}

// NewStandalone starts a private standalone server for t, which t.Cleanup
// stops. Use it for tests that kill, restart or flush the server; other tests
// should share Standalone.
//
// NewStandalone skips the test when redis-server is not on PATH (fails it
// when ADMIT_REQUIRE_REDIS=1).
func NewStandalone(t testing.TB) *Server {
	t.Helper()
	bin := lookPath(t, "redis-server")
	s, err := startServer(bin, kindStandalone, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// NewTLS starts a private standalone server for t, as NewStandalone does,
// that also serves TLS on TLSAddr with the certificate and key of the PEM
// files certFile and keyFile and requires client certificates signed by a
// CA of caFile (tls-auth-clients yes). Its plain port (Addr) stays open
// for the package's own checks.
func NewTLS(t testing.TB, certFile, keyFile, caFile string) *Server {
	t.Helper()
	bin := lookPath(t, "redis-server")
	s, err := startServer(bin, kindStandalone, func(s *Server) error {
		port, err := freePort()
		if err != nil {
			return err
		}
		s.tlsAt = port
		s.tls = []string{
			"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--tls-ca-cert-file", caFile, "--tls-auth-clients", "yes",
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// NewCluster starts a private three-master Redis Cluster for t, which
// t.Cleanup stops. Use it for tests that kill or restart nodes; other tests
// should share SharedCluster. See Cluster's type documentation for how it behaves
// while a node is down.
//
// NewCluster skips the test when redis-server or redis-cli is not on PATH
// (fails it when ADMIT_REQUIRE_REDIS=1).
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	server := lookPath(t, "redis-server")
	cli := lookPath(t, "redis-cli")
	c, err := startCluster(server, cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// Prefix returns a random key prefix of the form "admit:test:<16 hex>:", so
// that tests sharing a server never see each other's keys. It contains no
// '{' or '}', so it never chooses a key's hash slot.
func Prefix(t testing.TB) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return "admit:test:" + hex.EncodeToString(b[:]) + ":"
}

// lookPath returns the path of the named binary, or skips t (fails it when
// ADMIT_REQUIRE_REDIS=1) saying how to install it.
func lookPath(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("redistest: %s not found on PATH: install it with 'apt-get install redis-server' "+
		"(scripts/test does this when it can)", name)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg + "; failing because " + RequireEnv + "=1")
	}
	t.Skip(msg + "; skipping (set " + RequireEnv + "=1 to fail instead)")
	return ""
}

// requireMain fails t when the test binary does not run under Main.
func requireMain(t testing.TB, what string) {
	t.Helper()
	if !mainRunning.Load() {
		t.Fatalf("redistest: %s needs the package's TestMain to call redistest.Main(m), "+
			"which stops the shared servers at exit: func TestMain(m *testing.M) { redistest.Main(m) }", what)
	}
}
