package simreport

import (
	"image/color"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The colours of the charts: Okabe and Ito's palette, which readers with
// the common colour blindnesses can tell apart, in the order series take
// them; grey is for "others".
var (
	blue      = rgb(0x0072B2)
	orange    = rgb(0xE69F00)
	green     = rgb(0x009E73)
	vermilion = rgb(0xD55E00)
	purple    = rgb(0xCC79A7)
	sky       = rgb(0x56B4E9)
	black     = rgb(0x000000)
	grey      = rgb(0x999999)
	palette   = []color.RGBA{blue, orange, green, vermilion, purple, sky, black}
)

// rgb is the opaque colour 0xRRGGBB.
func rgb(v uint32) color.RGBA {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// light is c made paler (mixed with white by share w in [0, 1]), for
// filled areas under the lines that bound them.
func light(c color.RGBA, w float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*w) }
	return color.RGBA{R: mix(c.R), G: mix(c.G), B: mix(c.B), A: 0xff}
}

// colour is the i-th colour of the palette, cycling.
func colour(i int) color.RGBA { return palette[i%len(palette)] }

// dashes are line dashes by index, so that lines of a comparison differ
// by more than colour.
var dashes = [][]vg.Length{nil, {6, 3}, {2, 2}, {8, 3, 2, 3}}

// panel is an empty plot in the report's style: its title, its axes'
// labels, a light horizontal grid, y from 0.
func panel(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle = textStyle(12, true)
	p.Title.TextStyle.XAlign, p.Title.TextStyle.YAlign = draw.XCenter, draw.YTop
	p.Title.Padding = 4
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle = textStyle(11, false)
		a.Label.TextStyle.XAlign, a.Label.TextStyle.YAlign = draw.XCenter, draw.YBottom
		a.Tick.Label = textStyle(10, false)
		a.Tick.Marker = compactTicks{}
	}
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XCenter, draw.YTop
	g := plotter.NewGrid()
	g.Vertical.Width = 0
	g.Horizontal.Color = rgb(0xE3E3E3)
	p.Add(g)
	p.Y.Min = 0
	return p
}

// fitY makes the panel's y axis run from 0 to a little above max, so the
// highest line does not touch the frame (1 when everything is 0).
func fitY(p *plot.Plot, max float64) {
	p.Y.Min = 0
	if !(max > 0) || math.IsInf(max, 0) {
		max = 1
	}
	p.Y.Max = max * 1.08
}

// compactTicks are plot.DefaultTicks with labels in a short form: 12k
// rather than 12000, 1.5M rather than 1.5e+06.
type compactTicks struct{}

// Ticks implements plot.Ticker.
func (compactTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = compact(ts[i].Value)
		}
	}
	return ts
}

// compact formats v briefly: 950, 1.25k, 12k, 12.3k, 3.2M; values
// under a thousand keep four significant digits.
func compact(v float64) string {
	a := math.Abs(v)
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= u.div {
			s := strconv.FormatFloat(v/u.div, 'f', -1, 64)
			if len(s) > 4 {
				s = strconv.FormatFloat(v/u.div, 'f', 1, 64)
			}
			return s + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// timeAxis is how a run of duration d is shown on an x axis: the divisor
// from seconds and the axis's label.
func timeAxis(d time.Duration) (perSecond float64, label string) {
	switch {
	case d >= 72*time.Hour:
		return 86400, "time (days)"
	case d >= 3*time.Hour:
		return 3600, "time (h)"
	case d >= 3*time.Minute:
		return 60, "time (min)"
	}
	return 1, "time (s)"
}

// maxPoints is the most points a chart's line is drawn with: longer
// series are averaged over groups of neighbouring buckets, which keeps
// SVG files small and lines legible.
const maxPoints = 600

// line turns the points of a series of buckets of width step into the
// points of a line at the buckets' centres, in units of unit seconds on
// x. NaN and infinite values are left out.
func line(points []float64, step time.Duration, unit float64) plotter.XYs {
	g := (len(points) + maxPoints - 1) / maxPoints
	if g < 1 {
		g = 1
	}
	xys := make(plotter.XYs, 0, len(points)/g+1)
	for i := 0; i < len(points); i += g {
		end := min(i+g, len(points))
		var sum float64
		n := 0
		for _, v := range points[i:end] {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				sum += v
				n++
			}
		}
		if n == 0 {
			continue
		}
		mid := (float64(i) + float64(end)) / 2 * step.Seconds() / unit
		xys = append(xys, plotter.XY{X: mid, Y: sum / float64(n)})
	}
	if len(xys) == 1 { // a point is not a line: span its bucket
		half := float64(g) * step.Seconds() / unit / 2
		xys = plotter.XYs{{X: xys[0].X - half, Y: xys[0].Y}, {X: xys[0].X + half, Y: xys[0].Y}}
	}
	return xys
}

// addLine adds a line of xys in colour c (dash pattern d, width w) to p
// and returns it for the legend. An empty xys adds nothing but still
// gives a thumbnail.
func addLine(p *plot.Plot, xys plotter.XYs, c color.Color, d []vg.Length, w vg.Length) *plotter.Line {
	l := &plotter.Line{XYs: xys, LineStyle: draw.LineStyle{Color: c, Width: w, Dashes: d}}
	if len(xys) > 0 {
		p.Add(l)
	}
	return l
}

// addArea adds the area under xys filled with fill and bounded by a line
// of colour edge, and returns it for the legend.
func addArea(p *plot.Plot, xys plotter.XYs, fill, edge color.Color) *plotter.Line {
	l := &plotter.Line{XYs: xys, FillColor: fill, LineStyle: draw.LineStyle{Color: edge, Width: 1}}
	if len(xys) > 0 {
		p.Add(l)
	}
	return l
}

// maxY is the largest y of the lines (0 if none).
func maxY(lines ...plotter.XYs) float64 {
	m := 0.0
	for _, l := range lines {
		for _, p := range l {
			m = math.Max(m, p.Y)
		}
	}
	return m
}
