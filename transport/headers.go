package transport

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxSeconds bounds the seconds a header may ask for before the Transport
// caps them (Config.MaxPause): far beyond any cap, far below an overflow.
const maxSeconds = 1 << 32

// pauseOf returns how long a response with header h and status code asks
// its host to be left alone, read at instant now, and false if it does
// not ask. It reads, and takes the longest of:
//
//   - Retry-After, delta-seconds or an HTTP-date, on a 429 or 503 (on
//     other codes, such as redirections, it means something else);
//   - the IETF RateLimit field: a policy with r=0 (no quota left) for t
//     seconds, or, without t, for the window w of the RateLimit-Policy of
//     the same name;
//   - X-RateLimit-Remaining: 0 (or the older drafts' RateLimit-Remaining)
//     with X-RateLimit-Reset (RateLimit-Reset): delta-seconds, or Unix
//     seconds for values from 10^9 on (as GitHub sends).
//
// Dates and Unix times are taken relative to the response's Date field
// when it has a valid one, so that the two clocks' skew does not matter.
// Values that do not parse are ignored. The header's keys must be in
// canonical form (as net/http makes them).
func pauseOf(h http.Header, code int, now time.Time) (time.Duration, bool) {
	var (
		pause time.Duration
		found bool
	)
	take := func(d time.Duration, ok bool) {
		if ok {
			pause, found = max(pause, d), true
		}
	}
	ref := now
	if d := h["Date"]; len(d) > 0 {
		if t, err := http.ParseTime(d[0]); err == nil {
			ref = t
		}
	}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		if v := h["Retry-After"]; len(v) > 0 {
			take(parseRetryAfter(v[0], ref))
		}
	}
	if v := h["Ratelimit"]; len(v) > 0 {
		take(parseRateLimit(v, h["Ratelimit-Policy"]))
	}
	if rem := h["X-Ratelimit-Remaining"]; len(rem) > 0 {
		take(parseLegacy(rem[0], first(h["X-Ratelimit-Reset"]), ref))
	}
	if rem := h["Ratelimit-Remaining"]; len(rem) > 0 {
		take(parseLegacy(rem[0], first(h["Ratelimit-Reset"]), ref))
	}
	return pause, found
}

// mayPause reports whether a response with header h and status code has
// any of the fields pauseOf reads, so that most responses cost a few map
// lookups (the header keys are canonical, as net/http makes them).
func mayPause(h http.Header, code int) bool {
	if len(h) == 0 {
		return false
	}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		if _, ok := h["Retry-After"]; ok {
			return true
		}
	}
	_, rl := h["Ratelimit"]
	_, x := h["X-Ratelimit-Remaining"]
	_, d := h["Ratelimit-Remaining"]
	return rl || x || d
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// parseRetryAfter parses a Retry-After value: delta-seconds, or an
// HTTP-date taken relative to ref (a past date asks for no wait).
func parseRetryAfter(v string, ref time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return seconds(v), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return until(t, ref), true
}

// parseRateLimit returns the pause that the RateLimit field lines ask for
// (see pauseOf), policies being the RateLimit-Policy field lines.
func parseRateLimit(lines, policies []string) (time.Duration, bool) {
	items, ok := parseSFList(lines)
	if !ok {
		return 0, false
	}
	var (
		pause  time.Duration
		found  bool
		pols   []sfItem
		parsed bool // pols holds the policies
	)
	for _, it := range items {
		if r, ok := it.param("r"); !ok || r != 0 {
			continue
		}
		t, ok := it.param("t")
		if !ok {
			// No time given: the policy's window bounds it.
			if !parsed {
				pols, _ = parseSFList(policies)
				parsed = true
			}
			for _, p := range pols {
				if w, wok := p.param("w"); p.name == it.name && wok {
					t, ok = w, true
				}
			}
		}
		if ok && t >= 0 {
			pause, found = max(pause, time.Duration(min(t, maxSeconds))*time.Second), true
		}
	}
	return pause, found
}

// parseLegacy returns the pause that X-RateLimit-Remaining rem and
// X-RateLimit-Reset reset ask for: none unless rem is 0.
func parseLegacy(rem, reset string, ref time.Time) (time.Duration, bool) {
	if n, err := strconv.ParseInt(strings.TrimSpace(rem), 10, 64); err != nil || n != 0 {
		return 0, false
	}
	reset = strings.TrimSpace(reset)
	f, err := strconv.ParseFloat(reset, 64)
	if err != nil || reset == "" || !isNumeric(reset) || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, false
	}
	if f >= 1e9 {
		// Unix seconds.
		if f >= 1e15 {
			return time.Duration(maxSeconds) * time.Second, true
		}
		sec, frac := math.Modf(f)
		return until(time.Unix(int64(sec), int64(frac*1e9)), ref), true
	}
	return time.Duration(math.Ceil(f*1e3)) * time.Millisecond, true
}

// seconds returns the decimal digits s as seconds, saturating at
// maxSeconds.
func seconds(s string) time.Duration {
	var n int64
	for _, c := range []byte(s) {
		n = n*10 + int64(c-'0')
		if n >= maxSeconds {
			return time.Duration(maxSeconds) * time.Second
		}
	}
	return time.Duration(n) * time.Second
}

// until returns t - ref, 0 if t is past, saturating at maxSeconds.
func until(t, ref time.Time) time.Duration {
	d := t.Sub(ref)
	if d < 0 {
		return 0
	}
	return min(d, time.Duration(maxSeconds)*time.Second)
}

func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if !isDigit(c) {
			return false
		}
	}
	return s != ""
}

// isNumeric reports whether s is digits with at most one '.': no signs,
// exponents, hex or "Inf" (which ParseFloat accepts).
func isNumeric(s string) bool {
	dot := false
	for _, c := range []byte(s) {
		switch {
		case isDigit(c):
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return s != "" && s != "."
}
