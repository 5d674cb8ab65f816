package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/readlimit"
	"github.com/admit-go/admit/policy"
)

// testLogs stands for the file system in tests: access.log and
// access.csv are there (relative to the traffic file's directory).
func testLogs(path string) ([]byte, error) {
	switch filepath.Base(path) {
	case "access.log":
		return []byte(`10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326` + "\n"), nil
	case "access.csv":
		return []byte("timestamp,key\n1,a\n"), nil
	case "huge.log":
		return nil, &readlimit.TooLargeError{Name: path, Limit: maxLogSize}
	}
	return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
}

// parse parses src as the traffic file t.yaml.
func parse(src string) (*Traffic, error) {
	return parseTraffic("t.yaml", []byte(src), testLogs)
}

// docExample matches the YAML example of docs/SIMULATE.md's section
// "The traffic file".
var docExample = regexp.MustCompile("(?s)\n## The traffic file\n.*?```yaml\n(.*?)```")

// simulateDoc returns the YAML example of docs/SIMULATE.md's section
// "The traffic file".
func simulateDoc(tb testing.TB) string {
	tb.Helper()
	doc, err := os.ReadFile("../docs/SIMULATE.md")
	if err != nil {
		tb.Fatal(err)
	}
	m := docExample.FindSubmatch(doc)
	if m == nil {
		tb.Fatal("docs/SIMULATE.md has no YAML example under \"## The traffic file\"")
	}
	return string(m[1])
}

// The example of the docs reads as it says.
func TestParseTrafficDocExample(t *testing.T) {
	tr, err := parseTraffic("docs/traffic.yaml", []byte(simulateDoc(t)), testLogs)
	if err != nil {
		t.Fatal(err)
	}
	log := tr.Clients[3].Arrival.Log
	want := &Traffic{
		Duration: time.Hour, Step: 10 * time.Second, Seed: 7, Headroom: 0.7, Instances: 3,
		Store: "shared", Balance: "round_robin",
		Backend: &Backend{Concurrency: 50, Service: 20 * time.Millisecond, Distribution: "exponential",
			Queue: 1000, Timeout: 2 * time.Second},
		Faults: []Fault{{Store: "redis", From: 10 * time.Minute, To: 15 * time.Minute}},
		Clients: []Client{{
			Name: "free", Count: 1000, Domain: "api",
			Descriptors: []policy.Descriptor{
				{Entries: []policy.Entry{{Key: "tenant", Value: "free-{i}"}}},
				{Entries: []policy.Entry{{Key: "tenant", Value: "free-{i}"}, {Key: "path", Value: "/search"}}},
			},
			Hits: 1, Stop: 50 * time.Minute,
			Arrival: Arrival{Process: "poisson", Rate: 2},
			Retry:   Retry{On429: "retry_after", Jitter: 0.5, Budget: 0.1, MaxAttempts: 5, Delay: 10 * time.Millisecond},
		}, {
			Name: "batch", Domain: "api", Descriptors: descs("tenant", "batch"),
			Arrival: Arrival{Process: "on_off", Rate: 100, On: 10 * time.Second, Off: 50 * time.Second},
			Retry:   Retry{On429: "immediate", Delay: 50 * time.Millisecond},
		}, {
			Name: "web", Domain: "api", Descriptors: descs("tenant", "web"),
			Arrival: Arrival{Process: "diurnal", Rate: 5, Peak: 50, Period: 24 * time.Hour},
		}, {
			Name: "replayed", Domain: "api", Descriptors: descs("remote_address", "{key}"),
			Arrival: Arrival{Process: "replay", Log: &Replay{Format: "clf", Key: "host", Name: "docs/access.log", Data: log.Data}},
		}},
	}
	if !reflect.DeepEqual(tr, want) {
		t.Errorf("got  %+v\nwant %+v", tr, want)
	}
	if lines, err := readReplay(log); err != nil || len(lines) != 1 || lines[0].key != "10.0.0.1" {
		t.Errorf("its log: %v, %v", lines, err)
	}
}

// descs returns one descriptor of one entry.
func descs(key, value string) []policy.Descriptor {
	return []policy.Descriptor{{Entries: []policy.Entry{{Key: key, Value: value}}}}
}

// head is the start of a valid file whose client is on lines 3 to 5;
// tests add to it.
const head = "duration: 1h\nclients:\n  - name: a\n    descriptors: [{k: v}]\n    arrival: {rate: 1}\n"

