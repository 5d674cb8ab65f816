package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// readyTimeout bounds the wait for a started server to answer PING.
	readyTimeout = 10 * time.Second
	// startAttempts is how many times a server is started (on fresh ports, or
	// on its own port for Restart) when redis-server exits before it is
	// ready, which is what it does when another process took the port.
	startAttempts = 5
	// logTailLines is how much of a server's log errors quote.
	logTailLines = 20
)

// errExited reports that redis-server exited before it answered PING.
var errExited = errors.New("redis-server exited before it was ready")

// kind selects how a server is configured.
type kind int

const (
	kindStandalone kind = iota
	kindClusterNode
	kindSentinel
)

// Server is a redis-server process started by this package. It listens on
// 127.0.0.1 on a free port chosen at start, keeps nothing on disk (save ""
// and appendonly no; its --dir is a private temporary directory that holds
// its log and, for a cluster node, its nodes-<port>.conf), and has no
// password.
//
// A Server is safe for concurrent use; Kill, Restart and Stop are serialized.
// While it runs, one goroutine waits for its process.
type Server struct {
	bin    string
	dir    string
	port   int
	bus    int // cluster bus port; 0 for a standalone server
	kind   kind
	tls    []string // the TLS port's arguments (NewTLS), or nil
	tlsAt  int      // the TLS port
	shared bool

	mu      sync.Mutex // serializes Kill, Restart and Stop
	proc    *os.Process
	done    chan struct{} // closed when proc has exited
	stopped bool
}

