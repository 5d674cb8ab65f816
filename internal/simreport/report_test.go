package simreport

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/admit-go/admit/sim"
)

// walk calls f on every node of the tree under n.
func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

// attr is n's attribute named key ("" if it has none).
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func TestWriteHTML(t *testing.T) {
	rep := fixtureReport()
	rep.Title = "Tiers <b>bold</b>"
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	src := b.String()
	if strings.Contains(src, "<script") || strings.Contains(src, "<b>bold") {
		t.Fatal("a name from the input came out as markup")
	}
	holds(t, "the report", src, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "Tiers &lt;b&gt;bold&lt;/b&gt;")
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var text strings.Builder
	walk(doc, func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			count[n.Data]++
			checkSelfContained(t, n)
		case html.TextNode:
			text.WriteString(n.Data)
		}
	})
	if count["script"] != 0 || count["link"] != 0 || count["style"] != 1 {
		t.Errorf("elements %v: want no script or link, one style", count)
	}
	// compare, compare_bars, retries, retry_storm, and traffic and backend per run.
	if count["img"] != 4+2*3 {
		t.Errorf("%d images, want 10", count["img"])
	}
	// the comparison; per run: clients, tenants, rules.
	if count["table"] != 1+3*3 {
		t.Errorf("%d tables, want 10", count["table"])
	}
	holds(t, "the report's text", text.String(), evilName, "Runs compared", "sliding_window",
		"the 50 most denied of 60 tenants", "2 warnings", "the limits sum to 160 req/s", "Little's law",
		"error 1.03%", "per_client/gold", "policy.yaml")
}

// checkSelfContained fails if n refers to anything outside the file:
// every image is an SVG in a data: URL, and nothing else has a source.
func checkSelfContained(t *testing.T, n *html.Node) {
	t.Helper()
	for _, key := range []string{"href", "src", "srcset", "action"} {
		v := attr(n, key)
		if v == "" {
			continue
		}
		const prefix = "data:image/svg+xml;base64,"
		if n.Data != "img" || key != "src" || !strings.HasPrefix(v, prefix) {
			t.Errorf("<%s %s=%.40q> refers outside the file", n.Data, key, v)
			continue
		}
		svg, err := base64.StdEncoding.DecodeString(v[len(prefix):])
		if err != nil {
			t.Errorf("an image's data: %v", err)
			continue
		}
		checkSVG(t, attr(n, "alt"), svg)
	}
}

func TestWriteHTMLOneRun(t *testing.T) {
	r := fixture("", 1, false)
	r.Warnings = nil
	var b bytes.Buffer
	if err := WriteHTML(&b, Report{Runs: []Run{{Result: r}}}); err != nil {
		t.Fatal(err)
	}
	src := b.String()
	holds(t, "the report", src, "<title>admit simulate</title>", "No warnings.", "run 1", "· 1 run<")
	if strings.Contains(src, "Runs compared") {
		t.Error("one run is compared")
	}
}

func TestBadRuns(t *testing.T) {
	var b bytes.Buffer
	for name, runs := range map[string][]Run{"none": nil, "nil result": {{Label: "x"}}} {
		for what, err := range map[string]error{
			"html":    WriteHTML(&b, Report{Runs: runs}),
			"json":    WriteJSON(&b, runs),
			"series":  WriteSeriesCSV(&b, runs),
			"tallies": WriteTalliesCSV(&b, runs),
		} {
			if err == nil {
				t.Errorf("%s of %s: no error", what, name)
			}
		}
	}
	if err := Summary(&b, nil); err == nil {
		t.Error("Summary of nil: no error")
	}
	if _, err := WriteCSV(t.TempDir()+"/a\x00b", Runs(fixture("", 1, false))); err == nil {
		t.Error("WriteCSV into a bad directory: no error")
	}
}

