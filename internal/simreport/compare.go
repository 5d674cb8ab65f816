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
// time, one line per run, over the attempts the first run sent, in grey,
// when every run sent about as many (as runs of one traffic through
// different algorithms do when clients do not retry). It reports false for fewer than two runs,
// or runs without series.
func CompareChart(runs []Run, name string) (Chart, bool) {
	if len(runs) < 2 || checkRuns(runs) != nil {
		return Chart{}, false
	}
	r0 := runs[0].Result
	unit, xLabel := timeAxis(r0.Duration)
	p := panel("", xLabel, "requests/s")
	f := figure{title: "Admitted requests per second, by run", rows: 1, cols: 1,
		legend: newLegend(), rowHeight: 330}
	top := 0.0
	if sent, same := sameAttempts(runs); same {
		xys := line(sent, r0.Step, unit)
		f.addLegend("sent ("+runs[0].label(0)+")", addArea(p, xys, light(grey, 0.6), light(grey, 0.3)))
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
// denied), and whether every run's total attempts are within 1% of it,
// too close to tell apart on the chart.
func sameAttempts(runs []Run) ([]float64, bool) {
	first := addPoints(sumSeries(runs[0].Result, "admitted"), sumSeries(runs[0].Result, "denied"))
	want := sumFinite(first)
	for _, run := range runs[1:] {
		got := sumFinite(sumSeries(run.Result, "admitted")) + sumFinite(sumSeries(run.Result, "denied"))
		if math.Abs(got-want) > 0.01*want {
			return nil, false
		}
	}
	return first, want > 0
}

// CompareBars draws bars per run: the requests admitted and denied; the
// admitted per second in the busiest step, where a window's boundary
// burst shows; and, when a run has any, the requests admitted over and
// under the rules' ideal (summed over rules) and beyond their bounds.
// Each bar has its value above it. It reports false for fewer than two
// runs.
func CompareBars(runs []Run, name string) (Chart, bool) {
	if len(runs) < 2 || checkRuns(runs) != nil {
		return Chart{}, false
	}
	n := len(runs)
	names := make([]string, n)
	adm, den, peak := make([]float64, n), make([]float64, n), make([]float64, n)
	over, under, beyond := make([]float64, n), make([]float64, n), make([]float64, n)
	step := runs[0].Result.Step
	for i, run := range runs {
		r := run.Result
		names[i] = shorten(run.label(i), 18)
		adm[i], den[i] = float64(r.Total.Admitted), float64(r.Total.Denied)
		peak[i] = maxOf(sumSeries(r, "admitted"))
		for _, t := range r.Rules {
			over[i], under[i], beyond[i] = over[i]+float64(t.Over), under[i]+float64(t.Under), beyond[i]+float64(t.OverBound)
		}
	}
	f := figure{title: "Runs compared", cols: 1, legend: newLegend(), rowHeight: 170}
	f.addBarPanel("Admitted and denied (requests)", names, []barGroup{{"admitted", adm, green}, {"denied", den, vermilion}})
	f.addBarPanel("Admitted per second in the busiest step of "+duration(step), names, []barGroup{{"", peak, orange}})
	if maxOf(over)+maxOf(under)+maxOf(beyond) > 0 {
		f.addBarPanel("Over and under the rules' ideal, and beyond their bounds (requests)", names, []barGroup{
			{"over the ideal", over, purple}, {"under the ideal", under, sky}, {"beyond the bound", beyond, black}})
	} else {
		f.title += ": every run admitted exactly its rules' ideal"
	}
	return Chart{Name: name, Title: f.title, fig: f}, true
}

// barGroup is a series of bars, one per run, of one colour; named in the
// legend unless its name is "".
type barGroup struct {
	name   string
	values []float64
	color  color.Color
}

// addBarPanel adds a row to the figure: a panel of the groups' bars side
// by side above each of names.
func (f *figure) addBarPanel(title string, names []string, groups []barGroup) {
	p := panel(title, "", "")
	width := max(vg.Length(14), vg.Length(44/len(groups)))
	top := 0.0
	for k, g := range groups {
		offset := (vg.Length(k) - vg.Length(len(groups)-1)/2) * width
		b := addBars(p, g.values, 0, offset, width, g.color)
		if g.name != "" {
			f.addLegend(g.name, b)
		}
		top = math.Max(top, maxOf(g.values))
	}
	p.NominalX(names...)
	fitY(p, top*1.12)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.X.Tick.Label = textStyle(10, false)
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XCenter, draw.YTop
	f.panels = append(f.panels, p)
	f.rows++
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
