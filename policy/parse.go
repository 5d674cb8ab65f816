package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/calendar"
	"github.com/admit-go/admit/internal/periodtext"
)

// maxExact is the largest quota or concurrency cap the Redis scripts count
// exactly (Lua numbers are doubles).
const maxExact = 1 << 53

const day = 24 * time.Hour

// ParseRate parses a rate limit. It reads what admit.ParseLimit reads
//
//	RATE "/" PERIOD ["burst" BURST]      100/s, 5000/1h burst 50, 1/500ms
//	RATE "per" PERIOD ["burst" BURST]    100 per 5m, 20 per s burst=40
//	"unlimited"
//
// and more: a PERIOD may be a count and a unit apart or together ("100 per
// 5 minutes", "10/2 hours", "7/week", "3/2w"), units may be written in
// full, singular or plural (second, minutes, hr, days, week), and RATE and
// BURST may group digits with "_" ("10_000/day"). A month or a year is not
// a fixed duration, so it is refused here: use a calendar quota (a
// rule's quota, see Quota) or a number of days. The result is validated (see
// admit.Limit: no burst with a zero rate, a capacity of at most 36 years);
// errors wrap admit.ErrInvalidLimit.
func ParseRate(s string) (admit.Limit, error) {
	if l, err := admit.ParseLimit(s); err == nil {
		return l, nil
	}
	l, err := parseRate(s)
	if err == nil {
		err = l.Validate()
		if err != nil {
			err = fmt.Errorf("%s", limitReason(err))
		}
	}
	if err != nil {
		return admit.Limit{}, fmt.Errorf("%w %q: %v", admit.ErrInvalidLimit, truncate(s), err)
	}
	return l, nil
}

// limitReason returns the reason of an admit.Limit validation error,
// without the limit's fields.
func limitReason(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "}: "); i >= 0 {
		return msg[i+3:]
	}
	return msg
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func parseRate(s string) (admit.Limit, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "":
		return admit.Limit{}, fmt.Errorf("empty")
	case "unlimited", "inf", "infinite":
		return admit.Unlimited, nil
	}
	var rateStr, rest string
	if i := strings.IndexByte(s, '/'); i >= 0 {
		rateStr, rest = s[:i], s[i+1:]
	} else if i := strings.Index(s, " per "); i >= 0 {
		rateStr, rest = s[:i], s[i+len(" per "):]
	} else {
		return admit.Limit{}, fmt.Errorf(`want RATE/PERIOD, as in "100/s" or "100 per 5 minutes"`)
	}
	rate, err := parseCount(strings.TrimSpace(rateStr), "rate")
	if err != nil {
		return admit.Limit{}, err
	}
	periodStr, burstStr, hasBurst := strings.Cut(rest, "burst")
	periodStr = strings.TrimSpace(periodStr)
	l := admit.Limit{Rate: rate, Burst: rate}
	if l.Period, err = parseDuration(periodStr); err != nil {
		return admit.Limit{}, err
	}
	if hasBurst {
		burstStr = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(burstStr), "="))
		if burstStr == "" {
			return admit.Limit{}, fmt.Errorf("burst without a value")
		}
		if l.Burst, err = parseCount(burstStr, "burst"); err != nil {
			return admit.Limit{}, err
		}
	}
	return l, nil
}

// parseCount parses a whole number >= 0, with optional "_" between
// digits.
func parseCount(s, what string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("missing %s", what)
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("%s %q is negative", what, truncate(s))
	}
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '_' && i > 0 && i < len(s)-1 && s[i-1] != '_':
		default:
			return 0, fmt.Errorf("%s %q is not a whole number", what, truncate(s))
		}
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil || digits == 0 {
		return 0, fmt.Errorf("%s %q is too large (the maximum is %d)", what, truncate(s), int64(math.MaxInt64))
	}
	return n, nil
}

// units are the period units of ParseRate.
var units = map[string]time.Duration{
	"ns": 1, "nanosecond": 1, "nanoseconds": 1,
	"us": time.Microsecond, "µs": time.Microsecond, "microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": day, "day": day, "days": day,
	"w": 7 * day, "wk": 7 * day, "week": 7 * day, "weeks": 7 * day,
}

