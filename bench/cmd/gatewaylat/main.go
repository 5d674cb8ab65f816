// Command gatewaylat measures the latency a reverse proxy adds to an
// HTTP request, side by side: `admit serve --upstream` (built from this
// checkout), nginx with limit_req, and optionally a bare
// httputil.ReverseProxy, other admit binaries (-admits), and the floor
// targets (floor.go: the least a Go proxy does, with and without
// net/http's server), in front of the same upstream (a Go net/http
// server answering 200 with a 3-byte body), under the same open-loop
// load, with the upstream alone ("direct") as the baseline. A Go
// target's name followed by /1 (admit/1, floor-raw/1) runs it with
// GOMAXPROCS=1.
//
// Every server is a child process on 127.0.0.1, killed at the end (and if
// the driver dies). The load is constant-rate: requests are scheduled at
// -rate per second for -duration and sent over -conns kept-alive
// connections, each request's latency counted from its release (at its
// scheduled instant, or as soon after as the driver's timer wakes up; the
// lag is reported apart) to the end of its answer's body, waiting for a
// free connection included. Targets are measured one after the
// other, in turn, -rounds times, so that a change in the machine's load
// falls on all of them. For each run it prints p50, p90, p99, p99.9 and
// the maximum, the p99 added over the direct run of the same round, and
// the CPU time the proxy's process used per request (user + system, from
// /proc/PID/stat; the driver, the upstream and the proxy share the
// machine's cores) and its threads' context switches per request.
//
// Usage (from bench/):
//
//	go run ./cmd/gatewaylat [-rate 1000] [-conns 10] [-duration 15s] [-rounds 3] [-targets direct,nginx,admit]
//
// It sends traffic to 127.0.0.1 only, and stops by itself after about
// rounds × targets × duration. Linux only (/proc).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	child, err := serveChild()
	if !child {
		child, err = serveFloor()
	}
	if child {
		fmt.Fprintln(os.Stderr, "gatewaylat child:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gatewaylat:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gatewaylat", flag.ContinueOnError)
	var (
		l         load
		rounds    int
		targets   string
		admitBin  string
		beforeBin string
		admits    string
		nginxBin  string
		reqTimout time.Duration
	)
	fs.IntVar(&l.rate, "rate", 1000, "requests per second")
	fs.IntVar(&l.conns, "conns", 10, "connections")
	fs.DurationVar(&l.dur, "duration", 15*time.Second, "length of each run")
	fs.IntVar(&l.warm, "warm", 20, "requests each connection sends before a run, not counted")
	fs.IntVar(&rounds, "rounds", 3, "rounds of all the targets")
	fs.StringVar(&targets, "targets", "direct,nginx,admit", "targets, in the order of each round: direct, nginx, admit, admit-before, reverseproxy, floor-http, floor-raw, and the labels of -admits; a Go target's name followed by /1 runs it with GOMAXPROCS=1")
	fs.StringVar(&admitBin, "admit", "", "the admit binary (default: built from this checkout)")
	fs.StringVar(&beforeBin, "admit-before", "", "another admit binary, run as the target admit-before (to compare two versions in one run)")
	fs.StringVar(&admits, "admits", "", "more admit binaries, as `label=path,...`, each run as the target label (a path may be a script that sets the environment and execs admit)")
	fs.StringVar(&nginxBin, "nginx", "nginx", "the nginx binary")
	fs.DurationVar(&reqTimout, "timeout", 5*time.Second, "give up on a request after this long (it counts as failed)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if l.rate <= 0 || l.conns <= 0 || l.dur <= 0 || l.dur > 10*time.Minute || rounds <= 0 || rounds > 20 {
		return errors.New("want 0 < -rate, 0 < -conns, 0 < -duration <= 10m, 0 < -rounds <= 20")
	}
	known := []string{"direct", "nginx", "admit", "admit-before", "reverseproxy", "floor-http", "floor-raw"}
	extra := map[string]string{}
	if admits != "" {
		for _, kv := range strings.Split(admits, ",") {
			label, path, ok := strings.Cut(kv, "=")
			if !ok || label == "" || path == "" || slices.Contains(known, label) {
				return fmt.Errorf("-admits: want label=path, a label not among %v: %q", known, kv)
			}
			extra[label] = path
		}
	}
	names := strings.Split(targets, ",")
	for _, n := range names {
		b, one := strings.CutSuffix(n, "/1")
		if (!slices.Contains(known, b) && extra[b] == "") || (one && (b == "direct" || b == "nginx")) {
			return fmt.Errorf("unknown target %q", n)
		}
	}
	if slices.Contains(names, "admit-before") && beforeBin == "" {
		return errors.New("the target admit-before needs -admit-before")
	}

	dir, err := os.MkdirTemp("", "gatewaylat-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if slices.Contains(names, "admit") && admitBin == "" {
		admitBin = filepath.Join(dir, "admit")
		// Built in the main module (found through this module's replace
		// directive), whose go.sum has every dependency of the command.
		root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/admit-go/admit").Output()
		if err != nil {
			return fmt.Errorf("go list the admit module: %v", err)
		}
		cmd := exec.Command("go", "build", "-o", admitBin, "./cmd/admit")
		cmd.Dir = strings.TrimSpace(string(root))
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build admit: %v\n%s", err, b)
		}
	}

	up, err := startUpstream()
	if err != nil {
		return err
	}
	defer up.stop()
	ts := map[string]*target{"direct": up}
	for _, n := range names {
		var t *target
		b, one := strings.CutSuffix(n, "/1")
		var env []string
		if one {
			env = []string{"GOMAXPROCS=1"}
		}
		switch b {
		case "direct":
			continue
		case "nginx":
			t, err = startNginx(nginxBin, dir, up.url)
		case "admit":
			t, err = startAdmit(admitBin, dir, up.url, env...)
		case "admit-before":
			t, err = startAdmit(beforeBin, dir, up.url, env...)
		case "reverseproxy", "floor-http", "floor-raw":
			t, err = startSelfProxy(b, up.url, env...)
		default:
			t, err = startAdmit(extra[b], dir, up.url, env...)
		}
		if err != nil {
			return err
		}
		defer t.stop()
		ts[n] = t
	}

	fmt.Fprintf(out, "machine: %s, %d CPUs, %s\n", cpuModel(), runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(out, "load: %d req/s open loop over %d connections, %v per run, %d rounds; upstream: Go net/http, 200 with %d bytes\n",
		l.rate, l.conns, l.dur, rounds, len(upstreamBody))
	fmt.Fprintf(out, "latencies in µs; +p99: p99 less the direct p99 of the same round; cpu/req: the target's CPU time (user+system) per request;\n")
	fmt.Fprintf(out, "cs/req: the target's context switches (its threads', voluntary and not) per request; lag p99: how late the driver released the requests, its p99\n")
	fmt.Fprintf(out, "%-5s %-12s %7s %7s %7s %7s %7s %7s %9s %6s %9s %6s %8s  %s\n",
		"round", "target", "reqs", "p50", "p90", "p99", "p99.9", "max", "+p99", "fail", "cpu/req", "cs/req", "lag p99", "loadavg before → after")
	type row struct{ p50, p99, added, cpu []time.Duration }
	rows := map[string]*row{}
	for round := 1; round <= rounds; round++ {
		var direct time.Duration
		for _, n := range names {
			t := ts[n]
			before := loadAvg()
			cpu0, _ := cpuTime(t.pid())
			cs0 := switches(t.pid())
			r, err := l.run(ctx, t.url, reqTimout)
			if err != nil {
				return err
			}
			cpu1, _ := cpuTime(t.pid())
			cs := float64(switches(t.pid())-cs0) / float64(max(1, len(r.lat)))
			cpu := (cpu1 - cpu0) / time.Duration(max(1, len(r.lat)))
			p99 := pct(r.lat, 0.99)
			rw := rows[n]
			if rw == nil {
				rw = &row{}
				rows[n] = rw
			}
			rw.p50 = append(rw.p50, pct(r.lat, 0.5))
			rw.p99 = append(rw.p99, p99)
			rw.cpu = append(rw.cpu, cpu)
			added := "-"
			if n == "direct" {
				direct = p99
			} else if direct > 0 {
				added = us(p99 - direct)
				rw.added = append(rw.added, p99-direct)
			}
			fmt.Fprintf(out, "%-5d %-12s %7d %7s %7s %7s %7s %7s %9s %6d %9s %6.1f %8s  %s → %s\n",
				round, n, len(r.lat), us(pct(r.lat, 0.5)), us(pct(r.lat, 0.9)), us(p99), us(pct(r.lat, 0.999)),
				us(pct(r.lat, 1)), added, r.failed, us(cpu), cs, us(pct(r.lag, 0.99)), before, loadAvg())
		}
	}
	fmt.Fprintf(out, "\nsummary over the rounds, median (min-max), µs:\n")
	fmt.Fprintf(out, "%-12s %22s %22s %22s %22s\n", "target", "p50", "p99", "+p99", "cpu/req")
	for _, n := range names {
		rw := rows[n]
		fmt.Fprintf(out, "%-12s %22s %22s %22s %22s\n", n, span(rw.p50), span(rw.p99), span(rw.added), span(rw.cpu))
	}
	return nil
}

// us formats d in microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%d", d.Microseconds()) }

// span formats the median, smallest and largest of ds in microseconds.
func span(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(ds))
	return us(s[(len(s)-1)/2]) + " (" + us(s[0]) + "-" + us(s[len(s)-1]) + ")"
}

// loadAvg returns the 1-minute load average, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// cpuModel returns the CPU's model name from /proc/cpuinfo, or "?".
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
