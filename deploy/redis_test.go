package deploy

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server this test started, on a free port of
// 127.0.0.1, kept in memory only.
type redisServer struct {
	cmd  *exec.Cmd
	addr string
}

// startRedis starts a redis-server for the test and stops it at the end.
// Without redis-server on the PATH the test is skipped, or fails if
// ADMIT_REQUIRE_REDIS=1 (as in CI).
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("ADMIT_REQUIRE_REDIS") == "1" {
			t.Fatal("ADMIT_REQUIRE_REDIS=1 but redis-server is not on the PATH")
		}
		t.Skip("redis-server is not on the PATH (scripts/test installs it)")
	}
	// A port the kernel just gave out and took back: free unless another
	// process takes it in between, which the ping below would tell.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	rs := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	rs.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := rs.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.stop)
	c := redis.NewClient(&redis.Options{Addr: rs.addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s does not answer: %v", rs.addr, err)
		}
	}
}

// stop kills the redis-server and waits for it to exit.
func (rs *redisServer) stop() {
	if rs.cmd.ProcessState != nil {
		return
	}
	_ = rs.cmd.Process.Kill()
	_ = rs.cmd.Wait()
}
