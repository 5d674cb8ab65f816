// Package periodtext reads the period of a limit as admit.ParseLimit
// writes it ("s", "min", "500ms", "7d", "1d12h"): for the root package's
// ParseLimit and for policy files, which know more units and use this
// for the rest.
package periodtext

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

const day = 24 * time.Hour

var units = map[string]time.Duration{
	"ns": 1, "us": time.Microsecond, "µs": time.Microsecond, "ms": time.Millisecond,
	"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": day, "day": day, "days": day,
}

// Parse parses the period of a limit: a unit ("s", "sec", "second",
// "min", "minute", "h", "hour", "d", "day", plural forms, "ns", "us",
// "ms") or a Go duration with optional leading whole days ("500ms", "5m",
// "1h30m", "7d", "1d12h"). The period must be positive and fit a
// time.Duration. The error says what is wrong, quoting at most 64 bytes
// of s; a caller adds its own prefix.
func Parse(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("missing period")
	}
	if d, ok := units[s]; ok {
		return d, nil
	}
	// A leading whole number of days: "7d", "2d12h".
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 && strings.TrimLeft(s[:i], "0123456789") == "" {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n > int64(math.MaxInt64/day) {
			return 0, fmt.Errorf("period %q is too long", clip(s))
		}
		days, s = time.Duration(n)*day, s[i+1:]
		if s == "" {
			if days == 0 {
				return 0, fmt.Errorf("period must be positive")
			}
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("period %q: want a unit (s, min, h, d) or a duration (500ms, 5m, 1h30m)", clip(s))
	}
	if d <= 0 {
		return 0, fmt.Errorf("period %q must be positive", clip(s))
	}
	if d > math.MaxInt64-days {
		return 0, fmt.Errorf("period is too long")
	}
	return days + d, nil
}

// clip returns s cut to 64 bytes, with "..." if it was longer.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}
