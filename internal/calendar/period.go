// Package calendar holds the calendar periods of quotas (an hour, a day, a
// week, a month, a year of the wall clock in a time zone), apart from any
// backend, so that quota, redisstore and policy share one definition
// (and quota and redisstore one current-period logic, Latest)
// without importing one another: package quota exports them (quota.Period,
// quota.Day...), which is how users name them.
package calendar

import (
	"fmt"
	"time"
)

// Period is the length of a calendar period: an hour, a day, a week, a
// month or a year of the wall clock in a time zone. The zero Period is not
// valid.
type Period uint8

const (
	// Hour is a clock hour: from hh:00 to the next hh:00 of the wall clock.
	Hour Period = iota + 1
	// Day is a calendar day: from midnight to midnight.
	Day
	// Week is seven calendar days from midnight of the first day of the
	// week (Monday unless the quota says otherwise: quota.Config.WeekStart).
	Week
	// Month is a calendar month: from midnight of its first day to
	// midnight of the first day of the next month (28 to 31 days).
	Month
	// Year is a calendar year: from midnight of January 1st.
	Year
)

var periodNames = [...]string{Hour: "hour", Day: "day", Week: "week", Month: "month", Year: "year"}

// String returns "hour", "day", "week", "month" or "year".
func (p Period) String() string {
	if p.valid() {
		return periodNames[p]
	}
	return fmt.Sprintf("Period(%d)", uint8(p))
}

func (p Period) valid() bool { return p >= Hour && p <= Year }

// Bounds returns the calendar period of kind p holding instant t in
// location loc: start <= t < end. weekStart is the first day of a week
// (it matters only for Week). A nil loc means UTC. For an invalid Period
// Bounds returns t, t.
//
// A period starts at the first instant at which the wall clock in loc
// reads its first moment (midnight for a day, hh:00 for an hour) or later,
// and ends where the next one starts; the returned instants are in loc.
// So periods follow each other without gap or overlap, whatever the time
// zone does:
//
//   - On the day clocks go forward a day lasts 23 hours, and on the day
//     they go back, 25 (in Europe/Paris, the last Sundays of March and
//     October); weeks, months and years holding those days are an hour
//     shorter or longer too.
//   - Where a change skips midnight itself (America/Sao_Paulo until 2019,
//     America/Havana, America/Santiago: 00:00 becomes 01:00), the day
//     starts at the change, when the clock first reads 01:00 of that day.
//     (time.Date, asked for that midnight, returns 23:00 of the day before,
//     which would make the previous day end an hour early; Bounds does not
//     use it that way.)
//   - Where the clocks go back across midnight (a 25-hour day ending at
//     the change), the repeated hour stays in the day that ends.
//   - A day the zone skipped entirely (Pacific/Apia, 30 December 2011) has
//     no instants: the day before it is followed by the day after it.
//   - An hour is a clock hour. When the clocks go back, the clock hours
//     read twice join the hour the change happens in: one period of two
//     hours for the usual change of one hour (of three in
//     Antarctica/Troll, which goes back two hours). When they go forward,
//     the hour before the change is followed by the hour after it (by a
//     period of 30 minutes where the change is of 30 minutes, as in
//     Australia/Lord_Howe).
func (p Period) Bounds(t time.Time, loc *time.Location, weekStart time.Weekday) (start, end time.Time) {
	if !p.valid() {
		return t, t
	}
	if loc == nil {
		loc = time.UTC
	}
	// The wall-clock label of the period holding t's wall clock reading,
	// as a time in UTC (which has no transitions to get in the way).
	lt := t.In(loc)
	y, m, d := lt.Date()
	var label time.Time
	switch p {
	case Hour:
		label = time.Date(y, m, d, lt.Hour(), 0, 0, 0, time.UTC)
	case Day:
		label = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case Week:
		label = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		back := (int(label.Weekday()) - int(weekStart)%7 + 7) % 7
		label = label.AddDate(0, 0, -back)
	case Month:
		label = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	case Year:
		label = time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	start = firstAtOrAfter(label, loc)
	end = firstAtOrAfter(p.next(label, 1), loc)
	// Where the wall clock goes back across a period's first moment, t's
	// reading can belong to the period before the one holding t (and an
	// empty period can be skipped over). Move to the period holding t.
	for i := 0; i < 4 && !t.Before(end); i++ {
		label = p.next(label, 1)
		start, end = end, firstAtOrAfter(p.next(label, 1), loc)
	}
	for i := 0; i < 4 && t.Before(start); i++ {
		label = p.next(label, -1)
		start, end = firstAtOrAfter(label, loc), start
	}
	return start, end
}

// next returns the wall-clock label k periods after label.
func (p Period) next(label time.Time, k int) time.Time {
	switch p {
	case Hour:
		return label.Add(time.Duration(k) * time.Hour)
	case Day:
		return label.AddDate(0, 0, k)
	case Week:
		return label.AddDate(0, 0, 7*k)
	case Month:
		return label.AddDate(0, k, 0)
	default:
		return label.AddDate(k, 0, 0)
	}
}

// maxOffset exceeds the offset from UTC of every time zone, real or
// historical (the largest are under 16 hours).
const maxOffset = 48 * time.Hour

// firstAtOrAfter returns the first instant at which the wall clock in loc
// reads wall or later, where wall is a wall-clock reading expressed in UTC.
//
// It walks the zone's segments (the spans of one offset, from
// time.ZoneBounds) from an instant certainly earlier than any reading of
// wall: in a segment of offset off the clock reads wall at wall-off, if
// that falls inside the segment; if it falls before, the segment starts
// past wall (the clocks jumped over it) and its start is the answer.
func firstAtOrAfter(wall time.Time, loc *time.Location) time.Time {
	u := wall.Add(-maxOffset).In(loc)
	for range 64 {
		_, off := u.Zone()
		start, end := u.ZoneBounds()
		c := wall.Add(-time.Duration(off) * time.Second)
		if !start.IsZero() && c.Before(start) {
			c = start
		}
		if end.IsZero() || c.Before(end) {
			return c.In(loc)
		}
		u = end
	}
	// Unreachable with real zones (a few segments at most are walked).
	return time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), 0, 0, 0, loc)
}
