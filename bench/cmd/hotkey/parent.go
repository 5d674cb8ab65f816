package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit/bench/internal/redisbench"
	"github.com/redis/go-redis/v9"
)

// child is one process of the fleet, seen from the parent.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// spawn starts a child of the run cfg.
func spawn(cfg config) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, cfg.childArgs()...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmd, stdin, bufio.NewReader(stdout)}, nil
}

// runParent runs the fleet, checks the bound and prints the report. It
// returns whether every check passed.
func runParent(cfg config) (bool, error) {
	where := cfg.redis
	if cfg.redis == "" {
		srv, err := redisbench.Start()
		if err != nil {
			return false, err
		}
		defer srv.Stop()
		cfg.redis, where = srv.Addr, srv.Addr+" (started for the run)"
	}
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	cfg.key, cfg.prefix = "hot-"+id, "hotkey:"+id+":"
	c := newClient(cfg)
	defer c.Close()
	ctx := context.Background()

	children := make([]*child, cfg.procs)
	defer func() {
		for _, ch := range children {
			if ch != nil && ch.cmd.ProcessState == nil {
				ch.cmd.Process.Kill()
				ch.cmd.Wait()
			}
		}
	}()
	for i := range children {
		ch, err := spawn(cfg)
		if err != nil {
			return false, err
		}
		children[i] = ch
	}
	if err := awaitReady(children, time.Minute); err != nil {
		return false, err
	}
	before, beforeErr := redisbench.ReadStats(ctx, c)
	redis0, mono0, rtt0, err := redisClock(ctx, c)
	if err != nil {
		return false, err
	}
	start := mono() + int64(50*time.Millisecond)
	for _, ch := range children {
		fmt.Fprintf(ch.stdin, "go %d\n", start)
	}
	results := make([]result, len(children))
	for i, ch := range children {
		if err := json.NewDecoder(ch.out).Decode(&results[i]); err != nil {
			return false, fmt.Errorf("process %d's result: %w", i, err)
		}
		if err := ch.cmd.Wait(); err != nil {
			return false, fmt.Errorf("process %d: %w", i, err)
		}
	}
	redis1, mono1, rtt1, err := redisClock(ctx, c)
	if err != nil {
		return false, err
	}
	after, afterErr := redisbench.ReadStats(ctx, c)

	fmt.Printf("hotkey: limiter %s, %d processes × %.0f checks/s offered (%d goroutines each), one key at %d/s burst %d, %v\n",
		cfg.limiter, cfg.procs, cfg.offer, cfg.workers, cfg.rate, cfg.burst, cfg.duration)
	fmt.Printf("redis %s; %s, GOMAXPROCS %d, %d CPUs\n", where, runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())
	r := report{cfg: cfg, results: results}
	r.drift = float64((redis1-redis0)-(mono1-mono0)) / float64(mono1-mono0) * 1e6
	r.driftErr = float64((rtt0+rtt1)/2+2*int64(time.Microsecond)) / float64(mono1-mono0) * 1e6
	if beforeErr == nil && afterErr == nil && !cfg.cluster {
		st := after.Sub(before)
		r.stats = &st
	}
	return r.print(os.Stdout), nil
}

// awaitReady waits for every child's "ready" line.
func awaitReady(children []*child, timeout time.Duration) error {
	errs := make(chan error, len(children))
	for i, ch := range children {
		go func() {
			line, err := ch.out.ReadString('\n')
			if err == nil && strings.TrimSpace(line) != "ready" {
				err = fmt.Errorf("said %q", line)
			}
			if err != nil {
				err = fmt.Errorf("process %d did not get ready: %w", i, err)
			}
			errs <- err
		}()
	}
	deadline := time.After(timeout)
	for range children {
		select {
		case err := <-errs:
			if err != nil {
				return err
			}
		case <-deadline:
			return fmt.Errorf("processes not ready after %v", timeout)
		}
	}
	return nil
}

// redisClock reads Redis's clock (TIME) and the monotonic clock at the
// middle of the round trip, and the round trip, all in ns.
func redisClock(ctx context.Context, c redis.UniversalClient) (redisNs, monoNs, rtt int64, err error) {
	before := mono()
	t, err := c.Time(ctx).Result()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("redis TIME: %w", err)
	}
	rtt = mono() - before
	return t.UnixNano(), before + rtt/2, rtt, nil
}

// report is a finished run.
type report struct {
	cfg      config
	results  []result
	drift    float64           // Redis's clock against the monotonic one, ppm
	driftErr float64           // and the uncertainty of that, ppm
	stats    *redisbench.Stats // nil on a cluster
}

// slack is the allowance over B + t/T for the clocks (see the package
// documentation).
const slack = 1

