package sim

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds on the memory of a replayed log.
const (
	// maxReplayLines is the most requests a replayed log may hold: their
	// times and keys take 24 bytes each, so at most 240 MB, besides the
	// keys' bytes (at most the log's, 256 MiB).
	maxReplayLines = 10_000_000
	// maxSharedKeys is the most distinct keys held once each, however
	// many lines have them (a map of at most some 50 MB); the keys met
	// after these are held once per line.
	maxSharedKeys = 1 << 20
	// maxReplayPrealloc is the most requests room is made for before the
	// log is read (a log of blank lines reserves no more).
	maxReplayPrealloc = 1 << 20
)

// replayLine is one request of a replayed log: its time, from the
// earliest line's, and its key ({key} in the client's descriptors).
type replayLine struct {
	at  time.Duration
	key string
}

// readReplay returns the requests of a replayed log, in the order of
// their times: a log out of order (logs merged from several servers) is
// sorted, stably, so lines of one instant keep the log's order. Times
// count from the earliest line's. Blank lines are skipped; a line that
// does not parse is an error "name:line: what is wrong", quoting the
// part at fault (at most 64 bytes of it); so are a log without a request
// and one of more than 10,000,000 requests.
//
// A CSV log (RFC 4180: fields may be quoted) starts with a header line
// naming its columns; r.Time names the timestamp's column (default
// "timestamp") and r.Key the key's ("key"), matched exactly, else
// ignoring case. A timestamp is RFC 3339 (2006-01-02T15:04:05.999Z07:00,
// the fraction optional) or Unix seconds with an optional fraction
// (1136214245.25). A line in the common log format is
//
//	host ident user [02/Jan/2006:15:04:05 -0700] "request" status bytes
//
// with anything after (the combined log format's referer and user
// agent); the key is its host (r.Key "" or "host"), its user ("user",
// "-" for none) or the path of its request without the query ("path").
// Timestamps must fall between 1970 and 2262.
func readReplay(r *Replay) ([]replayLine, error) { return readReplayUpTo(r, maxReplayLines) }

// readReplayUpTo is readReplay taking at most most requests.
func readReplayUpTo(r *Replay, most int) ([]replayLine, error) {
	name := orDefault(r.Name, "replay")
	rd := &replayReader{name: name, most: most, keys: map[string]string{}}
	rd.lines = make([]replayLine, 0, min(bytes.Count(r.Data, []byte{'\n'})+1, most, maxReplayPrealloc))
	var err error
	switch r.Format {
	case "csv":
		err = rd.csv(r.Data, orDefault(r.Time, "timestamp"), orDefault(r.Key, "key"))
	case "clf":
		err = rd.clf(r.Data, orDefault(r.Key, "host"))
	default:
		err = fmt.Errorf("%s: unknown format %s (want csv or clf)", name, quote(r.Format))
	}
	if err != nil {
		return nil, err
	}
	if len(rd.lines) == 0 {
		return nil, fmt.Errorf("%s: no requests in the log", name)
	}
	lines := rd.lines
	if !slices.IsSortedFunc(lines, byTime) {
		slices.SortStableFunc(lines, byTime)
	}
	first := lines[0].at
	for i := range lines {
		lines[i].at -= first
	}
	return lines, nil
}

func byTime(a, b replayLine) int { return cmp.Compare(a.at, b.at) }

// replayReader collects the requests of a log: their times in
// nanoseconds since 1970 until readReplay makes them relative.
type replayReader struct {
	name  string
	most  int
	lines []replayLine
	keys  map[string]string // each distinct key once
	// The last date of the common log format parsed, and its time.
	date []byte
	when int64
}

// failf returns the error of line line.
func (rd *replayReader) failf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", rd.name, line, fmt.Sprintf(format, args...))
}

// addLine adds a request of line line to rd.
func addLine[K string | []byte](rd *replayReader, line int, at int64, key K) error {
	if len(rd.lines) == rd.most {
		return rd.failf(line, "more than %d requests: a replayed log holds at most that many", rd.most)
	}
	if len(key) > maxText {
		return rd.failf(line, "a key of %d bytes (the most is %d): %s", len(key), maxText, quote(string(key)))
	}
	k, ok := rd.keys[string(key)]
	if !ok {
		k = string(key)
		if len(rd.keys) < maxSharedKeys {
			rd.keys[k] = k
		}
	}
	rd.lines = append(rd.lines, replayLine{at: time.Duration(at), key: k})
	return nil
}

// csv reads a CSV log whose columns timeCol and keyCol hold the requests'
// times and keys.
func (rd *replayReader) csv(data []byte, timeCol, keyCol string) error {
	cr := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	switch {
	case err == io.EOF:
		return fmt.Errorf("%s: empty log: want a header line naming the columns (%s, %s)", rd.name, timeCol, keyCol)
	case err != nil:
		return rd.csvError(err)
	}
	head = slices.Clone(head)
	ti, err := rd.column(head, timeCol)
	if err != nil {
		return err
	}
	ki, err := rd.column(head, keyCol)
	if err != nil {
		return err
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return rd.csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a blank line
		}
		if len(rec) != len(head) {
			return rd.failf(line, "%d columns, and the header has %d", len(rec), len(head))
		}
		at, err := parseStamp(rec[ti])
		if err != nil {
			return rd.failf(line, "column %s: %v", quote(head[ti]), err)
		}
		if strings.TrimSpace(rec[ki]) == "" {
			return rd.failf(line, "column %s: empty key", quote(head[ki]))
		}
		if err := addLine(rd, line, at, rec[ki]); err != nil {
			return err
		}
	}
}

