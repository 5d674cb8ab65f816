package redisbench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server started by Start: on 127.0.0.1, on a free port,
// saving nothing to disk.
type Server struct {
	// Addr is the server's "127.0.0.1:port".
	Addr string

	cmd *exec.Cmd
	dir string
}

// Start starts a redis-server and waits until it answers PING. On Linux
// the server dies with the process that started it, even when that
// process is killed before it can call Stop.
func Start() (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found (apt-get install redis-server): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "admit-bench-redis")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, dir: dir}
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		if c.Ping(context.Background()).Err() == nil {
			return s, nil
		}
	}
	s.Stop()
	return nil, fmt.Errorf("redis-server on %s did not answer", s.Addr)
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	os.RemoveAll(s.dir)
}
