package simreport

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/admit-go/admit/sim"
)

// exampleReport is the report of the example, from the engine: three
// algorithms on one traffic, and a retry storm without jitter and its
// cure (Retry-After, jitter, a budget).
func exampleReport(t *testing.T) Report {
	storm := []Run{
		{Label: "immediate retries, no jitter", Result: simulate(t, "", sim.Retry{On429: "immediate", Delay: 10 * time.Millisecond, MaxAttempts: 10})},
		{Label: "Retry-After with jitter and a budget", Result: simulate(t, "", sim.Retry{On429: "retry_after", Jitter: 1, Budget: 0.2, MaxAttempts: 10})},
	}
	c, _ := RetryChart(storm, "retry_storm")
	var runs []Run
	for _, alg := range []string{"gcra", "sliding_window", "fixed_window"} {
		runs = append(runs, Run{Result: simulate(t, alg, sim.Retry{})})
	}
	return Report{
		Title:  "Tenant tiers, three algorithms",
		Policy: "policy.yaml", Traffic: "traffic.yaml",
		Runs: runs, Charts: []Chart{c},
	}
}

// TestWriteExampleReport writes the example report, its charts, JSON,
// CSV and terminal summary into $SIMREPORT_OUT, for a person to look at;
// without it, it skips.
func TestWriteExampleReport(t *testing.T) {
	dir := os.Getenv("SIMREPORT_OUT")
	if dir == "" {
		t.Skip("set SIMREPORT_OUT=dir to write an example report there")
	}
	rep := exampleReport(t)
	charts := append(Charts(rep.Runs), rep.Charts...)
	charts = append(charts, Charts(rep.Runs[:1])...) // traffic.png, backend.png
	paths, err := WriteCharts(dir, charts)
	if err != nil {
		t.Fatal(err)
	}
	csvs, err := WriteCSV(dir, rep.Runs)
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, csvs...)
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"report.html", func(w io.Writer) error { return WriteHTML(w, rep) }},
		{"results.json", func(w io.Writer) error { return WriteJSON(w, rep.Runs) }},
		{"summary.txt", func(w io.Writer) error { return Summary(w, rep.Runs[0].Result) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	for _, p := range paths {
		t.Log(p)
	}
}
