package transport

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

var fuzzRef = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// FuzzRetryAfter: any value parses or is refused without panicking; a
// pause is never negative nor beyond maxSeconds; delta-seconds are exact.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", " 7 ", "-5", "1.5", "soon", "", "99999999999999999999999",
		"Sun, 01 Mar 2026 12:00:30 GMT", "Sunday, 01-Mar-26 12:00:30 GMT", "Sun Mar  1 12:00:30 2026",
		"Sun, 01 Mar 2026 11:00:00 GMT", "Mon, 99 Foo 9999 99:99:99 GMT", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseRetryAfter(v, fuzzRef)
		if !ok {
			if d != 0 {
				t.Fatalf("refused with %v", d)
			}
			return
		}
		if d < 0 || d > maxSeconds*time.Second {
			t.Fatalf("%q: pause %v", v, d)
		}
		if s := strings.TrimSpace(v); isDigits(s) && len(s) < 9 {
			n, _ := strconv.Atoi(s)
			if d != time.Duration(n)*time.Second {
				t.Fatalf("%q: %v", v, d)
			}
		}
	})
}

// FuzzRateLimit: the IETF fields' parser never panics, never pauses for
// less than 0 or more than maxSeconds, and pauses only for a policy with
// r=0.
func FuzzRateLimit(f *testing.F) {
	for _, s := range [][2]string{
		{`"default";r=0;t=30`, ``},
		{`"burst";r=5;t=1, "daily";r=0;t=3600`, `"burst";q=100;w=60, "daily";q=1000;w=86400`},
		{`"d";r=0`, `"d";q=100;w=60`},
		{`"d";r=0;t=-1`, ``},
		{`d;r=0;t=5;acme-x=?1;pk=:c2Rm:`, `d;q=1;qu="requests";w=1.5`},
		{`"a\"b\\c";r=0;t=2`, ``},
		{`("inner" list);r=0`, ``},
		{`"d";r=0;t=9999999999999999`, ``},
		{`"d";r=0;r=1;t=4`, ``},
		{`,,,`, `;;;`},
		{"\"d\";r=0;t=1\t,\t\"e\";r=0;t=2", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, rl, pol string) {
		d, ok := parseRateLimit([]string{rl}, []string{pol})
		if d < 0 || d > maxSeconds*time.Second || (!ok && d != 0) {
			t.Fatalf("%q %q: %v, %v", rl, pol, d, ok)
		}
		items, parsed := parseSFList([]string{rl})
		if !parsed && ok {
			t.Fatalf("a pause from a field that does not parse: %q", rl)
		}
		if ok {
			zero := false
			for _, it := range items {
				if r, rok := it.param("r"); rok && r == 0 {
					zero = true
				}
			}
			if !zero {
				t.Fatalf("%q: a pause without r=0", rl)
			}
		}
		// Splitting a field over two lines changes nothing.
		if i := strings.IndexByte(rl, ','); i >= 0 {
			d2, ok2 := parseRateLimit([]string{rl[:i], rl[i+1:]}, []string{pol})
			if d2 != d || ok2 != ok {
				t.Fatalf("%q split: %v %v, want %v %v", rl, d2, ok2, d, ok)
			}
		}
	})
}

// FuzzPauseOf: whole responses with garbage fields; the pause is within
// bounds, and only 429 and 503 honour Retry-After.
func FuzzPauseOf(f *testing.F) {
	f.Add(429, "30", "", "", "", "")
	f.Add(503, "Sun, 01 Mar 2026 12:00:30 GMT", "Sun, 01 Mar 2026 12:00:00 GMT", "", "", "")
	f.Add(200, "", "", `"d";r=0;t=3`, "0", "1772366490")
	f.Add(403, "", "garbage date", "", "0", "1e400")
	f.Add(301, "10", "", "", "0.0", "-3")
	f.Add(200, "", "", "", "0", "NaN")
	f.Add(200, "", "", "", "0", "999999999999999999999")
	f.Fuzz(func(t *testing.T, code int, retryAfter, date, rl, rem, reset string) {
		h := http.Header{}
		for k, v := range map[string]string{"Retry-After": retryAfter, "Date": date, "RateLimit": rl, "X-RateLimit-Remaining": rem, "X-RateLimit-Reset": reset} {
			if v != "" {
				h.Set(k, v)
			}
		}
		d, ok := pauseOf(h, code, fuzzRef)
		if d < 0 || d > maxSeconds*time.Second || (!ok && d != 0) {
			t.Fatalf("pause %v, %v", d, ok)
		}
		if code != 429 && code != 503 && rl == "" && rem == "" && ok {
			t.Fatalf("code %d paused by Retry-After alone", code)
		}
	})
}