// startServer starts a server of kind k, trying fresh ports when redis-server
// exits at once (another process took the port between our check and its
// bind). If setup is not nil, it is called after the ports are chosen, before
// each attempt to start.
func startServer(bin string, k kind, setup func(*Server) error) (*Server, error) {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s := &Server{bin: bin, dir: dir, kind: k}
	for attempt := 1; ; attempt++ {
		s.port, err = freePort()
		if err == nil && k == kindClusterNode {
			s.bus, err = freePort()
		}
		if err == nil && setup != nil {
			err = setup(s)
		}
		if err == nil {
			err = s.launch()
		}
		if err == nil {
			break
		}
		if !errors.Is(err, errExited) || attempt == startAttempts {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	liveMu.Lock()
	live[s] = struct{}{}
	liveMu.Unlock()
	return s, nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redistest: picking a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// args returns redis-server's command line.
func (s *Server) args() []string {
	if s.kind == kindSentinel {
		return []string{s.confPath(), "--sentinel"} // Sentinel needs a config file it can rewrite
	}
	a := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
	}
	a = append(a, s.tls...)
	if s.kind == kindClusterNode {
		a = append(a,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes-"+strconv.Itoa(s.port)+".conf"),
			"--cluster-port", strconv.Itoa(s.bus),
			"--cluster-node-timeout", strconv.Itoa(int(clusterNodeTimeout/time.Millisecond)),
			"--cluster-require-full-coverage", "no",
		)
	}
	return a
}

// confPath is a sentinel's config file.
func (s *Server) confPath() string { return filepath.Join(s.dir, "sentinel.conf") }

// logPath is where the server's stdout and stderr go, across restarts.
func (s *Server) logPath() string { return filepath.Join(s.dir, "redis.log") }

// launch starts the process and waits until it answers PING. The caller
// holds s.mu or owns s exclusively.
func (s *Server) launch() error {
	log, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	log.Close()
	if err != nil {
		return fmt.Errorf("redistest: starting %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.proc, s.done = cmd.Process, done
	if err := waitReady(s.Addr(), done); err != nil {
		s.kill()
		return fmt.Errorf("redistest: redis-server on %s: %w; end of %s:\n%s", s.Addr(), err, s.logPath(), s.logTail())
	}
	return nil
}

// waitReady polls addr with PING until it answers PONG, the process exits
// (done is closed), or readyTimeout passes.
func waitReady(addr string, done <-chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		select {
		case <-done:
			return errExited
		default:
		}
		if last = ping(addr); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG within %v: %v", readyTimeout, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ping sends one inline PING over a fresh connection and checks the reply.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// logTail returns the last lines of the server's log.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// kill sends SIGKILL and waits for the process to exit. The caller holds s.mu
// or owns s exclusively.
func (s *Server) kill() {
	if s.proc == nil {
		return
	}
	_ = s.proc.Kill()
	<-s.done
	s.proc, s.done = nil, nil
}

// Addr returns the server's address, "127.0.0.1:<port>". It does not change
// across Kill and Restart.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// TLSAddr returns the "host:port" of a NewTLS server's TLS port, "" for
// another server.
func (s *Server) TLSAddr() string {
	if s.tlsAt == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsAt))
}

// Dir returns the server's private directory, which holds its log (redis.log)
// and, for a cluster node, its nodes-<port>.conf, for a Sentinel its
// sentinel.conf. Stop removes it.
func (s *Server) Dir() string { return s.dir }

// Kill kills the server with SIGKILL and waits for the process to exit, so
// that connections to Addr are refused until Restart. It does nothing if the
// server is not running. Kill panics on a shared server (see Standalone).
func (s *Server) Kill() {
	s.mustBePrivate("Kill")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
}

// Pause freezes the server with SIGSTOP, as a hung Redis would be: it
// keeps its port and its connections, and the kernel still accepts new
// ones, but nothing is answered until Resume. Pause does nothing if the
// server is not running; Kill, Restart and Stop work on a paused server.
// It panics on a shared server (see Standalone), and fails on a system
// without SIGSTOP.
func (s *Server) Pause() error { return s.signal("Pause", pauseSignal) }

// Resume continues a server that Pause froze (SIGCONT), which then answers
// what it was sent meanwhile; on one that is not paused it does nothing.
// It panics on a shared server (see Standalone).
func (s *Server) Resume() error { return s.signal("Resume", resumeSignal) }

// signal sends sig to the running server.
func (s *Server) signal(method string, sig os.Signal) error {
	s.mustBePrivate(method)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	if sig == nil {
		return fmt.Errorf("redistest: %s: no such signal on this system", method)
	}
	if err := s.proc.Signal(sig); err != nil {
		return fmt.Errorf("redistest: %s of %s: %w", method, s.Addr(), err)
	}
	return nil
}

// Restart starts the server again on the same address with the same
// configuration and waits until it answers PING; it kills the server first
// if it is running. The restarted server has no data (nothing is kept on
// disk), except that a cluster node keeps its nodes-<port>.conf, so it comes
// back with its node ID and slots and rejoins the cluster (see Cluster).
// Restart panics on a shared server (see Standalone).
//
// Restart returns an error, which quotes the end of the server's log, if the
// server was stopped or does not answer PING within 10 seconds.
func (s *Server) Restart() error {
	s.mustBePrivate("Restart")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("redistest: Restart of %s after Stop", s.Addr())
	}
	s.kill()
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		if err = s.launch(); !errors.Is(err, errExited) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the port may be held a moment longer
	}
	return err
}

// Stop kills the server and removes its directory. It is idempotent; after
// Stop, Restart returns an error. NewStandalone and NewCluster arrange for
// Stop to be called by t.Cleanup. Stop panics on a shared server (see
// Standalone); Main stops those.
func (s *Server) Stop() {
	s.mustBePrivate("Stop")
	s.stop()
}

// stop is Stop without the check that s is private.
func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	s.kill()
	_ = os.RemoveAll(s.dir)
	liveMu.Lock()
	delete(live, s)
	liveMu.Unlock()
}

// mustBePrivate panics if s is shared: tests must not kill what other tests
// are using.
func (s *Server) mustBePrivate(method string) {
	if s.shared {
		panic("redistest: " + method + " on a shared server; use NewStandalone or NewCluster for tests that kill servers")
	}
}

// Options returns go-redis options for the server: go-redis's defaults,
// except a 1 s dial timeout, one dial attempt per connection instead of five
// (so that commands to a killed server fail fast), 2 s read and write
// timeouts, and no CLIENT SETINFO (which Redis 7.0 does not know). Each call
// returns a new value the caller may change.
func (s *Server) Options() *redis.Options {
	return &redis.Options{
		Addr:            s.Addr(),
		DialTimeout:     time.Second,
		DialerRetries:   1,
		ReadTimeout:     2 * time.Second,
		WriteTimeout:    2 * time.Second,
		DisableIdentity: true,
	}
}

// Client returns a client of the server with Options, which t.Cleanup
// closes.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(s.Options())
	t.Cleanup(func() { _ = c.Close() })
	return c
}
