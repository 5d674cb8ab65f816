package sim

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// at returns a replayLine.
func at(d time.Duration, key string) replayLine { return replayLine{at: d, key: key} }

func TestReadReplay(t *testing.T) {
	const sec = time.Second
	for _, tc := range []struct {
		name string
		log  Replay
		want []replayLine
	}{
		{"csv", Replay{Format: "csv", Data: []byte("\ufefftimestamp,key,extra\n" +
			"2024-05-01T12:00:01.5Z,a,x\n" +
			"\n" +
			"2024-05-01T12:00:00Z,b,y\r\n" +
			"   \n" +
			"2024-05-01T14:00:01.5+02:00,c,\"quoted, \"\"yes\"\"\"\n" +
			"\"2024-05-01T12:00:00.000000001Z\",\"d\n2\",z")},
			// Sorted stably: c keeps its place after a, at the same instant.
			[]replayLine{at(0, "b"), at(1, "d\n2"), at(1500*time.Millisecond, "a"), at(1500*time.Millisecond, "c")}},
		{"csv unix", Replay{Format: "csv", Time: "ts", Key: "WHO", Data: []byte("who,TS\nx,1136214245.25\ny, 1136214245 \nz,1136214246.0000000019\n")},
			[]replayLine{at(0, "y"), at(sec/4, "x"), at(sec+1, "z")}},
		{"clf", Replay{Format: "clf", Data: []byte(
			`10.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif?x=1 HTTP/1.0" 200 2326` + "\n" +
				`10.0.0.2 - - [10/Oct/2000:13:55:36 -0700] "GET /b HTTP/1.1" 404 -` + "\n\n" +
				`10.0.0.3 - - [10/Oct/2000:22:55:37 +0200] "POST /say \"hi\" HTTP/1.1" 201 0 "http://x/" "Mozilla/5.0 (X11)"`)},
			[]replayLine{at(0, "10.0.0.1"), at(0, "10.0.0.2"), at(sec, "10.0.0.3")}},
		{"clf user", Replay{Format: "clf", Key: "user", Data: []byte(
			`10.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326` + "\n" +
				`10.0.0.2 - - [10/Oct/2000:13:55:35 -0700] "GET / HTTP/1.0" 200 2326`)},
			[]replayLine{at(0, "-"), at(sec, "frank")}},
		{"clf path", Replay{Format: "clf", Key: "path", Data: []byte(
			`10.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif?x=1 HTTP/1.0" 200 2326`)},
			[]replayLine{at(0, "/a.gif")}},
	} {
		got, err := readReplay(&tc.log)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, %v\nwant %v", tc.name, got, err, tc.want)
		}
	}
}

// A key met again is the same string.
func TestReadReplayKeysOnce(t *testing.T) {
	got, err := readReplay(&Replay{Format: "csv", Data: []byte("timestamp,key\n1,abc\n2,abc\n")})
	if err != nil || len(got) != 2 || got[0].key != "abc" {
		t.Fatal(got, err)
	}
	if unsafe.StringData(got[0].key) != unsafe.StringData(got[1].key) {
		t.Errorf("the key is held twice")
	}
}

