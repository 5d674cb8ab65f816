package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { Main(m) }

// eventually polls f until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := f()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: still failing after %v: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestPrefix(t *testing.T) {
	re := regexp.MustCompile(`^admit:test:[0-9a-f]{16}:$`)
	seen := map[string]bool{}
	for range 100 {
		p := Prefix(t)
		if !re.MatchString(p) || strings.ContainsAny(p, "{}") {
			t.Fatalf("Prefix = %q", p)
		}
		if seen[p] {
			t.Fatalf("Prefix repeated %q", p)
		}
		seen[p] = true
	}
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	s := Standalone(t)
	if s2 := Standalone(t); s2 != s {
		t.Fatalf("Standalone returned %p then %p; want one shared server", s, s2)
	}
	ctx := ctxT(t)
	c := s.Client(t)
	key := Prefix(t) + "k"
	if err := c.Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want v", got, err)
	}
	mustPanic(t, "Kill", s.Kill)
	mustPanic(t, "Stop", s.Stop)
	mustPanic(t, "Restart", func() { _ = s.Restart() })
	mustPanic(t, "Pause", func() { _ = s.Pause() })
	mustPanic(t, "Resume", func() { _ = s.Resume() })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s on a shared server did not panic", what)
		}
	}()
	f()
}

func TestKillRestart(t *testing.T) {
	t.Parallel()
	s := NewStandalone(t)
	ctx := ctxT(t)
	c := s.Client(t)
	key := Prefix(t) + "k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()

	s.Kill()
	if err := c.Get(ctx, key).Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Kill: err = %v; want a connection error", err)
	}
	s.Kill() // idempotent

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != addr {
		t.Fatalf("Addr after Restart = %s, want %s", s.Addr(), addr)
	}
	eventually(t, 5*time.Second, "GET after Restart", func() error {
		err := c.Get(ctx, key).Err()
		if errors.Is(err, redis.Nil) {
			return nil // back, and empty: nothing is kept on disk
		}
		if err == nil {
			return errors.New("the key survived the restart")
		}
		return err
	})
	if err := c.Set(ctx, key, "w", 0).Err(); err != nil {
		t.Fatal(err)
	}

	s.Stop()
	s.Stop() // idempotent
	if err := s.Restart(); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Fatalf("Dir after Stop: %v; want it removed", err)
	}
}

// TestPauseResume: a paused server accepts connections but answers
// nothing until Resume.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := NewStandalone(t)
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Resume() })
	conn, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial a paused server: %v; want the kernel to accept", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := conn.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read from a paused server: %v; want no answer", err)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("after Resume: %q, %v; want the PING answered", line, err)
	}
	if err := s.Resume(); err != nil { // not paused: nothing to do
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	s.Stop() // a paused server stops
	if err := s.Pause(); err != nil {
		t.Fatalf("Pause after Stop: %v", err)
	}
}

// keysPerNode returns one key under prefix for each node of c.
func keysPerNode(t *testing.T, c *Cluster, prefix string) []string {
	keys := make([]string, clusterNodes)
	found := 0
	for i := 0; found < clusterNodes; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if n := c.NodeOf(k); keys[n] == "" {
			keys[n] = k
			found++
		}
	}
	return keys
}

