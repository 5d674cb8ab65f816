package quota

import "github.com/admit-go/admit/internal/calendar"

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
// "monthly" and "yearly". The error wraps ErrInvalidPeriod.
func ParsePeriod(s string) (Period, error) { return calendar.ParsePeriod(s) }

// validPeriod reports whether p is one of Hour, Day, Week, Month and Year.
func validPeriod(p Period) bool { return p >= Hour && p <= Year }