// Each problem is reported at its place, with its field and what is
// wrong, every one of them, in the order of the file.
func TestParseTrafficErrors(t *testing.T) {
	for _, tc := range parseErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := parse(tc.src)
			if err == nil {
				t.Fatalf("parsed: %+v", tr)
			}
			if tr != nil {
				t.Errorf("a Traffic with an error: %+v", tr)
			}
			want := strings.Join(tc.want, "\n")
			if err.Error() != want {
				t.Errorf("source:\n%s\ngot:\n%v\nwant:\n%s", tc.src, err, want)
			}
		})
	}
}

// Good files with the forms a field may take.
func TestParseTrafficForms(t *testing.T) {
	for _, tc := range []struct {
		src   string
		check func(*Traffic) bool
	}{
		{head + "    count: 1_000\n", func(t *Traffic) bool { return t.Clients[0].Count == 1000 }},
		{head + "    count: 1e3\n", func(t *Traffic) bool { return t.Clients[0].Count == 1000 }},
		{head + "    hits: 0x10\n", func(t *Traffic) bool { return t.Clients[0].Hits == 16 }},
		{"headroom: 0.25\n" + head, func(t *Traffic) bool { return t.Headroom == 0.25 }},
		{"headroom: '12.5 %'\n" + head, func(t *Traffic) bool { return t.Headroom == 0.125 }},
		{"seed: 18446744073709551615\n" + head, func(t *Traffic) bool { return t.Seed == 1<<64-1 }},
		{"store: LOCAL\nbalance: Round-Robin\nfaults: [{store: ' Redis', from: 1m, to: 2m}]\n" + head, func(t *Traffic) bool {
			return t.Store == "local" && t.Balance == "round_robin" && t.Faults[0].Store == "redis"
		}},
		{with("{rate: 1}", "{process: replay, format: CLF, log: access.log, key: Path}"), func(t *Traffic) bool {
			return t.Clients[0].Arrival.Log.Format == "clf" && t.Clients[0].Arrival.Log.Key == "path"
		}},
		{with("{rate: 1}", "{process: replay, format: csv, log: access.csv, key: Path, time: TS}"), func(t *Traffic) bool {
			return t.Clients[0].Arrival.Log.Key == "Path" && t.Clients[0].Arrival.Log.Time == "TS"
		}},
		{strings.Replace(head, "1h", "1d12h30m", 1), func(t *Traffic) bool { return t.Duration == 36*time.Hour+30*time.Minute }},
		{strings.Replace(head, "1h", "365d", 1), func(t *Traffic) bool { return t.Duration == year }},
		{strings.Replace(head, "1h", "+.5h", 1), func(t *Traffic) bool { return t.Duration == 30*time.Minute }},
		{head + "    start: 0\n    stop: -0s\n", func(t *Traffic) bool { return t.Clients[0].Start == 0 && t.Clients[0].Stop == 0 }},
		{strings.Replace(head, "rate: 1", "rate: 90/min", 1), func(t *Traffic) bool { return t.Clients[0].Arrival.Rate == 1.5 }},
		{strings.Replace(head, "rate: 1", "rate: 3600 / h", 1), func(t *Traffic) bool { return t.Clients[0].Arrival.Rate == 1 }},
		{strings.Replace(head, "rate: 1", "rate: 30/5m", 1), func(t *Traffic) bool { return t.Clients[0].Arrival.Rate == 0.1 }},
		{strings.Replace(head, "rate: 1", "rate: '2.5'", 1), func(t *Traffic) bool { return t.Clients[0].Arrival.Rate == 2.5 }},
		{strings.Replace(head, "rate: 1", "rate: 1e7", 1), func(t *Traffic) bool { return t.Clients[0].Arrival.Rate == 1e7 }},
		// A single descriptor may be written without its list; entries keep
		// the mapping's order, values as written.
		{strings.Replace(head, "[{k: v}]", "{z: 1.50, a: true, m: ''}", 1), func(t *Traffic) bool {
			return reflect.DeepEqual(t.Clients[0].Descriptors, []policy.Descriptor{{Entries: []policy.Entry{
				{Key: "z", Value: "1.50"}, {Key: "a", Value: "true"}, {Key: "m", Value: ""}}}})
		}},
		// Aliases are followed.
		{"duration: 1h\nclients:\n  - {name: a, descriptors: &d [{k: v}], arrival: &a {rate: 1}}\n  - {name: b, descriptors: *d, arrival: *a}\n",
			func(t *Traffic) bool {
				return len(t.Clients) == 2 && t.Clients[1].Descriptors[0].Entries[0].Value == "v" && t.Clients[1].Arrival.Rate == 1
			}},
		// A byte order mark, and CR LF.
		{"\ufeff" + strings.ReplaceAll(head, "\n", "\r\n"), func(t *Traffic) bool { return t.Duration == time.Hour }},
		// Tenants named like others but not theirs.
		{head + "    count: 2\n  - {name: a-2, descriptors: [{k: v}], arrival: {rate: 1}}\n  - {name: a-01, descriptors: [{k: v}], arrival: {rate: 1}}\n",
			func(t *Traffic) bool { return len(t.Clients) == 3 }},
	} {
		tr, err := parse(tc.src)
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		if !tc.check(tr) {
			t.Errorf("%q: %+v", tc.src, tr)
		}
	}
}