func TestReadReplayErrors(t *testing.T) {
	const clf = `10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326` + "\n"
	for _, tc := range []struct {
		log  Replay
		want string
	}{
		{Replay{Format: "csv", Name: "a.csv"}, "a.csv: empty log: want a header line naming the columns (timestamp, key)"},
		{Replay{Format: "csv", Name: "a.csv", Data: []byte("\n\n")}, "a.csv: empty log: want a header line naming the columns (timestamp, key)"},
		{Replay{Format: "csv", Name: "a.csv", Data: []byte("timestamp,key\n")}, "a.csv: no requests in the log"},
		{Replay{Format: "csv", Data: []byte("time,key\n1,a\n")}, `replay:1: no column "timestamp" in the header (its columns: time, key)`},
		{Replay{Format: "csv", Key: "host", Data: []byte("timestamp,key\n1,a\n")}, `replay:1: no column "host" in the header (its columns: timestamp, key)`},
		{Replay{Format: "csv", Data: []byte("timestamp,KEY,Key\n1,a,b\n")}, `replay:1: column "key" is in the header twice`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n1,a\n2\n")}, `replay:3: 1 columns, and the header has 2`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n1,a\n2,b,c\n")}, `replay:3: 3 columns, and the header has 2`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n1,a\n2,\n")}, `replay:3: column "key": empty key`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\nyesterday,a\n")}, `replay:2: column "timestamp": bad timestamp "yesterday" (want RFC 3339, 2006-01-02T15:04:05.5Z, or Unix seconds, 1136214245.5)`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n-1,a\n")}, `replay:2: column "timestamp": bad timestamp "-1" (want RFC 3339, 2006-01-02T15:04:05.5Z, or Unix seconds, 1136214245.5)`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n1.,a\n")}, `replay:2: column "timestamp": bad timestamp "1." (want RFC 3339, 2006-01-02T15:04:05.5Z, or Unix seconds, 1136214245.5)`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n9223372036,a\n")}, `replay:2: column "timestamp": time "9223372036" (Unix seconds) is after 2262`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n99999999999999999999,a\n")}, `replay:2: column "timestamp": time "99999999999999999999" (Unix seconds) is after 2262`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n1969-12-31T23:59:59Z,a\n")}, `replay:2: column "timestamp": time "1969-12-31T23:59:59Z" is not between 1970 and 2262`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n2263-01-01T00:00:00Z,a\n")}, `replay:2: column "timestamp": time "2263-01-01T00:00:00Z" is not between 1970 and 2262`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n1,a\n2,\"b\n")}, `replay:3: malformed CSV (column 6): extraneous or missing " in quoted-field`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n1,a\"b\n")}, `replay:2: malformed CSV (column 4): bare " in non-quoted-field`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n1," + strings.Repeat("k", 4097) + "\n")}, `replay:2: a key of 4097 bytes (the most is 4096): "` + strings.Repeat("k", 64) + `..."`},
		{Replay{Format: "csv", Data: []byte("timestamp,key\n1,a\n2,b\n3,c\n")}, `replay:4: more than 2 requests: a replayed log holds at most that many`},
		{Replay{Format: "clf", Name: "access.log", Data: []byte(clf + "10.0.0.1 - -\n")},
			`access.log:2: want host, ident and user (host ident user [date] "request" status bytes), in "10.0.0.1 - -"`},
		{Replay{Format: "clf", Data: []byte(clf + "10.0.0.1 - - 10/Oct/2000 \"GET /\" 200 1\n")},
			`replay:2: want a [date] (host ident user [date] "request" status bytes), in "10.0.0.1 - - 10/Oct/2000 \"GET /\" 200 1"`},
		{Replay{Format: "clf", Data: []byte(clf + "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] GET 200 1\n")},
			`replay:2: want a "request" (host ident user [date] "request" status bytes), in "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] GET 200 1"`},
		{Replay{Format: "clf", Data: []byte(clf + "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" ok 1\n")},
			`replay:2: want a status and a size (host ident user [date] "request" status bytes), in "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" ok 1"`},
		{Replay{Format: "clf", Data: []byte(clf + "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 200\n")},
			`replay:2: want a status and a size (host ident user [date] "request" status bytes), in "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 200"`},
		{Replay{Format: "clf", Data: []byte(clf + "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /\\\" 200 1\n")},
			`replay:2: want a "request" (host ident user [date] "request" status bytes), in "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /\\\" 200 1"`},
		{Replay{Format: "clf", Data: []byte("10.0.0.1 - - [10/Oct/2000:25:55:36 -0700] \"GET / HTTP/1.0\" 200 1\n")},
			`replay:1: bad date "10/Oct/2000:25:55:36 -0700" (want 10/Oct/2000:13:55:36 -0700)`},
		{Replay{Format: "clf", Data: []byte("10.0.0.1 - - [10/Oct/1960:13:55:36 -0700] \"GET / HTTP/1.0\" 200 1\n")},
			`replay:1: time "10/Oct/1960:13:55:36 -0700" is not between 1970 and 2262`},
		{Replay{Format: "clf", Key: "path", Data: []byte(clf + "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"-\" 400 0\n")},
			`replay:2: no path in the request "-"`},
		{Replay{Format: "clf", Data: []byte("\n \n")}, "replay: no requests in the log"},
		{Replay{Format: "clf", Data: []byte("\xff\xfe " + strings.Repeat("x", 100) + "\n")},
			`replay:1: want host, ident and user (host ident user [date] "request" status bytes), in "\xff\xfe ` + strings.Repeat("x", 61) + `..."`},
		{Replay{Format: "json", Name: "a.json"}, `a.json: unknown format "json" (want csv or clf)`},
	} {
		_, err := readReplayUpTo(&tc.log, 2)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s %q:\n got %v\nwant %s", tc.log.Format, tc.log.Data, err, tc.want)
		}
	}
}
