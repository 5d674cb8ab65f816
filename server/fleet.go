package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit/internal/enginehook"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// The instances of admit serve sharing a Redis count one another, so that
// the rules that prefetch size their blocks for the fleet as it scales
// (prefetch.Limiter.SetInstances): each instance writes its name and
// Redis's time into a sorted set every fleetInterval, drops the names not
// written for fleetTTL and counts the rest, in one script call. The count
// only sizes blocks: a wrong one never lets the fleet admit more than a
// limit, it only changes how much one instance may hold while others wait.
const (
	fleetInterval = 2 * time.Second
	fleetTTL      = 10 * time.Second
	fleetKey      = "admit:instances"
)

// fleetScript writes ARGV[1] at Redis's time (ms) into the sorted set
// KEYS[1], drops the members older than ARGV[2] ms, keeps the set twice
// that long, and returns how many are left.
var fleetScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
return redis.call('ZCARD', KEYS[1])
`)

// fleet is this instance's part in the count.
type fleet struct {
	client redis.UniversalClient
	key    string // the Server's KeyPrefix, then fleetKey
	name   string // this instance's: host, process id and a random suffix
	n      atomic.Int64
}

func newFleet(client redis.UniversalClient, prefix string) *fleet {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	f := &fleet{client: client, key: prefix + fleetKey, name: host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])}
	f.n.Store(1)
	return f
}

// beat writes this instance's name and returns the live instances it
// counts (at least 1), or the last count if Redis does not answer.
func (f *fleet) beat(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, fleetInterval)
	defer cancel()
	n, err := fleetScript.Run(ctx, f.client, []string{f.key}, f.name, fleetTTL.Milliseconds()).Int64()
	if err == nil {
		f.n.Store(max(n, 1))
	}
	return int(f.n.Load())
}

// leave takes this instance's name out of the count (at shutdown).
func (f *fleet) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = f.client.ZRem(ctx, f.key, f.name).Err()
}

// buildFleet makes the Server's part in the count of instances when it
// keeps state in Redis, and its gauge admit_instances.
func (s *Server) buildFleet() error {
	if s.store == nil {
		return nil
	}
	client := s.ownClient
	if client == nil {
		client = s.c.RedisClient
	}
	s.fleet = newFleet(client, s.c.KeyPrefix)
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "admit_instances",
		Help: "Instances of admit serve this one counts on its Redis (itself included), which the rules that prefetch size their blocks for.",
	}, func() float64 { return float64(s.fleet.n.Load()) })
	if err := s.reg.Register(g); err != nil {
		return fmt.Errorf("%w: metrics: %v", errInvalidConfig, err)
	}
	return nil
}

// countFleet is the goroutine that keeps this instance counted while the
// Server runs, and tells the engine in force how many instances share
// Redis.
func (s *Server) countFleet() {
	defer s.wg.Done()
	t := time.NewTicker(fleetInterval)
	defer t.Stop()
	for {
		enginehook.SetInstances(s.engines.Engine(), s.fleet.beat(context.Background()))
		select {
		case <-s.quit:
			s.fleet.leave()
			return
		case <-t.C:
		}
	}
}