// csvError returns the error of a CSV log that does not parse.
func (rd *replayReader) csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return rd.failf(pe.Line, "malformed CSV (column %d): %v", pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %v", rd.name, err)
}

// column returns the index of the column of a CSV header named name:
// exactly, else ignoring case.
func (rd *replayReader) column(head []string, name string) (int, error) {
	for _, fold := range []bool{false, true} {
		at := -1
		for i, h := range head {
			h = strings.TrimSpace(h)
			if h != name && !(fold && strings.EqualFold(h, name)) {
				continue
			}
			if at >= 0 {
				return 0, rd.failf(1, "column %s is in the header twice", quote(name))
			}
			at = i
		}
		if at >= 0 {
			return at, nil
		}
	}
	return 0, rd.failf(1, "no column %s in the header (its columns: %s)", quote(name), clip(strings.Join(head, ", ")))
}

// parseStamp returns the time of a CSV log's timestamp: RFC 3339, or
// Unix seconds with an optional fraction; in nanoseconds since 1970.
func parseStamp(s string) (int64, error) {
	s = strings.TrimSpace(s)
	whole, frac, dot := strings.Cut(s, ".")
	if whole != "" && digits(whole) && (!dot || frac != "" && digits(frac)) {
		sec, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || sec > (1<<63-1)/1_000_000_000-1 {
			return 0, fmt.Errorf("time %s (Unix seconds) is after 2262", quote(s))
		}
		ns := int64(0)
		for i := range 9 {
			ns *= 10
			if i < len(frac) {
				ns += int64(frac[i] - '0')
			}
		}
		return sec*1e9 + ns, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, fmt.Errorf("bad timestamp %s (want RFC 3339, 2006-01-02T15:04:05.5Z, or Unix seconds, 1136214245.5)", quote(s))
	}
	return since1970(t, s)
}

// since1970 returns t in nanoseconds since 1970, if it is from 1970 to
// 2262 (s is how t was written).
func since1970(t time.Time, s string) (int64, error) {
	if t.Before(time.Unix(0, 0)) || t.After(time.Unix(0, 1<<63-1)) {
		return 0, fmt.Errorf("time %s is not between 1970 and 2262", quote(s))
	}
	return t.UnixNano(), nil
}

// digits reports whether s is ASCII digits only.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// clf reads a log in the common log format whose key is its host, user
// or path.
func (rd *replayReader) clf(data []byte, key string) error {
	for line := 1; len(data) > 0; line++ {
		text := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		f, problem := splitCLF(text)
		if problem != "" {
			return rd.failf(line, "%s, in %s", problem, quote(string(text)))
		}
		at, err := rd.clfDate(f.date)
		if err != nil {
			return rd.failf(line, "%v", err)
		}
		k := f.host
		switch key {
		case "user":
			k = f.user
		case "path":
			if k = f.path; len(k) == 0 {
				return rd.failf(line, "no path in the request %s", quote(string(f.request)))
			}
		}
		if err := addLine(rd, line, at, k); err != nil {
			return err
		}
	}
	return nil
}

// clfDate returns the time of a date of the common log format, in
// nanoseconds since 1970. Lines of one second share a date: the last
// one's time is kept.
func (rd *replayReader) clfDate(date []byte) (int64, error) {
	if rd.date != nil && bytes.Equal(date, rd.date) {
		return rd.when, nil
	}
	t, err := time.Parse("02/Jan/2006:15:04:05 -0700", string(date))
	if err != nil {
		return 0, fmt.Errorf("bad date %s (want 10/Oct/2000:13:55:36 -0700)", quote(string(date)))
	}
	when, err := since1970(t, string(date))
	if err != nil {
		return 0, err
	}
	rd.date, rd.when = append(rd.date[:0], date...), when
	return when, nil
}

// clfLine is the parts of a line of the common log format a replay
// reads.
type clfLine struct {
	host, user, date, request, path []byte
}

// splitCLF splits a line of the common log format, or says what is
// wrong with it.
func splitCLF(text []byte) (clfLine, string) {
	var f clfLine
	var ok bool
	want := func(what string) (clfLine, string) {
		return clfLine{}, "want " + what + " (host ident user [date] \"request\" status bytes)"
	}
	fields := bytes.SplitN(text, []byte{' '}, 4)
	if len(fields) < 4 || len(fields[0]) == 0 || len(fields[1]) == 0 || len(fields[2]) == 0 {
		return want("host, ident and user")
	}
	f.host, f.user, text = fields[0], fields[2], fields[3]
	if f.date, text, ok = enclosed(text, '[', ']'); !ok {
		return want("a [date]")
	}
	if f.request, text, ok = enclosed(bytes.TrimLeft(text, " "), '"', '"'); !ok {
		return want("a \"request\"")
	}
	rest := bytes.Fields(text)
	if len(rest) < 2 || len(rest[0]) != 3 || !digits(string(rest[0])) || !(digits(string(rest[1])) || string(rest[1]) == "-") {
		return want("a status and a size")
	}
	if parts := bytes.Fields(f.request); len(parts) >= 2 {
		f.path, _, _ = bytes.Cut(parts[1], []byte{'?'})
	}
	return f, ""
}

// enclosed returns what text holds from its start, open, to close (a
// close after a backslash does not count), and what follows.
func enclosed(text []byte, open, close byte) (inside, rest []byte, ok bool) {
	if len(text) == 0 || text[0] != open {
		return nil, nil, false
	}
	for i := 1; i < len(text); i++ {
		switch text[i] {
		case '\\':
			i++
		case close:
			return text[1:i], text[i+1:], true
		}
	}
	return nil, nil, false
}
