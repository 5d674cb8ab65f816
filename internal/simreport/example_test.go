package simreport

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// exampleReport is the report of the example: three algorithms on one
// traffic, and a retry storm with and without jitter.
func exampleReport() Report {
	storm := []Run{{Label: "without jitter", Result: fixture("", 1, true)}, {Label: "with jitter", Result: fixture("", 1, false)}}
	c, _ := RetryChart(storm, "retry_storm")
	return Report{
		Title:  "Tenant tiers, three algorithms",
		Policy: "policy.yaml", Traffic: "traffic.yaml",
		Runs:   Runs(fixture("gcra", 1, false), fixture("sliding_window", 1.1, false), fixture("fixed_window", 1.3, false)),
		Charts: []Chart{c},
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
	rep := exampleReport()
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
