package simreport

import (
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strconv"

	"github.com/admit-go/admit/sim"
)

// Report is what WriteHTML writes: the results of one or more runs of
// one traffic, with the names of their inputs.
type Report struct {
	// Title heads the report; "" means "admit simulate".
	Title string
	// Policy and Traffic name the input files, shown under the title
	// ("" leaves them out).
	Policy, Traffic string
	// Runs are the results. With several, the report opens with their
	// comparison.
	Runs []Run
	// Charts are more charts, shown after the comparison (a RetryChart
	// of runs with and without jitter, say).
	Charts []Chart
}

//go:embed report.html.tmpl
var reportTemplate string

// page is parsed once; html/template escapes every value it inserts
// according to its context, so names from the traffic file cannot
// inject markup.
var page = template.Must(template.New("report").Parse(reportTemplate))

// WriteHTML writes rep as one self-contained HTML file: inline CSS, the
// charts as SVG images in data: URLs, no script and nothing fetched. It
// shows, for each run, its warnings first, its headline figures, its
// charts, and its tables of clients, tenants (the 50 most denied) and
// rules; several runs are compared first.
func WriteHTML(w io.Writer, rep Report) error {
	if err := checkRuns(rep.Runs); err != nil {
		return err
	}
	v := htmlPage{Title: rep.Title, Policy: rep.Policy, Traffic: rep.Traffic}
	if v.Title == "" {
		v.Title = "admit simulate"
	}
	charts := Charts(rep.Runs)
	perRun := map[string]bool{}
	names := fileLabels(rep.Runs)
	for _, n := range names {
		perRun["traffic"+n], perRun["backend"+n] = true, true
	}
	single := len(rep.Runs) == 1
	perRun["retries"] = single // one run's retries are its own chart

	var shared []Chart
	for _, c := range charts {
		if !perRun[c.Name] {
			shared = append(shared, c)
		}
	}
	var err error
	if v.Charts, err = htmlCharts(append(shared, rep.Charts...)); err != nil {
		return err
	}
	if len(rep.Runs) > 1 {
		v.Compare = compareTable(rep.Runs)
	}
	for i, run := range rep.Runs {
		hr, err := htmlRunOf(run, i, names[i], charts, single)
		if err != nil {
			return err
		}
		v.Runs = append(v.Runs, hr)
	}
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("simreport: writing the HTML report: %w", err)
	}
	return nil
}

// htmlPage is the template's view of a report.
type htmlPage struct {
	Title, Policy, Traffic string
	Compare                *htmlTable // nil for one run
	Charts                 []htmlChart
	Runs                   []htmlRun
}

// htmlRun is the template's view of one run.
type htmlRun struct {
	Label, Meta string
	Warnings    []sim.Warning
	Stats       []htmlStat
	Charts      []htmlChart
	Tables      []htmlTable
}

// htmlStat is a headline figure.
type htmlStat struct {
	Name, Value, Note string
	Warn              bool
}

// htmlChart is a chart as an image: its title (the alternative text) and
// its SVG in a data: URL, built here from bytes we drew.
type htmlChart struct {
	Title string
	Src   template.URL
}

// htmlTable is a table of names and numbers.
type htmlTable struct {
	Caption, Note string
	Head          []string
	Rows          []htmlRow
}

// htmlRow is a table's row; a Total row sums the rows above it.
type htmlRow struct {
	Cells []htmlCell
	Total bool
}

// htmlCell is a table's cell: numbers are right-aligned, and a Bad one
// (admissions beyond a bound) is marked.
type htmlCell struct {
	Text     string
	Num, Bad bool
}

// htmlCharts draws charts as SVG images.
func htmlCharts(charts []Chart) ([]htmlChart, error) {
	var out []htmlChart
	for _, c := range charts {
		b, err := c.SVG()
		if err != nil {
			return nil, err
		}
		src := "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(b)
		out = append(out, htmlChart{Title: c.Title, Src: template.URL(src)})
	}
	return out, nil
}