// parseDuration parses a period: [COUNT] [" "] UNIT, or a Go duration with
// optional leading days ("7d", "1d12h", "1h30m").
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("missing period")
	}
	switch s {
	case "month", "months", "mo", "year", "years", "yr", "y":
		return 0, fmt.Errorf("period %q is not a fixed duration: use a calendar quota (quota: N/%s), or a number of days", s, strings.TrimSuffix(s, "s"))
	}
	// COUNT and UNIT, together or apart.
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
		i++
	}
	count := int64(1)
	if i > 0 {
		var err error
		if count, err = parseCount(s[:i], "period"); err != nil {
			return 0, err
		}
	}
	if u, ok := units[strings.TrimSpace(s[i:])]; ok {
		if count == 0 {
			return 0, fmt.Errorf("period %q must be positive", truncate(s))
		}
		if count > int64(math.MaxInt64/u) {
			return 0, fmt.Errorf("period %q is too long", truncate(s))
		}
		return time.Duration(count) * u, nil
	}
	// A Go duration, with leading whole days: admit's own form. Its error
	// says what is wrong with the period, after admit's prefix.
	d, err := periodtext.Parse(s)
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "want a unit") { // this package knows more units
			msg = fmt.Sprintf("period %q: want a unit (s, min, h, d, week) or a duration (500ms, 5m, 1h30m)", truncate(s))
		}
		return 0, errors.New(msg)
	}
	return d, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// quotaPeriods are the period names of parseQuota.
var quotaPeriods = map[string]calendar.Period{
	"h": calendar.Hour, "hr": calendar.Hour, "hour": calendar.Hour, "hourly": calendar.Hour,
	"d": calendar.Day, "day": calendar.Day, "daily": calendar.Day,
	"w": calendar.Week, "wk": calendar.Week, "week": calendar.Week, "weekly": calendar.Week,
	"mo": calendar.Month, "month": calendar.Month, "monthly": calendar.Month,
	"y": calendar.Year, "yr": calendar.Year, "year": calendar.Year, "yearly": calendar.Year,
}

// parseQuota parses a calendar quota written "N/PERIOD" or "N per
// PERIOD", PERIOD being hour, day, week, month or year (a quota.Period; or
// h, d, w, mo, y, or hourly, daily, weekly, monthly, yearly): "1000/day",
// "100_000 per month". N must be from 1 to 2^53.
func parseQuota(s string) (int64, calendar.Period, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	var nStr, pStr string
	if i := strings.IndexByte(s, '/'); i >= 0 {
		nStr, pStr = s[:i], s[i+1:]
	} else if i := strings.Index(s, " per "); i >= 0 {
		nStr, pStr = s[:i], s[i+len(" per "):]
	} else {
		return 0, 0, fmt.Errorf(`want N/PERIOD, as in "1000/day"`)
	}
	n, err := parseCount(strings.TrimSpace(nStr), "count")
	if err != nil {
		return 0, 0, err
	}
	if err := checkCount(n, "a quota"); err != nil {
		return 0, 0, err
	}
	p, ok := quotaPeriods[strings.TrimSpace(pStr)]
	if !ok {
		return 0, 0, fmt.Errorf("period %q: want hour, day, week, month or year", truncate(strings.TrimSpace(pStr)))
	}
	return n, p, nil
}

// quotaText writes q as a policy file does (parseQuota reads its start
// back): "1000/day", followed by its time zone and first day of the week
// where they are not the defaults (UTC, Monday): "1000/day
// (Europe/Paris)", "500/week (UTC, week_start: sunday)".
func quotaText(q *Quota) string {
	s := strconv.FormatInt(q.Limit, 10) + "/" + q.Period.String()
	zone := ""
	if q.Location != nil && q.Location.String() != "UTC" {
		zone = q.Location.String()
	}
	week := q.Period == calendar.Week && q.WeekStart != time.Monday
	switch {
	case week:
		return s + " (" + cmp.Or(zone, "UTC") + ", week_start: " + strings.ToLower(q.WeekStart.String()) + ")"
	case zone != "":
		return s + " (" + zone + ")"
	}
	return s
}

// checkCount checks a quota or concurrency cap: 1 to 2^53.
func checkCount(n int64, what string) error {
	switch {
	case n < 0:
		return fmt.Errorf("%s of %d is negative", what, n)
	case n == 0:
		return fmt.Errorf("%s of 0 admits nothing (want 1 to 2^53; use a rate of 0 to block)", what)
	case n > maxExact:
		return fmt.Errorf("%s of %d is too large (the maximum is 2^53 = %d)", what, n, int64(maxExact))
	}
	return nil
}
