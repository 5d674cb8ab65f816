// Package envoyunit holds the units of time of Envoy's rate-limit service
// API (envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit) and of
// envoyproxy/ratelimit's configuration files, which policy's Envoy loader
// and server's rate-limit service share.
package envoyunit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit"
)

// Unit is a unit of time of Envoy's rate-limit service API, with the same
// numbers, and of envoyproxy/ratelimit's configuration files.
type Unit int32

// The units, numbered as Envoy numbers them.
const (
	Unknown Unit = 0
	Second  Unit = 1
	Minute  Unit = 2
	Hour    Unit = 3
	Day     Unit = 4
	Month   Unit = 5 // 30 days, as envoyproxy/ratelimit counts it
	Year    Unit = 6 // 365 days
	Week    Unit = 7
)

const day = 24 * time.Hour

var names = [...]string{"unknown", "second", "minute", "hour", "day", "month", "year", "week"}

// String returns the unit's name in lower case: "second", "minute"...
func (u Unit) String() string {
	if u >= 0 && int(u) < len(names) {
		return names[u]
	}
	return "Unit(" + strconv.Itoa(int(u)) + ")"
}

// Duration returns the unit's length: envoyproxy/ratelimit's windows, a
// month being 30 days and a year 365 (0 for Unknown and invalid units).
func (u Unit) Duration() time.Duration {
	switch u {
	case Second:
		return time.Second
	case Minute:
		return time.Minute
	case Hour:
		return time.Hour
	case Day:
		return day
	case Week:
		return 7 * day
	case Month:
		return 30 * day
	case Year:
		return 365 * day
	}
	return 0
}

// Parse returns the Unit named s, in any case ("second", "MINUTE"...), as
// envoyproxy/ratelimit reads its files. "unknown" is not a unit.
func Parse(s string) (Unit, error) {
	k := strings.ToLower(s)
	for u, name := range names {
		if u != 0 && k == name {
			return Unit(u), nil
		}
	}
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return Unknown, fmt.Errorf("unit %q: want second, minute, hour, day, week, month or year", s)
}

// Of returns the Unit of a period, and whether there is one: for the
// current limit of an Envoy descriptor status, whose limit is requests per
// unit.
func Of(period time.Duration) (Unit, bool) {
	for u := Second; u <= Week; u++ {
		if u.Duration() == period {
			return u, true
		}
	}
	return Unknown, false
}

// Limit returns the limit of requestsPerUnit requests per unit, burst the
// same: a limit Envoy gives inline (its descriptor's limit override) or a
// rate_limit of envoyproxy/ratelimit's files. 0 requests per unit is the
// zero limit, which refuses everything. It is an error for an unknown
// unit.
func Limit(requestsPerUnit uint32, u Unit) (admit.Limit, error) {
	d := u.Duration()
	if d == 0 {
		return admit.Limit{}, fmt.Errorf("unit %v is not a known unit", u)
	}
	n := int64(requestsPerUnit)
	return admit.Limit{Rate: n, Period: d, Burst: n}, nil
}
