package simreport

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/sim"
)

// checkPNG decodes b as a PNG and checks that it is a picture: at least
// 600×300 pixels, with many colours (lines, text and fills, not a blank
// canvas).
func checkPNG(t *testing.T, name string, b []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", name, err)
	}
	bounds := img.Bounds()
	if bounds.Dx() < 600 || bounds.Dy() < 300 || bounds.Dx() > 2000 || bounds.Dy() > 2000 {
		t.Errorf("%s: %d×%d pixels, want between 600×300 and 2000×2000", name, bounds.Dx(), bounds.Dy())
	}
	if n := colours(img); n < 20 {
		t.Errorf("%s: %d distinct colours, want a picture", name, n)
	}
}

// colours counts the distinct colours of img, up to 1000, in every third
// row and column.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y && len(seen) < 1000; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

// checkSVG parses b as XML and returns its text.
func checkSVG(t *testing.T, name string, b []byte) string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed SVG: %v", name, err)
		}
		if c, ok := tok.(xml.CharData); ok {
			text.Write(c)
		}
	}
	return text.String()
}

func TestChartsWriteAndDecode(t *testing.T) {
	rep := fixtureReport()
	charts := append(Charts(rep.Runs), rep.Charts...)
	charts = append(charts, Charts(rep.Runs[:1])...)
	want := []string{"compare", "compare_bars", "retries", "traffic-gcra", "backend-gcra",
		"traffic-sliding_window", "backend-sliding_window", "traffic-fixed_window", "backend-fixed_window",
		"retry_storm", "traffic", "backend", "retries"}
	var got []string
	for _, c := range charts {
		got = append(got, c.Name)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("charts %v, want %v", got, want)
	}
	for _, c := range charts {
		b, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		text := checkSVG(t, c.Name, b)
		if strings.HasPrefix(c.Name, "traffic") && !strings.Contains(text, evilName) {
			t.Errorf("%s: the client %q is not among its text", c.Name, evilName)
		}
	}
	// PNGs are slow to draw under the race detector (a second each): a few.
	some := []Chart{charts[1], charts[3], charts[9]}
	dir := t.TempDir()
	paths, err := WriteCharts(dir, some)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2*len(some) {
		t.Fatalf("wrote %d files, want %d", len(paths), 2*len(some))
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Ext(p) == ".png" {
			checkPNG(t, p, b)
		} else {
			checkSVG(t, p, b)
		}
	}
}

func TestTrafficChartOthers(t *testing.T) {
	r := &sim.Result{Duration: time.Hour, Step: 12 * time.Second}
	for i := range 12 {
		pts := make([]float64, 300)
		for k := range pts {
			pts[k] = float64(i+1) * (1 + math.Sin(float64(k)/20))
		}
		r.Series = append(r.Series, sim.Series{Name: "admitted", Client: fmt.Sprintf("client-%02d", i), Points: pts})
	}
	c, ok := TrafficChart(r, "traffic", "")
	if !ok {
		t.Fatal("no traffic chart")
	}
	b, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	text := checkSVG(t, "traffic", b)
	holds(t, "the chart", text, "client-11", "client-07", "others (7 clients)", "time (min)")
	if strings.Contains(text, "client-06") {
		t.Error("client-06, the seventh largest, has a panel of its own")
	}
}

// TestChartsOddResults: results with nothing to draw, or with odd
// values, give no chart or a chart, never a panic or an error.
func TestChartsOddResults(t *testing.T) {
	nan := math.NaN()
	cases := map[string]*sim.Result{
		"empty":        {},
		"no series":    {Duration: time.Minute, Step: time.Second, Total: sim.Tally{Requests: 1}},
		"zero step":    {Duration: time.Minute, Series: []sim.Series{{Name: "admitted", Points: []float64{1, 2}}}},
		"all zero":     {Duration: time.Minute, Step: time.Second, Series: []sim.Series{{Name: "denied", Client: "a", Points: make([]float64, 60)}, {Name: "queue", Points: make([]float64, 60)}}},
		"nan and inf":  {Duration: time.Minute, Step: time.Second, Series: []sim.Series{{Name: "admitted", Client: "a", Points: []float64{nan, 1, math.Inf(1), 3}}, {Name: "latency_p99", Points: []float64{nan, nan}}}},
		"one point":    {Duration: time.Second, Step: time.Second, Series: []sim.Series{{Name: "admitted", Client: "a", Points: []float64{5}}, {Name: "retries", Client: "a", Points: []float64{1}}}},
		"long series":  {Duration: 100000 * time.Second, Step: time.Second, Series: []sim.Series{{Name: "admitted", Client: "a", Points: make([]float64, 100000)}}},
		"huge numbers": {Duration: time.Minute, Step: time.Second, Series: []sim.Series{{Name: "admitted", Client: "a", Points: []float64{1e300, 1e300}}}},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			runs := []Run{{Result: r}, {Label: "again", Result: r}}
			for i, c := range append(Charts(runs), Charts(runs[:1])...) {
				draw := c.SVG
				if i == 0 && (name == "one point" || name == "huge numbers") { // PNGs are slow under -race
					draw = c.PNG
				}
				if _, err := draw(); err != nil {
					t.Errorf("%s: %v", c.Name, err)
				}
			}
		})
	}
}

func TestLongSeriesAreThinned(t *testing.T) {
	pts := make([]float64, 100000)
	for i := range pts {
		pts[i] = float64(i % 2) // averages to 0.5
	}
	xys := line(pts, time.Second, 1)
	if len(xys) > maxPoints {
		t.Fatalf("%d points drawn, want at most %d", len(xys), maxPoints)
	}
	for _, p := range xys {
		if math.Abs(p.Y-0.5) > 0.01 {
			t.Fatalf("point %v, want the mean 0.5", p)
		}
	}
}

func TestCompact(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 950: "950", 1000: "1k", 1250: "1.25k", 12000: "12k",
		12345: "12.3k", 1.5e6: "1.5M", 2.5e9: "2.5G", 0.25: "0.25", -2000: "-2k"} {
		if got := compact(v); got != want {
			t.Errorf("compact(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestFormats(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.87: "0.87", 2: "2", 2.345: "2.35", 163.2: "163",
		1234.6: "1235", 0.001234: "0.00123", math.NaN(): "—"} {
		if got := figure3(v); got != want {
			t.Errorf("figure3(%v) = %q, want %q", v, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 3600000: "3,600,000", -12345: "-12,345"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0", 850 * time.Microsecond: "850µs",
		12300 * time.Microsecond: "12.3ms", 1250 * time.Millisecond: "1.25s", time.Hour: "1h0m0s", 42: "42ns"} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
}
