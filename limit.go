package admit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/periodtext"
)

// Inf is the Rate of a limit that admits everything: a Limit l is
// unlimited iff l.Rate == Inf.
const Inf int64 = math.MaxInt64

// Unlimited is a Limit that admits every request.
var Unlimited = Limit{Rate: Inf}

// Limit is a rate limit: Rate events per Period, at most Burst at once.
//
// The long-run rate is Rate/Period; the emission interval T = Period/Rate is
// the time one event's capacity takes to come back. Burst B is the capacity:
// how many events a limit that has been idle admits at once, so that over any
// interval of length t the bucket algorithms admit at most B + t/T events.
// A Burst of 0 means Burst = Rate, so PerMinute(100) admits 100 at once and
// then 100 per minute, evenly. Rate and Burst are whole events; Period may be
// any positive duration, and T need not be a whole number of nanoseconds:
// the arithmetic is exact (3 per second is 333333333⅓ns apart).
//
// The zero Limit has a zero Rate and denies every request. A Rate of Inf
// admits every request. Validate reports the rest of the domain: no negative
// field, a positive Period for a positive Rate, no Burst with a zero Rate, and
// a capacity B×T of at most 36 years.
type Limit struct {
	Rate   int64         // events per Period; 0 denies all, Inf admits all
	Period time.Duration // the period Rate is counted over
	Burst  int64         // events admitted at once; 0 means Rate
}

// PerSecond returns a limit of n events per second, burst n.
func PerSecond(n int64) Limit { return Limit{Rate: n, Period: time.Second, Burst: n} }

// PerMinute returns a limit of n events per minute, burst n.
func PerMinute(n int64) Limit { return Limit{Rate: n, Period: time.Minute, Burst: n} }

// PerHour returns a limit of n events per hour, burst n.
func PerHour(n int64) Limit { return Limit{Rate: n, Period: time.Hour, Burst: n} }

// PerDay returns a limit of n events per 24 hours, burst n. (For calendar
// days in a time zone use the quota package.)
func PerDay(n int64) Limit { return Limit{Rate: n, Period: 24 * time.Hour, Burst: n} }

// Every returns a limit of one event every d, burst 1. A d <= 0 gives
// Unlimited, as in golang.org/x/time/rate.
func Every(d time.Duration) Limit {
	if d <= 0 {
		return Unlimited
	}
	return Limit{Rate: 1, Period: d, Burst: 1}
}

// WithBurst returns l with its burst set to b.
func (l Limit) WithBurst(b int64) Limit {
	l.Burst = b
	return l
}

// Validate reports whether l is inside the domain documented on Limit. The
// error wraps ErrInvalidLimit.
func (l Limit) Validate() error {
	_, err := l.compile()
	return err
}

// compile validates l and returns its compiled form and l with the burst
// filled in.
func (l Limit) compile() (algo.Params, error) {
	p, err := algo.Compile(l.Rate, int64(l.Period), l.Burst)
	if err != nil {
		return p, wrapLimit(l, err)
	}
	return p, nil
}

// normal returns l with Burst filled in.
func (l Limit) normal() Limit {
	if l.Burst == 0 && l.Rate != Inf {
		l.Burst = l.Rate
	}
	return l
}

func (l Limit) debugString() string {
	return fmt.Sprintf("{Rate:%d Period:%v Burst:%d}", l.Rate, l.Period, l.Burst)
}

// String returns l in the syntax ParseLimit reads: "100/s", "10/min",
// "5000/h burst 50", "1/500ms", "unlimited". The burst is omitted when it
// equals the rate.
func (l Limit) String() string {
	if l.Rate == Inf {
		return "unlimited"
	}
	if l.Rate < 0 || l.Period < 0 || l.Burst < 0 || (l.Rate > 0 && l.Period == 0) {
		// Outside the domain, or not a rate (a concurrency limit has no
		// Period): the fields as they are.
		return l.debugString()
	}
	s := strconv.FormatInt(l.Rate, 10) + "/" + formatPeriod(l.Period)
	if l.Burst != 0 && l.Burst != l.Rate {
		s += " burst " + strconv.FormatInt(l.Burst, 10)
	}
	return s
}

const day = 24 * time.Hour

func formatPeriod(d time.Duration) string {
	switch d {
	case 0, time.Second:
		return "s"
	case time.Minute:
		return "min"
	case time.Hour:
		return "h"
	case day:
		return "d"
	}
	if d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}, {1, "ns"}} {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10))
			b.WriteString(u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

// ParseLimit parses a limit written as
//
//	RATE "/" PERIOD ["burst" BURST]
//	RATE "per" PERIOD ["burst" BURST]
//	"unlimited"
//
// where PERIOD is a unit (s, sec, second, min, minute, m, h, hour, d, day,
// ms, us, ns), or a duration in Go's syntax with "d" for 24 hours allowed
// ("500ms", "5m", "1h30m", "7d"). Examples: "100/s", "10/min",
// "5000/1h burst 50", "1/500ms", "100 per 5m", "20/s burst=40". The result is
// validated; errors wrap ErrInvalidLimit.
func ParseLimit(s string) (Limit, error) {
	l, err := parseLimit(s)
	if err != nil {
		return Limit{}, fmt.Errorf("%w %q: %v", ErrInvalidLimit, truncate(s), err)
	}
	if _, err := l.compile(); err != nil {
		return Limit{}, err
	}
	return l, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func parseLimit(s string) (Limit, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "unlimited", "inf", "infinite":
		return Unlimited, nil
	case "":
		return Limit{}, fmt.Errorf("empty")
	}
	var rateStr, rest string
	if i := strings.IndexByte(s, '/'); i >= 0 {
		rateStr, rest = s[:i], s[i+1:]
	} else if i := strings.Index(s, " per "); i >= 0 {
		rateStr, rest = s[:i], s[i+5:]
	} else {
		return Limit{}, fmt.Errorf(`want RATE/PERIOD, as in "100/s"`)
	}
	rate, err := parseCount(strings.TrimSpace(rateStr), "rate")
	if err != nil {
		return Limit{}, err
	}
	rest = strings.TrimSpace(rest)
	periodStr, burstStr := rest, ""
	if i := strings.Index(rest, "burst"); i >= 0 {
		periodStr, burstStr = strings.TrimSpace(rest[:i]), strings.TrimSpace(rest[i+len("burst"):])
		burstStr = strings.TrimSpace(strings.TrimPrefix(burstStr, "="))
		if burstStr == "" {
			return Limit{}, fmt.Errorf("burst without a value")
		}
	}
	period, err := periodtext.Parse(periodStr)
	if err != nil {
		return Limit{}, err
	}
	l := Limit{Rate: rate, Period: period, Burst: rate}
	if burstStr != "" {
		if l.Burst, err = parseCount(burstStr, "burst"); err != nil {
			return Limit{}, err
		}
	}
	return l, nil
}

func parseCount(s, what string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("missing %s", what)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%s %q is not a whole number", what, truncate(s))
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is too large", what, truncate(s))
	}
	return n, nil
}

func wrapLimit(l Limit, err error) error {
	return fmt.Errorf("%w %s: %v", ErrInvalidLimit, l.debugString(), err)
}
