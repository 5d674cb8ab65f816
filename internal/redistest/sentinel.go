package redistest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// sentinelMasterName is the name under which a Sentinel monitors its
	// master.
	sentinelMasterName = "admit-test"
	// sentinelDownAfter is down-after-milliseconds: how long the master must
	// be unreachable before the Sentinel flags it as down.
	sentinelDownAfter = 1000 * time.Millisecond
)

// Sentinel is a Redis master and one Sentinel (redis-server --sentinel)
// monitoring it under MasterName with a quorum of 1 and
// down-after-milliseconds 1000. There is no replica, so the Sentinel never
// fails over: when the master is killed, clients asking the Sentinel are
// still sent to it, and reach it again once Master().Restart() has returned.
//
// A Sentinel is safe for concurrent use.
type Sentinel struct {
	master   *Server
	sentinel *Server
}

// NewSentinel starts a master and a Sentinel monitoring it, which t.Cleanup
// stops. It returns once the Sentinel reports the master as up.
//
// NewSentinel skips the test when redis-server is not on PATH (fails it when
// ADMIT_REQUIRE_REDIS=1).
func NewSentinel(t testing.TB) *Sentinel {
	t.Helper()
	bin := lookPath(t, "redis-server")
	s, err := startSentinel(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// startSentinel starts a master and a Sentinel and waits until the Sentinel
// sees the master.
func startSentinel(bin string) (_ *Sentinel, err error) {
	master, err := startServer(bin, kindStandalone, nil)
	if err != nil {
		return nil, err
	}
	s := &Sentinel{master: master}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	s.sentinel, err = startServer(bin, kindSentinel, func(sn *Server) error {
		conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %q\n"+
			"sentinel monitor %s 127.0.0.1 %d 1\n"+
			"sentinel down-after-milliseconds %s %d\n",
			sn.port, sn.dir,
			sentinelMasterName, master.port,
			sentinelMasterName, sentinelDownAfter.Milliseconds())
		return os.WriteFile(sn.confPath(), []byte(conf), 0o644)
	})
	if err != nil {
		return nil, err
	}
	if err := s.WaitMasterUp(readyTimeout); err != nil {
		return nil, err
	}
	return s, nil
}

// MasterName returns the name under which the Sentinel monitors the master.
func (s *Sentinel) MasterName() string { return sentinelMasterName }

// Addr returns the Sentinel's address, "127.0.0.1:<port>".
func (s *Sentinel) Addr() string { return s.sentinel.Addr() }

// Master returns the master, which a test may Kill and Restart.
func (s *Sentinel) Master() *Server { return s.master }

// SentinelServer returns the Sentinel's own process, which a test may Kill
// and Restart; it keeps its sentinel.conf across restarts.
func (s *Sentinel) SentinelServer() *Server { return s.sentinel }

// WaitMasterUp polls the Sentinel until it reports the master as up (flags
// "master", with no s_down or disconnected), or timeout passes.
func (s *Sentinel) WaitMasterUp(timeout time.Duration) error {
	client := redis.NewSentinelClient(s.sentinel.internalOptions())
	defer client.Close()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m, err := client.Master(ctx, sentinelMasterName).Result()
		cancel()
		if err == nil && m["flags"] == "master" {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("master flags %q", m["flags"])
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: Sentinel %s does not see master %s up after %v: %w; end of %s:\n%s",
				s.Addr(), s.master.Addr(), timeout, err, s.sentinel.logPath(), s.sentinel.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the Sentinel and the master. It is idempotent. NewSentinel
// arranges for Stop to be called by t.Cleanup.
func (s *Sentinel) Stop() {
	if s.sentinel != nil {
		s.sentinel.Stop()
	}
	s.master.Stop()
}

// Options returns go-redis failover options for the master through the
// Sentinel, with the same changes to go-redis's defaults as
// Server.Options. Each call returns a new value the caller may change.
func (s *Sentinel) Options() *redis.FailoverOptions {
	o := s.master.Options()
	return &redis.FailoverOptions{
		MasterName:      sentinelMasterName,
		SentinelAddrs:   []string{s.Addr()},
		DialTimeout:     o.DialTimeout,
		DialerRetries:   o.DialerRetries,
		ReadTimeout:     o.ReadTimeout,
		WriteTimeout:    o.WriteTimeout,
		DisableIdentity: o.DisableIdentity,
	}
}

// Client returns a failover client of the master through the Sentinel, with
// Options, which t.Cleanup closes.
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(s.Options())
	t.Cleanup(func() { _ = c.Close() })
	return c
}
