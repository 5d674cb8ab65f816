package simreport

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/admit-go/admit/sim"
)

// Run is a result with the name it is shown under in a report.
type Run struct {
	// Label names the run ("with jitter", say). "" means the Result's
	// Algorithm, or "run N" (N from 1) without one.
	Label  string
	Result *sim.Result
}

// Runs labels results by their Algorithm (or "run N"), for a report of
// several runs of one traffic.
func Runs(results ...*sim.Result) []Run {
	runs := make([]Run, len(results))
	for i, r := range results {
		runs[i] = Run{Result: r}
	}
	return runs
}

// label is the run's name in a report where it is the i-th (from 0).
func (r Run) label(i int) string {
	switch {
	case r.Label != "":
		return r.Label
	case r.Result != nil && r.Result.Algorithm != "":
		return r.Result.Algorithm
	}
	return fmt.Sprintf("run %d", i+1)
}

// checkRuns refuses runs without a result, which nothing could show.
func checkRuns(runs []Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("simreport: no results to report")
	}
	for i, r := range runs {
		if r.Result == nil {
			return fmt.Errorf("simreport: %s has no result", r.label(i))
		}
	}
	return nil
}

// seriesOf is the points of r's series named name for client ("" for the
// backend's), or nil.
func seriesOf(r *sim.Result, name, client string) []float64 {
	for _, s := range r.Series {
		if s.Name == name && s.Client == client {
			return s.Points
		}
	}
	return nil
}

// hasSeries reports whether r has a series named name.
func hasSeries(r *sim.Result, name string) bool {
	for _, s := range r.Series {
		if s.Name == name {
			return true
		}
	}
	return false
}

// sumSeries adds up r's series named name over every client, point by
// point (NaN counts as 0).
func sumSeries(r *sim.Result, name string) []float64 {
	var out []float64
	for _, s := range r.Series {
		if s.Name == name {
			out = addPoints(out, s.Points)
		}
	}
	return out
}

// addPoints adds b to a point by point, growing a to b's length, and
// returns a. NaN and infinite values count as 0.
func addPoints(a, b []float64) []float64 {
	for len(a) < len(b) {
		a = append(a, 0)
	}
	for i, v := range b {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			a[i] += v
		}
	}
	return a
}

// sumFinite sums the finite values of vs.
func sumFinite(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			s += v
		}
	}
	return s
}

// clientTraffic is one client's admitted and denied series in a chart.
type clientTraffic struct {
	name             string
	admitted, denied []float64
	volume           float64
}

// topClients is r's clients with "admitted" or "denied" series, the
// largest by volume (admitted plus denied) first; when there are more
// than keep+1, the rest are summed into one entry named "others (N
// clients)".
func topClients(r *sim.Result, keep int) []clientTraffic {
	var cs []clientTraffic
	index := map[string]int{}
	for _, s := range r.Series {
		if s.Name != "admitted" && s.Name != "denied" {
			continue
		}
		i, ok := index[s.Client]
		if !ok {
			i = len(cs)
			index[s.Client] = i
			cs = append(cs, clientTraffic{name: s.Client})
		}
		if s.Name == "admitted" {
			cs[i].admitted = addPoints(cs[i].admitted, s.Points)
		} else {
			cs[i].denied = addPoints(cs[i].denied, s.Points)
		}
		cs[i].volume += sumFinite(s.Points)
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].volume > cs[j].volume })
	if len(cs) <= keep+1 {
		return cs
	}
	others := clientTraffic{name: fmt.Sprintf("others (%d clients)", len(cs)-keep)}
	for _, c := range cs[keep:] {
		others.admitted = addPoints(others.admitted, c.admitted)
		others.denied = addPoints(others.denied, c.denied)
		others.volume += c.volume
	}
	return append(cs[:keep:keep], others)
}

// Charts is every chart a report of runs shows, in its order: with
// several runs, the comparison (CompareChart, CompareBars) and the retry
// storms when a run retried (RetryChart); then each run's traffic and
// backend (and, for one run that retried, its RetryChart). Their names are "compare", "compare_bars", "retries", and
// "traffic" and "backend" for one run, or followed by "-" and the run's
// label made safe for a file name with several runs.
func Charts(runs []Run) []Chart {
	var out []Chart
	add := func(c Chart, ok bool) {
		if ok {
			out = append(out, c)
		}
	}
	add(CompareChart(runs, "compare"))
	add(CompareBars(runs, "compare_bars"))
	retried := false
	for _, run := range runs {
		retried = retried || (run.Result != nil && sumFinite(sumSeries(run.Result, "retries")) > 0)
	}
	if retried && len(runs) > 1 {
		add(RetryChart(runs, "retries"))
	}
	names := fileLabels(runs)
	for i, run := range runs {
		if run.Result == nil {
			continue
		}
		label := ""
		if len(runs) > 1 {
			label = run.label(i)
		}
		add(TrafficChart(run.Result, "traffic"+names[i], label))
		add(BackendChart(run.Result, "backend"+names[i], label))
	}
	if retried && len(runs) == 1 {
		add(RetryChart(runs, "retries")) // after the run's own, which matter more
	}
	return out
}

// fileLabels is the suffix of each run's chart names: "" for a single
// run; otherwise "-" and its label in lower-case letters, digits, '-' and
// '_' (others become '_'), made unique by the run's number.
func fileLabels(runs []Run) []string {
	out := make([]string, len(runs))
	if len(runs) < 2 {
		return out
	}
	seen := map[string]bool{}
	for i, run := range runs {
		var b []rune
		for _, c := range strings.ToLower(run.label(i)) {
			if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' {
				b = append(b, c)
			} else {
				b = append(b, '_')
			}
		}
		s := "-" + shorten(string(b), 40)
		if seen[s] {
			s = fmt.Sprintf("%s-%d", s, i+1)
		}
		seen[s] = true
		out[i] = s
	}
	return out
}
