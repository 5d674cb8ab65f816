package simreport

import (
	"os"
	"testing"
)

// TestWriteExampleReport writes an example report and its charts into
// $SIMREPORT_OUT, for a person to look at; without it, it skips.
func TestWriteExampleReport(t *testing.T) {
	dir := os.Getenv("SIMREPORT_OUT")
	if dir == "" {
		t.Skip("set SIMREPORT_OUT=dir to write an example report there")
	}
	runs := Runs(fixture("gcra", 1, false), fixture("sliding_window", 1.1, false), fixture("fixed_window", 1.3, false))
	storm := []Run{{Label: "without jitter", Result: fixture("", 1, true)}, {Label: "with jitter", Result: fixture("", 1, false)}}
	charts := append(Charts(runs[:1]), Charts(runs)[:2]...)
	if c, ok := RetryChart(storm, "retry_storm"); ok {
		charts = append(charts, c)
	}
	paths, err := WriteCharts(dir, charts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		t.Log(p)
	}
}