// htmlRunOf is the view of the i-th run, whose charts are among charts
// under their names with suffix (and "retries" for the single run of a
// report).
func htmlRunOf(run Run, i int, suffix string, charts []Chart, single bool) (htmlRun, error) {
	r := run.Result
	v := htmlRun{Label: run.label(i), Meta: runMeta(r), Warnings: r.Warnings}
	for _, s := range stats(r) {
		v.Stats = append(v.Stats, htmlStat{Name: s.name, Value: s.value, Note: s.note, Warn: s.warn})
	}
	var own []Chart
	for _, c := range charts {
		if c.Name == "traffic"+suffix || c.Name == "backend"+suffix || single && c.Name == "retries" {
			own = append(own, c)
		}
	}
	var err error
	if v.Charts, err = htmlCharts(own); err != nil {
		return v, err
	}
	for _, t := range tables(r, maxTenants) {
		v.Tables = append(v.Tables, htmlTableOf(t))
	}
	return v, nil
}

// runMeta is a line saying how the run was made.
func runMeta(r *sim.Result) string {
	s := fmt.Sprintf("%s simulated in steps of %s, seed %d", duration(r.Duration), duration(r.Step), r.Seed)
	if r.Algorithm != "" {
		s += ", every rate decided by " + r.Algorithm
	}
	return s
}

// htmlTableOf is the view of a tally table.
func htmlTableOf(t table) htmlTable {
	v := htmlTable{Caption: t.caption, Note: t.note, Head: []string{kindHead(t.kind)}}
	for _, c := range t.columns {
		v.Head = append(v.Head, c.head)
	}
	row := func(tally sim.Tally, total bool) htmlRow {
		cells := []htmlCell{{Text: tally.Name}}
		for _, c := range t.columns {
			cells = append(cells, htmlCell{Text: count(c.get(tally)), Num: true,
				Bad: c.csv == "over_bound" && tally.OverBound > 0})
		}
		return htmlRow{Cells: cells, Total: total}
	}
	for _, tally := range t.rows {
		v.Rows = append(v.Rows, row(tally, false))
	}
	if t.total != nil {
		tot := *t.total
		tot.Name = "total"
		v.Rows = append(v.Rows, row(tot, true))
	}
	return v
}

// kindHead is the first heading of a table of kind.
func kindHead(kind string) string {
	return map[string]string{"client": "Client", "tenant": "Tenant", "rule": "Rule"}[kind]
}

// compareTable is the runs side by side: their admissions, retries,
// fairness, latency, over- and under-admission and warnings.
func compareTable(runs []Run) *htmlTable {
	t := &htmlTable{
		Head: []string{"Run", "Admitted", "Denied", "Amplification", "Fairness", "Latency p99", "Over", "Under", "Over bound", "Warnings"}}
	for i, run := range runs {
		r := run.Result
		var over, under, overBound int64
		for _, rule := range r.Rules {
			over, under, overBound = over+rule.Over, under+rule.Under, overBound+rule.OverBound
		}
		fairness, p99 := "—", "—"
		if len(r.Tenants) > 0 {
			fairness = figure3(r.Fairness)
		}
		if hasBackend(r) {
			p99 = duration(r.LatencyP99)
		}
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{
			{Text: run.label(i)},
			{Text: count(r.Total.Admitted), Num: true},
			{Text: count(r.Total.Denied), Num: true},
			{Text: figure3(r.Amplification), Num: true},
			{Text: fairness, Num: true},
			{Text: p99, Num: true},
			{Text: count(over), Num: true},
			{Text: count(under), Num: true},
			{Text: count(overBound), Num: true, Bad: overBound > 0},
			{Text: strconv.Itoa(len(r.Warnings)), Num: true, Bad: len(r.Warnings) > 0},
		}})
	}
	return t
}
