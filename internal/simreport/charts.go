package simreport

import (
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/admit-go/admit/sim"
)

// topKept is how many clients the traffic chart shows each in a panel of
// its own; the rest share one panel, "others".
const topKept = 5

// TrafficChart draws r's admitted and denied requests per second over
// time, a panel per client (the five largest by volume, and the others
// together), denied stacked on admitted so that the top of the stack is
// what the client sent. It reports false when r has no such series. name
// is the chart's file name; label, if not "", is added to its title.
func TrafficChart(r *sim.Result, name, label string) (Chart, bool) {
	cs := topClients(r, topKept)
	if len(cs) == 0 {
		return Chart{}, false
	}
	// A column of wide panels for up to three clients, two columns above.
	cols, rowHeight := 2, vg.Length(190)
	if len(cs) <= 3 {
		cols, rowHeight = 1, 170
	}
	rows := (len(cs) + cols - 1) / cols
	unit, xLabel := timeAxis(r.Duration)
	f := figure{
		title: titled("Admitted and denied requests per client", label),
		rows:  rows, cols: cols, panels: make([]*plot.Plot, rows*cols),
		legend: newLegend(), rowHeight: rowHeight,
	}
	for i, c := range cs {
		xl, yl := "", ""
		if i/cols == rows-1 || i+cols >= len(cs) {
			xl = xLabel
		}
		if i%cols == 0 {
			yl = "requests/s"
		}
		title := shorten(c.name, 80/cols-4)
		if n := tenantsOf(r, c.name); n > 1 {
			title += fmt.Sprintf(" (%s tenants)", count(int64(n)))
		}
		p := panel(title, xl, yl)
		sent := line(addPoints(append([]float64(nil), c.admitted...), c.denied), r.Step, unit)
		ok := line(c.admitted, r.Step, unit)
		den := addArea(p, sent, light(vermilion, 0.55), vermilion)
		adm := addArea(p, ok, light(green, 0.45), green)
		fitY(p, maxY(sent, ok))
		setX(p, r.Duration, unit)
		f.panels[i] = p
		if i == 0 {
			f.addLegend("denied", den)
			f.addLegend("admitted", adm)
		}
	}
	return Chart{Name: name, Title: f.title, fig: f}, true
}

// BackendChart draws the backend's queue (requests waiting, requests in
// service) and its latency (p50, p99 per bucket) over time, a panel each
// when r has their series. It reports false when r has none of them (a
// run without a Backend).
func BackendChart(r *sim.Result, name, label string) (Chart, bool) {
	unit, xLabel := timeAxis(r.Duration)
	series := func(name string) plotter.XYs {
		if pts := seriesOf(r, name, ""); pts != nil {
			return line(pts, r.Step, unit)
		}
		return nil
	}
	queue, inFlight := series("queue"), series("in_flight")
	p50, p99 := series("latency_p50"), series("latency_p99")
	latLabel := "latency (ms)"
	if maxY(p50, p99) >= 2 {
		latLabel = "latency (s)"
	} else {
		scaled(p50, 1000)
		scaled(p99, 1000)
	}
	f := figure{title: titled("Backend: queue and latency", label), cols: 1, legend: newLegend(), rowHeight: 210}
	f.addPanel("Requests in the backend (mean per bucket)", "requests", r.Duration, unit, []namedLine{
		{"in service", inFlight, orange}, {"waiting in queue", queue, blue}})
	f.addPanel("Latency, admission to response", latLabel, r.Duration, unit, []namedLine{
		{"latency p99", p99, vermilion}, {"latency p50", p50, green}})
	if f.rows == 0 {
		return Chart{}, false
	}
	f.panels[f.rows-1].X.Label.Text = xLabel
	return Chart{Name: name, Title: f.title, fig: f}, true
}

// namedLine is a line of a panel, and its name in the legend.
type namedLine struct {
	name  string
	xys   plotter.XYs // nil: the run has no such series
	color color.Color
}

// addPanel adds a row to the figure, a panel of the lines that exist,
// each named in the legend, over the whole run; or nothing if none
// exists.
func (f *figure) addPanel(title, yLabel string, d time.Duration, unit float64, lines []namedLine) {
	if !hasLines(lines) {
		return
	}
	p := panel(title, "", yLabel)
	top := 0.0
	for _, l := range lines {
		if l.xys != nil {
			f.addLegend(l.name, addLine(p, l.xys, l.color, nil, 1.5))
			top = math.Max(top, maxY(l.xys))
		}
	}
	fitY(p, top)
	setX(p, d, unit)
	f.panels = append(f.panels, p)
	f.rows++
}