// A replayed log is read once however many clients replay it, relative
// to the traffic file's directory, through the size limit.
func TestParseTrafficLogFiles(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	const line = `10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326` + "\n"
	if err := os.WriteFile(filepath.Join(logs, "a.log"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	client := "  - {name: %s, descriptors: [{k: '{key}'}], arrival: {process: replay, format: clf, log: %s}}\n"
	src := "duration: 1h\nclients:\n" + fmt.Sprintf(client, "a", "logs/a.log") + fmt.Sprintf(client, "b", "./logs/../logs/a.log") +
		fmt.Sprintf(client, "c", filepath.Join(logs, "a.log"))
	name := filepath.Join(dir, "traffic.yaml")
	tr, err := ParseTraffic(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range tr.Clients {
		if l := c.Arrival.Log; l.Name != filepath.Join(logs, "a.log") || string(l.Data) != line || &l.Data[0] != &tr.Clients[0].Arrival.Log.Data[0] {
			t.Errorf("client %d: log %q, %q", i, l.Name, l.Data)
		}
	}
	_, err = ParseTraffic(name, []byte(strings.Replace(src, "logs/a.log", "logs/missing.log", 1)))
	col := strings.Index(src, "logs/a.log") - strings.Index(src, "  - ") + 1
	want := fmt.Sprintf("%s:3:%d: clients[0].arrival.log: open %s: no such file or directory", name, col, filepath.Join(logs, "missing.log"))
	if err == nil || err.Error() != want {
		t.Errorf("a missing log: %v\nwant %s", err, want)
	}
}

// A Traffic built in Go is checked alike, its problems without
// positions; a valid one passes.
func TestCheck(t *testing.T) {
	good := Traffic{Duration: time.Minute, Clients: []Client{{Name: "a", Descriptors: descs("k", "v"), Arrival: Arrival{Rate: 1}}}}
	if err := good.check(); err != nil {
		t.Fatalf("a valid Traffic: %v", err)
	}
	bad := good
	bad.Duration = -time.Second
	bad.Headroom = 2
	bad.Clients = []Client{{Name: "a", Arrival: Arrival{Process: "Poisson", Rate: 1}}, {Name: "a", Descriptors: descs("k", "v"), Arrival: Arrival{Rate: 1}, Retry: Retry{MaxAttempts: 3}}}
	bad.Backend = &Backend{}
	err := bad.check()
	want := `duration: -1s is negative
headroom: 2 is not a share in (0, 1] (0.7, or 70%)
clients[0].descriptors: required: at least one descriptor (tenant: acme)
clients[0].arrival.process: unknown value "Poisson" (want poisson, constant, on_off, diurnal or replay)
clients[1].name: "a" is the name of clients[0] too
clients[1].retry.max_attempts: only a client that retries (on_429: immediate or retry_after) has max_attempts
backend.concurrency: required: how many requests the backend serves at once
backend.service: required: the mean service time (20ms)`
	var ps problems
	if err == nil || err.Error() != want || !errors.As(err, &ps) || len(ps) != 8 || !errors.Is(err, admit.ErrInvalidConfig) {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
	var none *Traffic = &Traffic{}
	if err := none.check(); err == nil || err.Error() != "duration: required: how long the run lasts (1h, 7d)\nclients: required: at least one client" {
		t.Errorf("the zero Traffic: %v", err)
	}
}

// A file near the size limit, of tens of thousands of clients, parses;
// one of hundreds of problems lists the first 100.
func TestParseTrafficHuge(t *testing.T) {
	const line = "  - {name: c%d, count: 10, descriptors: [{tenant: 't{i}', path: /x}], arrival: {process: poisson, rate: 2/s}}\n"
	var b strings.Builder
	b.WriteString("duration: 1h\nclients:\n")
	n := 0
	for b.Len() < maxTrafficSize-200 {
		fmt.Fprintf(&b, line, n)
		n++
	}
	tr, err := parse(b.String())
	if err != nil || len(tr.Clients) != n || tr.Clients[n-1].Name != fmt.Sprintf("c%d", n-1) {
		t.Fatalf("%d clients: %v", n, err)
	}
	big := b.String() + strings.Repeat("#", maxTrafficSize)
	if _, err := parse(big); err == nil || err.Error() != fmt.Sprintf("t.yaml:1: file of %d bytes is larger than the maximum of %d", len(big), maxTrafficSize) {
		t.Errorf("a file too large: %v", err)
	}

	b.Reset()
	b.WriteString("duration: 1h\nclients:\n")
	for i := range 300 {
		fmt.Fprintf(&b, strings.Replace(line, "2/s", "-1", 1), i)
	}
	_, err = parse(b.String())
	lines := strings.Split(fmt.Sprint(err), "\n")
	col := strings.Index(fmt.Sprintf(line, 0), "2/s") + 1
	if len(lines) != maxProblems+1 || lines[0] != fmt.Sprintf("t.yaml:3:%d: clients[0].arrival.rate: -1 is negative", col) ||
		lines[maxProblems] != "too many problems; stopping here (200 more)" {
		t.Errorf("%d lines: %q ... %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

// Aliases that expand the file too much stop the reading at once.
func TestParseTrafficAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("duration: 1h\nclients:\n  - &c\n    name: a\n    arrival: {rate: 1}\n    descriptors: [&d {")
	for i := range 100 {
		fmt.Fprintf(&b, "k%d: v, ", i)
	}
	b.WriteString("}" + strings.Repeat(", *d", 1000) + "]\n")
	b.WriteString(strings.Repeat("  - *c\n", 1000))
	_, err := parse(b.String())
	// The first client's descriptors spend the budget (100,000 nodes) at
	// the 498th copy of the 100 entries (201 nodes each).
	want := "t.yaml:6:365: clients[0].descriptors[497]: aliases expand to more than 4 times the file's nodes: refusing it"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// Durations: every text the pattern admits parses, or is too long.
func TestParseDuration(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"0": 0, "-0": 0, "0s": 0, "0d": 0, " 90s ": 90 * time.Second, "1.h": time.Hour, ".5m": 30 * time.Second,
		"1µs": time.Microsecond, "1μs": time.Microsecond, "1us": time.Microsecond, "2d": 48 * time.Hour,
		"1d1ns": 24*time.Hour + 1, "1h1m1s1ms1us1ns": time.Hour + time.Minute + time.Second + time.Millisecond + time.Microsecond + 1,
		"106751d23h47m16.854775807s": 1<<63 - 1,
	} {
		if got, err := parseDuration(s); got != want || err != nil {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for s, want := range map[string]string{
		"":                           `want a duration (10s, 5m, 1h, 2d), got ""`,
		"5":                          `want a duration (10s, 5m, 1h, 2d), got "5"`,
		"1d1d":                       `want a duration (10s, 5m, 1h, 2d), got "1d1d"`,
		"h":                          `want a duration (10s, 5m, 1h, 2d), got "h"`,
		"1 h":                        `want a duration (10s, 5m, 1h, 2d), got "1 h"`,
		"1.5y":                       `want a duration (10s, 5m, 1h, 2d), got "1.5y": the units go up to d (days); a run lasts at most a year (365d)`,
		"106751d23h47m16.854775808s": `"106751d23h47m16.854775808s" is too long for a duration`,
		"-5m":                        `"-5m" is negative`,
	} {
		if _, err := parseDuration(s); err == nil || err.Error() != want {
			t.Errorf("parseDuration(%q): %v; want %s", s, err, want)
		}
	}
}
