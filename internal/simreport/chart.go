package simreport

import (
	"bytes"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart is one picture of a report: a figure of one or more panels under
// a title, with its legend in a column on the right, where it cannot hide
// the data. PNG and SVG draw it; a Chart is immutable and may be drawn
// any number of times, from any goroutine.
type Chart struct {
	// Name is the chart's file name without its extension ("traffic",
	// "backend", ...), unique within a report.
	Name string
	// Title says what the chart shows; it is drawn on the chart and is
	// the HTML report's alternative text.
	Title string

	fig figure
}

// dpi is the resolution of the PNG charts: 96 dots per inch makes a
// 720×440 pt chart 960×587 pixels.
const dpi = 96

// PNG draws the chart as a PNG image.
func (c Chart) PNG() ([]byte, error) { return c.render("png") }

// SVG draws the chart as an SVG document. Its text names Liberation
// Sans, the font the layout was measured with, and falls back to the
// metric-compatible Arial and Helvetica.
func (c Chart) SVG() ([]byte, error) {
	b, err := c.render("svg")
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b, []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")), nil
}

// render draws the chart in format ("png" or "svg"). The plotting library
// panics on some inputs it finds impossible; render turns that into an
// error naming the chart.
func (c Chart) render(format string) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("simreport: drawing chart %q: %v", c.Name, r)
		}
	}()
	w, h := c.fig.size()
	var cw vg.CanvasWriterTo
	switch format {
	case "png":
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))}
	case "svg":
		cw = vgsvg.New(w, h)
	default:
		return nil, fmt.Errorf("simreport: unknown chart format %q", format)
	}
	c.fig.draw(draw.New(cw))
	var buf bytes.Buffer
	if _, err := cw.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("simreport: writing chart %q: %w", c.Name, err)
	}
	return buf.Bytes(), nil
}

// WriteCharts writes each chart into dir as Name.png and Name.svg,
// creating dir if needed, and returns the paths written.
func WriteCharts(dir string, charts []Chart) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simreport: %w", err)
	}
	var paths []string
	for _, c := range charts {
		for _, f := range []struct {
			ext  string
			draw func() ([]byte, error)
		}{{".png", c.PNG}, {".svg", c.SVG}} {
			b, err := f.draw()
			if err != nil {
				return paths, err
			}
			p := filepath.Join(dir, c.Name+f.ext)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return paths, fmt.Errorf("simreport: %w", err)
			}
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// figure is the layout of a chart: a title on top, panels in a grid of
// rows×cols (row by row; nil leaves a cell empty) with aligned axes, and
// a legend in a column on the right.
type figure struct {
	title      string
	rows, cols int
	panels     []*plot.Plot
	legend     plot.Legend
	entries    int // in legend
	// width is the figure's width (0: 720 pt); rowHeight the height of
	// one row of panels (0: 220 pt).
	width, rowHeight vg.Length
}

// size is the figure's width and height.
func (f figure) size() (w, h vg.Length) {
	w, rh := f.width, f.rowHeight
	if w == 0 {
		w = 720
	}
	if rh == 0 {
		rh = 220
	}
	return w, rh*vg.Length(f.rows) + 36
}

// draw lays the figure out on c.
func (f figure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, 8, -8, 8, -6)
	if f.title != "" {
		sty := textStyle(14, true)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y}, f.title)
		c.Max.Y -= sty.Height(f.title) + 8
	}
	if f.entries > 0 {
		lw := f.legend.Rectangle(c).Size().X + 16
		lc := draw.Crop(c, c.Size().X-lw+12, 0, 0, -4)
		f.legend.Draw(lc)
		c.Max.X -= lw
	}
	grid := make([][]*plot.Plot, f.rows)
	for r := range grid {
		grid[r] = f.panels[r*f.cols : (r+1)*f.cols]
	}
	tiles := draw.Tiles{Rows: f.rows, Cols: f.cols, PadX: 18, PadY: 10}
	canvases := plot.Align(grid, tiles, c)
	for r, row := range grid {
		for col, p := range row {
			if p != nil {
				p.Draw(canvases[r][col])
			}
		}
	}
}

// addLegend adds an entry to the figure's legend.
func (f *figure) addLegend(name string, thumbs ...plot.Thumbnailer) {
	f.legend.Add(shorten(name, 28), thumbs...)
	f.entries++
}

// newLegend is an empty legend in the report's style, drawn from the top
// left of its column.
func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle = textStyle(11, false)
	l.Top, l.Left = true, true
	l.Padding = 4
	l.ThumbnailWidth = 22
	return l
}

// textStyle is the report's text in size points, bold or not.
func textStyle(size vg.Length, bold bool) text.Style {
	f := font.Font{Typeface: "Liberation", Variant: "Sans"}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return text.Style{
		Color:   color.Black,
		Font:    font.From(f, size),
		XAlign:  draw.XLeft,
		YAlign:  draw.YBottom,
		Handler: plot.DefaultTextHandler,
	}
}

// shorten cuts a name for a chart's legend or axis to at most n runes,
// marking the cut with an ellipsis.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