func TestCluster(t *testing.T) {
	t.Parallel()
	c := SharedCluster(t)
	if c2 := SharedCluster(t); c2 != c {
		t.Fatal("SharedCluster returned two clusters; want one shared")
	}
	ctx := ctxT(t)
	client := c.Client(t)
	keys := keysPerNode(t, c, Prefix(t))
	for _, k := range keys {
		if err := client.Set(ctx, k, k, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Each key is on the node NodeOf names: ask the nodes directly.
	for i, k := range keys {
		node := redis.NewClient(c.Node(i).Options())
		got, err := node.Get(ctx, k).Result()
		node.Close()
		if err != nil || got != k {
			t.Errorf("node %d: GET %s = %q, %v; want the value", i, k, got, err)
		}
	}
	for slot, want := range map[int]int{0: 0, 5460: 0, 5461: 1, 10922: 1, 10923: 2, 16383: 2} {
		if got := int(c.slots[slot]); got != want {
			t.Errorf("slot %d is on node %d, want %d (as documented)", slot, got, want)
		}
	}
	mustPanic(t, "Node(0).Kill", c.Node(0).Kill)
	mustPanic(t, "Stop", c.Stop)

	// Slot agrees with CLUSTER KEYSLOT, hash tags included.
	node := redis.NewClient(c.Node(0).Options())
	defer node.Close()
	for _, k := range []string{"", "a", "{user1000}.following", "{user1000}.followers", "foo{}{bar}",
		"foo{{bar}}zap", "foo{bar}{zap}", "{", "}{", "{}", "x{y", "123456789", "\xff\x00{\x01}", keys[0]} {
		want, err := node.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := Slot(k); got != int(want) {
			t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT = %d", k, got, want)
		}
	}
}

func TestClusterNodeKill(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := NewCluster(t)
	t.Logf("NewCluster took %v", time.Since(start))
	ctx := ctxT(t)
	client := c.Client(t)
	keys := keysPerNode(t, c, Prefix(t))
	for _, k := range keys {
		if err := client.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	const dead = 1
	others := func() error {
		for i, k := range keys {
			if i == dead {
				continue
			}
			if err := client.Set(ctx, k, k, 0).Err(); err != nil {
				return fmt.Errorf("SET on node %d: %w", i, err)
			}
		}
		return nil
	}

	c.Node(dead).Kill()
	killed := time.Now()
	if err := client.Get(ctx, keys[dead]).Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("GET on the killed node: err = %v; want a connection error", err)
	}
	if err := others(); err != nil {
		t.Fatal(err)
	}
	// Once the others flag the dead node as failed, the rest of the cluster
	// keeps serving its slots (cluster-require-full-coverage no).
	observer := redis.NewClient(c.Node(0).Options())
	defer observer.Close()
	eventually(t, 10*time.Second, "node flagged as failed", func() error {
		nodes, err := observer.ClusterNodes(ctx).Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(nodes, "\n") {
			if strings.Contains(line, c.Node(dead).Addr()) && strings.Contains(line, "fail") &&
				!strings.Contains(line, "fail?") {
				return nil
			}
		}
		return errors.New("not yet")
	})
	t.Logf("node flagged as failed %v after Kill", time.Since(killed))
	if err := others(); err != nil {
		t.Fatal(err)
	}
	if err := client.Get(ctx, keys[dead]).Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("GET on the failed node: err = %v; want an error", err)
	}

	if err := c.Node(dead).Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	if err := c.WaitHealthy(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster healthy %v after Restart (%v after Kill)", time.Since(restarted), time.Since(killed))
	d := eventually(t, 10*time.Second, "GET on the restarted node", func() error {
		err := client.Get(ctx, keys[dead]).Err()
		if errors.Is(err, redis.Nil) {
			return nil // back, and empty
		}
		if err == nil {
			return errors.New("the key survived the restart")
		}
		return err
	})
	t.Logf("client served by the restarted node %v after WaitHealthy", d)
	if err := client.Set(ctx, keys[dead], "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := others(); err != nil {
		t.Fatal(err)
	}
	if c.NodeOf(keys[dead]) != dead {
		t.Fatal("the restarted node does not serve its slots")
	}
}

func TestSentinel(t *testing.T) {
	t.Parallel()
	s := NewSentinel(t)
	ctx := ctxT(t)
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
	defer sc.Close()
	addr, err := sc.GetMasterAddrByName(ctx, s.MasterName()).Result()
	if err != nil || len(addr) != 2 || addr[0]+":"+addr[1] != s.Master().Addr() {
		t.Fatalf("SENTINEL GET-MASTER-ADDR-BY-NAME = %q, %v; want %s", addr, err, s.Master().Addr())
	}
	c := s.Client(t)
	key := Prefix(t) + "k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want v", got, err)
	}

	s.Master().Kill()
	if err := c.Get(ctx, key).Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Kill: err = %v; want a connection error", err)
	}
	if err := s.Master().Restart(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitMasterUp(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "SET after Restart", func() error {
		return c.Set(ctx, key, "w", 0).Err()
	})
}

