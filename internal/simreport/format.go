package simreport

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// figure3 formats v with three significant digits (trailing zeros
// dropped), without an exponent below a billion: 0.123, 1.23, 12.3, 2,
// 123, 1234. NaN and infinities are
// "—".
func figure3(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e9:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	digits := 2 - int(math.Floor(math.Log10(a)))
	s := strconv.FormatFloat(v, 'f', min(digits, 9), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// count formats n with its thousands grouped by commas: 3,600,000.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

// duration formats d with three significant digits in its natural unit:
// 850µs, 12.3ms, 1.25s, 1h0m0s for whole runs.
func duration(d time.Duration) string {
	switch a := d.Abs(); {
	case d == 0:
		return "0"
	case a >= time.Minute:
		return d.Round(time.Second).String()
	case a >= time.Second:
		return figure3(d.Seconds()) + "s"
	case a >= time.Millisecond:
		return figure3(float64(d)/1e6) + "ms"
	case a >= time.Microsecond:
		return figure3(float64(d)/1e3) + "µs"
	}
	return d.String()
}

// percent formats the share v (0.0123) as a percentage (1.23%).
func percent(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return figure3(v*100) + "%"
}

// secondsDuration is s seconds as a Duration (0 when not finite).
func secondsDuration(s float64) time.Duration {
	if math.IsNaN(s) || math.IsInf(s, 0) || math.Abs(s) > 1e9 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