func TestWriteJSON(t *testing.T) {
	r := fixture("gcra", 1, false)
	r.Series[0].Points[3] = math.NaN()
	r.Fairness = math.Inf(1)
	var b bytes.Buffer
	if err := WriteJSON(&b, []Run{{Label: "a <label>", Result: r}}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Label                                  string
			Algorithm                              string
			Duration, Step, LatencyP50, LatencyP99 float64
			Fairness                               *float64
			Clients                                []sim.Tally
			Series                                 []struct {
				Name, Client string
				Points       []*float64
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v in\n%.500s", err, b.String())
	}
	run := doc.Runs[0]
	if run.Label != "a <label>" || run.Algorithm != "gcra" || run.Duration != 600 || run.Step != 2 ||
		run.LatencyP50 != 0.0123 || run.LatencyP99 != 0.087 || run.Fairness != nil {
		t.Errorf("run %+v", run)
	}
	if len(run.Clients) != 3 || run.Clients[2].Name != evilName || run.Clients[0] != r.Clients[0] {
		t.Errorf("clients %+v", run.Clients)
	}
	s := run.Series[0]
	if s.Points[3] != nil || *s.Points[4] != r.Series[0].Points[4] || len(s.Points) != 300 {
		t.Errorf("series %s of %s: points 3, 4 = %v, %v", s.Name, s.Client, s.Points[3], s.Points[4])
	}
	if !strings.Contains(b.String(), `"Name": "<script>`) {
		t.Error("names are escaped for HTML in JSON")
	}
}

// readCSV has write write runs as CSV and reads its records back.
func readCSV(t *testing.T, write func(io.Writer, []Run) error, runs []Run) [][]string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, runs); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestSeriesCSVRoundTrip(t *testing.T) {
	runs := Runs(fixture("gcra", 1, false), fixture("fixed_window", 1.3, false))
	runs[0].Result.Series[1].Points[7] = math.NaN()
	recs := readCSV(t, WriteSeriesCSV, runs)
	if strings.Join(recs[0], ",") != "run,time_seconds,series,client,value" {
		t.Fatalf("header %q", recs[0])
	}
	want := 1
	for _, run := range runs {
		for _, s := range run.Result.Series {
			want += len(s.Points)
		}
	}
	if len(recs) != want {
		t.Fatalf("%d records, want %d", len(recs), want)
	}
	got := map[string][]string{}
	for _, rec := range recs[1:] {
		key := rec[0] + "|" + rec[2] + "|" + rec[3]
		got[key] = append(got[key], rec[4])
		if ts, _ := strconv.ParseFloat(rec[1], 64); ts != float64(len(got[key])-1)*2 {
			t.Fatalf("record %q: time %s, want %d", rec, rec[1], (len(got[key])-1)*2)
		}
	}
	for i, run := range runs {
		for _, s := range run.Result.Series {
			vals := got[run.label(i)+"|"+s.Name+"|"+s.Client]
			for k, p := range s.Points {
				v, err := strconv.ParseFloat(vals[k], 64)
				if (math.IsNaN(p) && vals[k] != "") || (!math.IsNaN(p) && (err != nil || v != p)) {
					t.Fatalf("%s %s %s [%d]: %q, want %v", run.label(i), s.Name, s.Client, k, vals[k], p)
				}
			}
		}
	}
}

func TestTalliesCSVRoundTrip(t *testing.T) {
	runs := Runs(fixture("gcra", 1, false))
	dir := t.TempDir()
	paths, err := WriteCSV(dir, runs)
	if err != nil || len(paths) != 2 {
		t.Fatal(paths, err)
	}
	recs := readCSV(t, WriteTalliesCSV, runs)
	r := runs[0].Result
	if len(recs) != 1+1+len(r.Clients)+len(r.Tenants)+len(r.Rules) || len(recs[0]) != 15 {
		t.Fatalf("%d records of %d fields", len(recs), len(recs[0]))
	}
	byName := map[string][]string{}
	for _, rec := range recs[1:] {
		byName[rec[1]+"|"+rec[2]] = rec
	}
	check := func(kind string, tally sim.Tally) {
		rec := byName[kind+"|"+tally.Name]
		if rec == nil {
			t.Fatalf("no %s %q", kind, tally.Name)
		}
		for i, c := range allColumns {
			if rec[3+i] != strconv.FormatInt(c.get(tally), 10) {
				t.Errorf("%s %q %s = %s, want %d", kind, tally.Name, c.csv, rec[3+i], c.get(tally))
			}
		}
	}
	check("total", r.Total)
	check("client", r.Clients[2]) // evilName, with quotes and brackets
	check("tenant", r.Tenants[59])
	check("rule", r.Rules[1])
}