// TestMissingBinary checks that the helpers skip when the binaries are not
// on PATH, and that the shared servers do not remember that.
func TestMissingBinary(t *testing.T) {
	onlyServer := t.TempDir() // redis-server without redis-cli
	if err := os.Symlink(mustLookPath(t, "redis-server"), filepath.Join(onlyServer, "redis-server")); err != nil {
		t.Fatal(err)
	}
	helpers := []struct {
		name  string
		f     func(testing.TB)
		needs string // the binary missing from the onlyServer PATH
	}{
		{"Standalone", func(t testing.TB) { Standalone(t) }, ""},
		{"NewStandalone", func(t testing.TB) { NewStandalone(t) }, ""},
		{"SharedCluster", func(t testing.TB) { SharedCluster(t) }, "redis-cli"},
		{"NewCluster", func(t testing.TB) { NewCluster(t) }, "redis-cli"},
		{"NewSentinel", func(t testing.TB) { NewSentinel(t) }, ""},
	}
	for _, path := range []string{t.TempDir(), onlyServer} {
		t.Run("PATH="+filepath.Base(path), func(t *testing.T) {
			t.Setenv("PATH", path)
			t.Setenv(RequireEnv, "")
			for _, h := range helpers {
				if path == onlyServer && h.needs == "" {
					continue
				}
				var sub *testing.T
				t.Run(h.name, func(t *testing.T) {
					sub = t
					h.f(t)
					t.Error("did not skip")
				})
				if !sub.Skipped() {
					t.Errorf("%s did not skip", h.name)
				}

				// With ADMIT_REQUIRE_REDIS=1 the same call fails.
				t.Setenv(RequireEnv, "1")
				ft := &fakeTB{TB: t}
				func() {
					defer func() {
						if r := recover(); r != nil && r != errFakeExit {
							panic(r)
						}
					}()
					h.f(ft)
				}()
				t.Setenv(RequireEnv, "")
				if ft.fatal == "" || ft.skip != "" {
					t.Errorf("%s with %s=1: fatal %q, skip %q; want a fatal", h.name, RequireEnv, ft.fatal, ft.skip)
				}
				if !strings.Contains(ft.fatal, "apt-get install redis-server") ||
					!strings.Contains(ft.fatal, "scripts/test") {
					t.Errorf("%s: message %q does not say how to install Redis", h.name, ft.fatal)
				}
			}
		})
	}

	// The failures above were not cached: with the real PATH, it works.
	s := Standalone(t)
	if err := s.Client(t).Ping(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p := lookPath(t, name)
	p, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var errFakeExit = errors.New("fake FailNow/SkipNow")

// fakeTB records Fatal and Skip instead of ending the test.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatal(args ...any) {
	f.fatal = fmt.Sprint(args...)
	panic(errFakeExit)
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(errFakeExit)
}

func (f *fakeTB) Skip(args ...any) {
	f.skip = fmt.Sprint(args...)
	panic(errFakeExit)
}

func TestNoMain(t *testing.T) {
	mainRunning.Store(false)
	defer mainRunning.Store(true)
	ft := &fakeTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != errFakeExit {
				panic(r)
			}
		}()
		Standalone(ft)
	}()
	if !strings.Contains(ft.fatal, "redistest.Main") && ft.skip == "" {
		t.Fatalf("Standalone without Main: fatal %q; want it to name redistest.Main", ft.fatal)
	}
}
