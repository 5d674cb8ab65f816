// Command hotkey checks, across OS processes, the bound a fleet-wide rate
// limit promises on one hot key. -procs processes (3), each with its own
// Redis client and its own limiter (as separate instances of a service
// have), offer one key about 10 times its limit (-offer checks per second
// each, paced, from -workers goroutines) for -duration, and record each
// admitted check: the instants its request left and its answer came, on
// the machine's monotonic clock (CLOCK_MONOTONIC, shared by every
// process). The parent merges them and checks, over every window [a, a+t]
// of the merged answers, for every t from the shortest to the whole run,
//
//	admitted ≤ B + t/T + 1
//
// with B the burst and T the emission interval (the period over the
// rate). The 1 is for the clocks: an answer is timed after the store
// decided, by the latency of the way back, and Redis decides on its own
// clock (TIME, the wall clock), whose rate against the monotonic one the
// report measures. It reports the largest excess over B + t/T, the
// overshoot (that excess minus the 1: it must be ≤ 0), the busiest
// window of several lengths from 10 ms to the whole run, and the total
// admitted against the ideal B + D/T, D from the first admitted request
// (which found the bucket full) to the last answer.
//
// A second check needs no allowance for latency: counting in a window [a,
// b] only the checks whose whole [request, answer] lies in it, which the
// store certainly decided inside it, it finds the window of any length
// with the largest excess ("proven"). A proven overshoot above 0 is a
// breach no delay explains.
//
// The limiter is -limiter, one of the GCRA entries of redisbench.Libs
// ("admit" is admit's redisstore in its strict mode, every check on
// Redis); a new entry there (issue 15's prefetching store) is selectable
// here with no change to this program. -redis is the address of a Redis,
// or a comma-separated list of seeds with -cluster for a Redis Cluster;
// empty starts a redis-server on a free port for the run. -max-shortfall
// fails the run when the admitted total falls short of the ideal by more
// than that many events (the early-denial bound of a prefetching store;
// off by default).
//
// Usage (from bench/):
//
//	go run ./cmd/hotkey [-limiter admit] [-redis ADDR[,ADDR...] [-cluster]] [-procs 3] [-duration 10s] [-rate 1000] [-burst 100] [-offer 3400] [-workers 8]
//
// The exit status is 1 when a bound is exceeded. It is not a test: go test
// does not run it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/bench/internal/redisbench"
	"github.com/redis/go-redis/v9"
)

// config is the run's flags.
type config struct {
	limiter      string
	redis        string
	cluster      bool
	procs        int
	duration     time.Duration
	rate, burst  int64
	offer        float64
	workers      int
	maxShortfall float64

	child       bool   // this process is one of the fleet
	key, prefix string // given to the children by the parent
}

func (c config) limit() admit.Limit {
	return admit.Limit{Rate: c.rate, Period: time.Second, Burst: c.burst}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("hotkey", flag.ContinueOnError)
	fs.StringVar(&c.limiter, "limiter", "admit", "the limiter: one of "+strings.Join(gcraNames(), ", "))
	fs.StringVar(&c.redis, "redis", "", "Redis address, or comma-separated seeds with -cluster; empty starts a redis-server")
	fs.BoolVar(&c.cluster, "cluster", false, "-redis is a Redis Cluster")
	fs.IntVar(&c.procs, "procs", 3, "processes")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long the processes offer checks")
	fs.Int64Var(&c.rate, "rate", 1000, "the key's limit, per second")
	fs.Int64Var(&c.burst, "burst", 100, "the key's burst")
	fs.Float64Var(&c.offer, "offer", 3400, "checks offered per second by each process")
	fs.IntVar(&c.workers, "workers", 8, "goroutines per process")
	fs.Float64Var(&c.maxShortfall, "max-shortfall", -1, "fail if the ideal minus the admitted exceeds this many events (negative: not checked)")
	fs.BoolVar(&c.child, "child", false, "internal: run as one process of the fleet")
	fs.StringVar(&c.key, "key", "", "internal: the hot key")
	fs.StringVar(&c.prefix, "prefix", "", "internal: the limiter's key prefix")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if lib, ok := redisbench.Lookup(c.limiter); !ok || !lib.GCRA {
		return c, fmt.Errorf("-limiter %q: want one of %s (a limiter that promises B + t/T)", c.limiter, strings.Join(gcraNames(), ", "))
	}
	if c.procs < 1 || c.workers < 1 || c.rate < 1 || c.burst < 1 || c.offer <= 0 || c.duration <= 0 {
		return c, errors.New("-procs, -workers, -rate, -burst, -offer and -duration must be positive")
	}
	return c, nil
}

// childArgs are the flags of a child of the run c.
func (c config) childArgs() []string {
	return []string{
		"-child", "-limiter", c.limiter, "-redis", c.redis, "-cluster=" + strconv.FormatBool(c.cluster), "-procs", strconv.Itoa(c.procs),
		"-duration", c.duration.String(), "-rate", strconv.FormatInt(c.rate, 10),
		"-burst", strconv.FormatInt(c.burst, 10), "-offer", strconv.FormatFloat(c.offer, 'g', -1, 64),
		"-workers", strconv.Itoa(c.workers), "-key", c.key, "-prefix", c.prefix,
	}
}

func gcraNames() []string {
	var names []string
	for _, l := range redisbench.Libs {
		if l.GCRA {
			names = append(names, l.Name)
		}
	}
	return names
}

func newClient(c config) redis.UniversalClient {
	return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(c.redis, ","), IsClusterMode: c.cluster})
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "hotkey:", err)
		os.Exit(2)
	}
	if cfg.child {
		if err := runChild(cfg); err != nil {
			fmt.Fprintln(os.Stderr, "hotkey child:", err)
			os.Exit(1)
		}
		return
	}
	ok, err := runParent(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hotkey:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}
