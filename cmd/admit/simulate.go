package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/readlimit"
	"github.com/admit-go/admit/internal/simreport"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/server"
	"github.com/admit-go/admit/sim"
)

// maxTrafficFile bounds a traffic file (its replayed logs have their own
// bound, see sim.ParseTraffic).
const maxTrafficFile = 4 << 20

type simulateFlags struct {
	policy, traffic listFlag
	seed            uint64
	out             string
	compare         string
	strict          bool
	noProgress      bool
}

func newSimulateCommand(f *simulateFlags) *command {
	c := newCommand("simulate", "--policy FILE --traffic FILE [--seed N] [--out DIR] [--compare ALG,ALG...] [--strict]",
		`Play traffic against a policy on a simulated clock, with the engine and
limiters admit serve runs, and report what it would do: admitted and denied
per client, tenant and rule, retries, fairness, the backend's queue and
latency, and warnings about capacity, bursts and outages (docs/SIMULATE.md).
An hour of traffic takes seconds; the same inputs and seed give the same
results.

The summary goes to stdout. With --out, DIR receives report.html (one
self-contained page with the charts), results.json, series.csv and
tallies.csv, and each chart as PNG and SVG. Several --traffic files are run
one after the other and compared; --compare runs each one under every
algorithm named. The exit status is 0 when the runs are done (1 with
--strict if any has a warning), 1 when an input is wrong (reported as
file:line:column: field: message), and 2 for bad arguments.`)
	f.policy = listFlag{sep: ","}
	f.traffic = listFlag{sep: ","}
	c.fs.Var(&f.policy, "policy", "a policy `FILE` or directory, in admit's format or envoyproxy/ratelimit's, as serve's --config (may repeat)")
	c.fs.Var(&f.traffic, "traffic", "a traffic `FILE` (may repeat: each is a run of its own)")
	c.fs.Uint64Var(&f.seed, "seed", 0, "the random seed `N` (0: the traffic file's seed)")
	c.fs.StringVar(&f.out, "out", "", "write the report, data and charts into `DIR` (created if needed)")
	c.fs.StringVar(&f.compare, "compare", "", "run each traffic under each `ALG` of a comma-separated list (gcra,sliding_window,fixed_window...)")
	c.fs.BoolVar(&f.strict, "strict", false, "exit with status 1 if a run has warnings (for CI)")
	c.fs.BoolVar(&f.noProgress, "no-progress", false, "print no progress bar on a terminal")
	c.noEnv["out"], c.noEnv["traffic"], c.noEnv["compare"], c.noEnv["strict"] = true, true, true, true
	return c
}

func simulate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var f simulateFlags
	c := newSimulateCommand(&f)
	rest, err := c.parse(args, getenv)
	if errors.Is(err, errHelp) {
		c.printUsage(stdout)
		return nil
	}
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageErrorf("simulate: unexpected argument %q (give files with --policy and --traffic)", truncate(rest[0], 64))
	}
	if len(f.policy.items) == 0 || len(f.traffic.items) == 0 {
		return usageErrorf("simulate: needs --policy FILE and --traffic FILE")
	}
	algs, err := compareList(f.compare)
	if err != nil {
		return err
	}
	p, err := loadPolicy(f.policy.items)
	if err != nil {
		return err
	}
	if f.out != "" {
		// Before the runs, so that a directory that cannot be made loses
		// no run's work.
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			return fmt.Errorf("simulate: --out %s: %w", f.out, err)
		}
	}
	runs, err := f.runAll(ctx, p, algs, stderr)
	if err != nil {
		return err
	}
	for i, r := range runs {
		if len(runs) > 1 {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "== %s\n", r.Label)
		}
		if err := simreport.Summary(stdout, r.Result); err != nil {
			return err
		}
	}
	if f.out != "" {
		if err := writeReport(f.out, f.policy.items, f.traffic.items, runs); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(f.out, "report.html"))
	}
	if f.strict {
		for _, r := range runs {
			if len(r.Result.Warnings) > 0 {
				return &exitError{code: exitFailure, err: errors.New("warnings"), quiet: true}
			}
		}
	}
	return nil
}

// compareList reads --compare: algorithms' names, each once.
func compareList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return []string{""}, nil
	}
	var algs []string
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if _, err := admit.ParseAlgorithm(name); err != nil {
			return nil, usageErrorf("simulate: --compare: %v", err)
		}
		if !seen[name] {
			seen[name] = true
			algs = append(algs, name)
		}
	}
	return algs, nil
}

// loadPolicy reads the policy files paths stand for, merged as serve
// merges them.
func loadPolicy(paths []string) (*policy.Policy, error) {
	files, err := server.PolicyFiles(paths...)
	if err != nil {
		return nil, err
	}
	return policy.LoadFiles(files...)
}

// runAll runs each traffic file under each algorithm.
func (f *simulateFlags) runAll(ctx context.Context, p *policy.Policy, algs []string, stderr io.Writer) ([]simreport.Run, error) {
	var runs []simreport.Run
	for _, path := range f.traffic.items {
		data, err := readlimit.ReadFile(path, maxTrafficFile)
		if err != nil {
			return nil, err
		}
		t, err := sim.ParseTraffic(path, data)
		if err != nil {
			return nil, err
		}
		for _, alg := range algs {
			cfg := sim.Config{Policy: p, Traffic: t, Seed: f.seed, Algorithm: alg}
			var prog *simreport.Progress
			if !f.noProgress {
				prog = simreport.NewProgress(stderr, isTerminal(stderr))
				cfg.Progress = prog.Update
			}
			res, err := sim.Run(ctx, cfg)
			if prog != nil {
				prog.Finish()
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			runs = append(runs, simreport.Run{Label: runLabel(path, alg, len(f.traffic.items) > 1), Result: res})
		}
	}
	return runs, nil
}

// runLabel names a run: its traffic file (unless several algorithms
// are compared on one), and its algorithm when compared.
func runLabel(path, alg string, several bool) string {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	switch {
	case several && alg != "":
		return name + " " + alg
	case alg != "":
		return alg
	}
	return name
}

// writeReport writes the report, the data and the charts into dir.
func writeReport(dir string, policies, traffics []string, runs []simreport.Run) error {
	charts := simreport.Charts(runs)
	if _, err := simreport.WriteCharts(dir, charts); err != nil {
		return err
	}
	if _, err := simreport.WriteCSV(dir, runs); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "results.json"), func(w io.Writer) error { return simreport.WriteJSON(w, runs) }); err != nil {
		return err
	}
	rep := simreport.Report{Policy: strings.Join(policies, ", "), Traffic: strings.Join(traffics, ", "), Runs: runs}
	return writeFile(filepath.Join(dir, "report.html"), func(w io.Writer) error { return simreport.WriteHTML(w, rep) })
}

func writeFile(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	fh, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := fh.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