// hasLines reports whether any of lines exists.
func hasLines(lines []namedLine) bool {
	for _, l := range lines {
		if l.xys != nil {
			return true
		}
	}
	return false
}

// RetryChart draws the attempts per second of each run, one panel above
// the other, each on its own scale with its peak in its title (a herd
// of retries a hundred times the arrivals would flatten the others on a
// shared one): first attempts and retries stacked (their top
// is every attempt sent), and the attempts admitted as a line. With two
// runs of one traffic, with and without jitter, it shows the retry storm
// and what jitter does to it. It reports false for no runs or a run
// without series.
func RetryChart(runs []Run, name string) (Chart, bool) {
	if checkRuns(runs) != nil {
		return Chart{}, false
	}
	type lines struct{ first, all, admitted plotter.XYs }
	ls := make([]lines, len(runs))
	tops := make([]float64, len(runs))
	for i, run := range runs {
		r := run.Result
		unit, _ := timeAxis(r.Duration)
		adm, den, ret := sumSeries(r, "admitted"), sumSeries(r, "denied"), sumSeries(r, "retries")
		if adm == nil && den == nil {
			return Chart{}, false
		}
		all := addPoints(append([]float64(nil), adm...), den)
		first := make([]float64, len(all))
		for j := range all {
			first[j] = math.Max(0, all[j]-at(ret, j))
		}
		ls[i] = lines{line(first, r.Step, unit), line(all, r.Step, unit), line(adm, r.Step, unit)}
		tops[i] = maxY(ls[i].all, ls[i].admitted)
	}
	f := figure{
		title: retryTitle(len(runs)),
		rows:  len(runs), cols: 1, legend: newLegend(), rowHeight: 190,
	}
	for i, run := range runs {
		r := run.Result
		unit, xLabel := timeAxis(r.Duration)
		if i < len(runs)-1 {
			xLabel = ""
		}
		title := fmt.Sprintf("%s attempts per success, peak %s/s", figure3(r.Amplification), figure3(tops[i]))
		if len(runs) > 1 {
			title = run.label(i) + ": " + title
		}
		p := panel(shorten(title, 70), xLabel, "attempts/s")
		ret := addArea(p, ls[i].all, light(orange, 0.5), orange)
		first := addArea(p, ls[i].first, light(blue, 0.6), blue)
		adm := addLine(p, ls[i].admitted, black, []vg.Length{4, 2}, 1.5)
		fitY(p, tops[i])
		setX(p, r.Duration, unit)
		f.panels = append(f.panels, p)
		if i == 0 {
			f.addLegend("retries", ret)
			f.addLegend("first attempts", first)
			f.addLegend("admitted", adm)
		}
	}
	return Chart{Name: name, Title: f.title, fig: f}, true
}

// retryTitle is the retry chart's title for n runs.
func retryTitle(n int) string {
	if n == 1 {
		return "Attempts per second: first attempts and retries"
	}
	return "Retry storms: attempts per second (each panel on its own scale)"
}

// tenantsOf is how many of r's tenants are the client's: named name-i.
func tenantsOf(r *sim.Result, name string) int {
	n := 0
	for _, t := range r.Tenants {
		if i, ok := strings.CutPrefix(t.Name, name+"-"); ok && i != "" && strings.Trim(i, "0123456789") == "" {
			n++
		}
	}
	return n
}

// at is points[i], or 0 past its end or when not finite.
func at(points []float64, i int) float64 {
	if i >= len(points) || math.IsNaN(points[i]) || math.IsInf(points[i], 0) {
		return 0
	}
	return points[i]
}

// scaled multiplies the y of xys by k, in place, and returns xys.
func scaled(xys plotter.XYs, k float64) plotter.XYs {
	for i := range xys {
		xys[i].Y *= k
	}
	return xys
}

// setX makes the panel's x axis the whole run, from 0 to d.
func setX(p *plot.Plot, d time.Duration, unit float64) {
	p.X.Min = 0
	if m := d.Seconds() / unit; m > 0 {
		p.X.Max = m
	}
}

// titled is title, followed by label when there is one.
func titled(title, label string) string {
	if label == "" {
		return title
	}
	return title + " — " + shorten(label, 40)
}
