package quota

import (
	"fmt"
	"strings"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/calendar"
)

// Period is the length of a calendar period: an hour, a day, a week, a
// month or a year of the wall clock in a time zone. The zero Period is not
// valid. (It is defined apart from this package, so that package policy
// and redisstore name the same periods without importing an in-memory
// store.)
type Period = calendar.Period

const (
	// Hour is a clock hour: from hh:00 to the next hh:00 of the wall clock.
	Hour = calendar.Hour
	// Day is a calendar day: from midnight to midnight.
	Day = calendar.Day
	// Week is seven calendar days from midnight of the first day of the
	// week (Monday unless Config.WeekStart says otherwise).
	Week = calendar.Week
	// Month is a calendar month: from midnight of its first day to
	// midnight of the first day of the next month (28 to 31 days).
	Month = calendar.Month
	// Year is a calendar year: from midnight of January 1st.
	Year = calendar.Year
)

// ParsePeriod returns the Period named s: "hour", "day", "week", "month" or
// "year", in any case, or the adjectives "hourly", "daily", "weekly",
// "monthly" and "yearly". For another s, the error wraps
// admit.ErrInvalidConfig and says "quota: invalid period".
func ParsePeriod(s string) (Period, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "hour", "hourly":
		return Hour, nil
	case "day", "daily":
		return Day, nil
	case "week", "weekly":
		return Week, nil
	case "month", "monthly":
		return Month, nil
	case "year", "yearly":
		return Year, nil
	}
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return 0, fmt.Errorf("%w: quota: invalid period %q: want hour, day, week, month or year", admit.ErrInvalidConfig, s)
}

// validPeriod reports whether p is one of Hour, Day, Week, Month and Year.
func validPeriod(p Period) bool { return p >= Hour && p <= Year }