func TestSummary(t *testing.T) {
	r := fixture("gcra", 1, false)
	r.Clients[1].Name = "bob\x1b[2J\tevil"
	var b bytes.Buffer
	if err := Summary(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\t\r") {
		t.Fatalf("control characters in the summary:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != "10m0s simulated in steps of 2s, seed 1, every rate decided by gcra" {
		t.Errorf("first line %q", lines[0])
	}
	// Each table's lines are as wide as its heading, numbers right-aligned.
	for _, head := range []string{"  CLIENT ", "  TENANT ", "  RULE "} {
		i := indexPrefix(lines, head)
		if i < 0 {
			t.Fatalf("no table %q in\n%s", head, out)
		}
		width := len([]rune(lines[i]))
		for _, l := range lines[i+1:] {
			if l == "" || strings.HasPrefix(l, "  (") {
				break
			}
			if len([]rune(l)) != width {
				t.Errorf("line %q is %d runes wide, its heading %d", l, len([]rune(l)), width)
			}
		}
	}
	holds(t, "the summary", out,
		`  "bob\x1b[2J\tevil"`,
		"  total                         152,070   207,035    89,820  116,908   38,968     89,372     448",
		"  per_client/gold   207,035    89,820  87,681  89,830     5     15     90,000          12",
		"  (the 10 most denied of 60 tenants)",
		"  Retry amplification      2.32× !      attempts per successful request",
		"WARNINGS (2)\n  ! capacity: the limits sum")
}

// holds fails t for each of wants that text does not hold; what names
// the text.
func holds(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s does not hold %q:\n%.3000s", what, want, text)
		}
	}
}

// indexPrefix is the index of the first of lines starting with prefix,
// or -1.
func indexPrefix(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	runs := Runs(fixture("", 1, false))
	for what, err := range map[string]error{
		"summary": Summary(failWriter{}, runs[0].Result),
		"html":    WriteHTML(failWriter{}, Report{Runs: runs}),
		"json":    WriteJSON(failWriter{}, runs),
		"series":  WriteSeriesCSV(failWriter{}, runs),
		"tallies": WriteTalliesCSV(failWriter{}, runs),
	} {
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("%s: %v, want the writer's error", what, err)
		}
	}
}

// fakeClock is a wall clock that moves when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestProgressTerminal(t *testing.T) {
	var b bytes.Buffer
	clock := &fakeClock{t: time.Unix(1000, 0)}
	p := NewProgress(&b, true)
	p.now = clock.now
	total := time.Hour
	for i := range 100 { // 100 updates over 1 s of wall time: 10 draws
		p.Update(time.Duration(i)*total/100, total)
		clock.t = clock.t.Add(10 * time.Millisecond)
	}
	p.Update(total, total)
	p.Update(total, total) // after the end: nothing
	p.Finish()
	out := b.String()
	if n := strings.Count(out, "\r"); n != 11 {
		t.Errorf("%d draws, want 11 (every 100 ms, and the end):\n%q", n, out)
	}
	if !strings.HasSuffix(out, "\r[##############################] 100%  1h0m0s of 1h0m0s simulated\n") {
		t.Errorf("the end is %q", out[max(0, len(out)-90):])
	}
	if !strings.Contains(out, "\r[###...........................]  10%  6m0s of 1h0m0s simulated") {
		t.Errorf("no draw at 10%%:\n%q", out)
	}
}

func TestProgressNotTerminal(t *testing.T) {
	var b bytes.Buffer
	clock := &fakeClock{t: time.Unix(1000, 0)}
	p := NewProgress(&b, false)
	p.now = clock.now
	p.Update(0, time.Minute)
	clock.t = clock.t.Add(9 * time.Second)
	p.Update(time.Minute, time.Minute)
	if b.Len() != 0 {
		t.Fatalf("a short run wrote %q", b.String())
	}

	p = NewProgress(&b, false)
	p.now = clock.now
	for i := range 25 { // 25 s of wall time: a line every 10 s, and the end
		p.Update(time.Duration(i)*time.Minute, time.Hour)
		clock.t = clock.t.Add(time.Second)
	}
	p.Update(time.Hour, time.Hour)
	want := "simulated 10m0s of 1h0m0s (16%) in 10s\nsimulated 20m0s of 1h0m0s (33%) in 20s\n" +
		"simulated 1h0m0s of 1h0m0s (100%) in 25s\n"
	if b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

func TestProgressBadInput(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, true)
	p.Update(time.Second, 0)
	p.Update(-time.Second, -time.Second)
	if b.Len() != 0 {
		t.Errorf("wrote %q for no total", b.String())
	}
	p.Update(2*time.Hour, time.Hour) // past the end: the end
	if !strings.HasSuffix(b.String(), "100%  1h0m0s of 1h0m0s simulated\n") {
		t.Errorf("wrote %q", b.String())
	}
}
