package simreport

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// CompareChart draws the requests admitted per second by each run over
// time, one line per run, over the attempts sent in grey when every run
// sent the same (as runs of one traffic through different algorithms do
// when clients do not retry). It reports false for fewer than two runs,
// or runs without series.
func CompareChart(runs []Run, name string) (Chart, bool) {
	if len(runs) < 2 || checkRuns(runs) != nil {
		return Chart{}, false
	}
	r0 := runs[0].Result
	unit, xLabel := timeAxis(r0.Duration)
	p := panel("", xLabel, "admitted (requests/s)")
	f := figure{title: "Admitted requests per second, by run", rows: 1, cols: 1,
		legend: newLegend(), rowHeight: 330}
	top := 0.0
	if sent, same := sameAttempts(runs); same {
		xys := line(sent, r0.Step, unit)
		f.addLegend("sent (every run)", addArea(p, xys, light(grey, 0.6), light(grey, 0.3)))
		top = maxY(xys)
	}
	any := false
	for i, run := range runs {
		adm := sumSeries(run.Result, "admitted")
		any = any || adm != nil
		xys := line(adm, run.Result.Step, unit)
		f.addLegend(run.label(i), addLine(p, xys, colour(i), dashes[i%len(dashes)], 1.6))
		top = math.Max(top, maxY(xys))
	}
	if !any {
		return Chart{}, false
	}
	fitY(p, top)
	setX(p, r0.Duration, unit)
	f.panels = []*plot.Plot{p}
	return Chart{Name: name, Title: f.title, fig: f}, true
}

// sameAttempts is the attempts per second of the first run (admitted plus
// denied), and whether every run's total attempts are within 0.1% of it.
func sameAttempts(runs []Run) ([]float64, bool) {
	first := addPoints(sumSeries(runs[0].Result, "admitted"), sumSeries(runs[0].Result, "denied"))
	want := sumFinite(first)
	for _, run := range runs[1:] {
		got := sumFinite(sumSeries(run.Result, "admitted")) + sumFinite(sumSeries(run.Result, "denied"))
		if math.Abs(got-want) > 0.001*want {
			return nil, false
		}
	}
	return first, want > 0
}

// CompareBars draws, per run, the requests admitted (top panel) and the
// requests admitted over and under the ideal of the rules (bottom panel,
// summed over rules), with their values above the bars. It reports false
// for fewer than two runs.
func CompareBars(runs []Run, name string) (Chart, bool) {
	if len(runs) < 2 || checkRuns(runs) != nil {
		return Chart{}, false
	}
	names := make([]string, len(runs))
	admitted := make([]float64, len(runs))
	over, under := make([]float64, len(runs)), make([]float64, len(runs))
	for i, run := range runs {
		names[i] = shorten(run.label(i), 18)
		admitted[i] = float64(run.Result.Total.Admitted)
		for _, t := range run.Result.Rules {
			over[i] += float64(t.Over)
			under[i] += float64(t.Under)
		}
	}
	f := figure{title: "Runs compared: admitted, and over or under the ideal", rows: 2, cols: 1,
		legend: newLegend(), rowHeight: 200}
	top := panel("Admitted (requests)", "", "requests")
	addBars(top, admitted, 0, 0, 40, green)
	top.NominalX(names...)
	fitY(top, maxOf(admitted)*1.1)

	bottom := panel("Over and under the ideal, summed over rules (requests)", "", "requests")
	f.addLegend("over the ideal", addBars(bottom, over, 0, -11, 22, vermilion))
	f.addLegend("under the ideal", addBars(bottom, under, 0, 11, 22, blue))
	bottom.NominalX(names...)
	fitY(bottom, math.Max(maxOf(over), maxOf(under))*1.1)
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = -0.6, float64(len(runs))-0.4
		p.X.Tick.Label = textStyle(10, false)
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XCenter, draw.YTop
	}
	f.panels = []*plot.Plot{top, bottom}
	return Chart{Name: name, Title: f.title, fig: f}, true
}

// addBars adds bars of values from x = x0 on, shifted by offset and width
// wide, with each value written above its bar, and returns the bars for
// the legend.
func addBars(p *plot.Plot, values []float64, x0 float64, offset, width vg.Length, c color.Color) *plotter.BarChart {
	b := &plotter.BarChart{Values: values, Width: width, Color: c, XMin: x0, Offset: offset}
	p.Add(b)
	xys := make(plotter.XYs, len(values))
	labels := make([]string, len(values))
	for i, v := range values {
		xys[i] = plotter.XY{X: x0 + float64(i), Y: v}
		labels[i] = compact(v)
	}
	l := &plotter.Labels{XYs: xys, Labels: labels, TextStyle: make([]text.Style, len(values)),
		Offset: vg.Point{X: offset, Y: 3}}
	for i := range l.TextStyle {
		l.TextStyle[i] = textStyle(9, false)
		l.TextStyle[i].XAlign = draw.XCenter
	}
	p.Add(l)
	return b
}

// maxOf is the largest of vs (0 for none).
func maxOf(vs []float64) float64 {
	m := 0.0
	for _, v := range vs {
		m = math.Max(m, v)
	}
	return m
}
