package sim

import (
	"strings"
	"testing"
)

// A traffic file never panics its parser; one that parses passes check,
// and one that does not has an error of lines at their places.
func FuzzParseTraffic(f *testing.F) {
	f.Add([]byte(simulateDoc(f)))
	f.Add([]byte(head))
	for _, tc := range parseErrorCases {
		f.Add([]byte(tc.src))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := parseTraffic("f.yaml", data, testLogs)
		if err != nil {
			if tr != nil {
				t.Fatalf("a Traffic and an error: %v", err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.yaml:") && !strings.HasPrefix(line, "too many problems") {
					t.Fatalf("a line of the error without its place: %q", line)
				}
			}
			return
		}
		if err := tr.check(); err != nil {
			t.Fatalf("parsed, but check says: %v", err)
		}
		for _, c := range tr.Clients {
			if c.Arrival.Log != nil {
				if _, err := readReplay(c.Arrival.Log); err != nil {
					t.Fatalf("the test's log: %v", err)
				}
			}
		}
	})
}

// A log never panics its reader; one that reads gives requests in order
// from 0, with keys.
func FuzzReadReplay(f *testing.F) {
	f.Add("csv", "", []byte("timestamp,key\n2024-05-01T12:00:01.5Z,a\n1714564800,b\n"))
	f.Add("csv", "k", []byte("\"timestamp\",k\n1.5,\"a,b\"\n\n0.25,c\n"))
	f.Add("clf", "", []byte(`10.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a?b HTTP/1.0" 200 2326`+"\n"))
	f.Add("clf", "path", []byte(`h - - [10/Oct/2000:13:55:36 -0700] "GET /\"x HTTP/1.0" 200 - "ref" "agent"`+"\n"))
	f.Add("clf", "user", []byte("h i u [01/Jan/1970:00:00:00 +0000] \"\" 200 0\n"))
	f.Fuzz(func(t *testing.T, format, key string, data []byte) {
		const most = 1000
		lines, err := readReplayUpTo(&Replay{Format: format, Key: key, Data: data}, most)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "replay") {
				t.Fatalf("an error without the log's name: %v", err)
			}
			return
		}
		if len(lines) == 0 || len(lines) > most || lines[0].at != 0 {
			t.Fatalf("%d lines, the first at %v", len(lines), lines[0].at)
		}
		for i, l := range lines {
			if i > 0 && l.at < lines[i-1].at {
				t.Fatalf("line %d at %v, before %v", i, l.at, lines[i-1].at)
			}
			if l.key == "" || len(l.key) > maxText {
				t.Fatalf("line %d: key of %d bytes", i, len(l.key))
			}
		}
	})
}