// print writes the report to w and returns whether the run passed.
func (r report) print(w io.Writer) bool {
	cfg := r.cfg
	l := limit{burst: float64(cfg.burst), per: time.Second / time.Duration(cfg.rate)}
	var events []event
	var recv []int64
	offered, errs := 0, 0
	for i, res := range r.results {
		fmt.Fprintf(w, "process %d: offered %d (%.0f/s), admitted %d, errors %d, latency p50 %v p99 %v\n",
			i, res.Offered, float64(res.Offered)/cfg.duration.Seconds(), len(res.Recv), res.Errors,
			time.Duration(res.P50), time.Duration(res.P99))
		if res.FirstError != "" {
			fmt.Fprintf(w, "  first error: %s\n", res.FirstError)
		}
		offered += res.Offered
		errs += res.Errors
		for j := range res.Recv {
			events = append(events, event{res.Sent[j], res.Recv[j]})
			recv = append(recv, res.Recv[j])
		}
	}
	slices.Sort(recv)
	n := len(recv)
	if n == 0 {
		fmt.Fprintln(w, "nothing admitted: FAIL")
		return false
	}
	last, first := recv[n-1], recv[0]
	for _, e := range events {
		first = min(first, e.sent)
	}
	ideal := l.allowed(last - first)
	fmt.Fprintf(w, "admitted %d of %d offered (%.2fx the limit), %d errors\n",
		n, offered, float64(offered)/cfg.duration.Seconds()/float64(cfg.rate), errs)
	fmt.Fprintf(w, "ideal B + D/T = %.1f (D = %v, from the first admitted request to the last answer): admitted/ideal %.5f, shortfall %.1f events\n",
		ideal, time.Duration(last-first), float64(n)/ideal, ideal-float64(n))
	fmt.Fprintf(w, "Redis's clock against the monotonic one over the run: %+.0f ppm (±%.0f)\n", r.drift, r.driftErr)
	if r.stats != nil {
		fmt.Fprintf(w, "Redis per offered check: %.3f commands (%.3f EVAL/EVALSHA), %.2f µs of commands, %.2f µs CPU; %.2f cores\n",
			float64(r.stats.Calls)/float64(offered), float64(r.stats.Evals)/float64(offered),
			float64(r.stats.Usec)/float64(offered), float64(r.stats.CPU.Microseconds())/float64(offered),
			r.stats.CPU.Seconds()/cfg.duration.Seconds())
	}

	fmt.Fprintf(w, "\nbusiest window of each length (answers' instants):\n%10s %10s %10s %8s\n", "t", "admitted", "B + t/T", "excess")
	for _, t := range windowLengths(last - recv[0]) {
		b := busiest(recv, t)
		fmt.Fprintf(w, "%10v %10d %10.1f %8.2f\n", time.Duration(t), b.count, l.allowed(t), l.excess(b))
	}
	var lmax int64
	for _, e := range events {
		lmax = max(lmax, e.recv-e.sent)
	}
	pass := true
	verdict := func(what string, win window, allowance float64) {
		over := l.excess(win) - allowance
		ok := over <= 1e-9
		pass = pass && ok
		fmt.Fprintf(w, "%s: largest excess over B + t/T %.2f in [%v, %v] (t = %v, %d admitted); allowance %.2f, overshoot %.2f: %s\n",
			what, l.excess(win), time.Duration(win.from), time.Duration(win.to), time.Duration(win.to-win.from), win.count, allowance, over, passFail(ok))
	}
	fmt.Fprintf(w, "\nevery window of any length:\n")
	verdict("proven ", provenWindow(events, l), slack)
	verdict("answers", worstWindow(recv, l), slack+float64(lmax)/float64(l.per))
	if cfg.maxShortfall >= 0 {
		ok := ideal-float64(n) <= cfg.maxShortfall
		pass = pass && ok
		fmt.Fprintf(w, "shortfall %.1f, at most %.1f: %s\n", ideal-float64(n), cfg.maxShortfall, passFail(ok))
	}
	if errs > 0 {
		pass = false
		fmt.Fprintf(w, "%d checks failed: FAIL\n", errs)
	}
	fmt.Fprintf(w, "result: %s\n", passFail(pass))
	return pass
}

// windowLengths are the lengths of window tabulated: 10 ms to the run's
// length, in 1-2-5 steps, and the whole run.
func windowLengths(whole int64) []int64 {
	var ts []int64
	for t := 10 * time.Millisecond; int64(t) < whole; t *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if int64(m*t) < whole {
				ts = append(ts, int64(m*t))
			}
		}
	}
	return append(ts, whole)
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
