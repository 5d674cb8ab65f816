package quota

import (
	"math"

	"github.com/admit-go/admit/internal/calendar"
)

// This file is the quota algorithm as pure functions over a small value,
// without locks, clocks, maps or time zones, so that a store (the Redis
// Lua script) can mirror it line for line. Instants are nanoseconds since
// the Unix epoch; the calendar (which period holds an instant) is computed
// by the caller and passed in as a window.

// never is the RetryAfter (ns) of a request that can never be admitted.
const never = int64(math.MaxInt64)

// window is a calendar period [Start, End), in ns since the Unix epoch.
type window = calendar.Window

// state is one key's count: Used events admitted in the period [Start,
// End). The zero state is empty: it holds no period (no period ends at the
// Unix epoch, as instants are at least 0).
type state struct {
	Start, End int64
	Used       int64
}

// result is a step's decision. RetryAfter and ResetAfter are ns from now;
// Start and End are the period decided in.
type result struct {
	Allowed    bool
	Remaining  int64
	RetryAfter int64
	ResetAfter int64
	Start, End int64
}

// step decides a request of n >= 0 events at instant now against a quota
// of limit >= 1 events per period, for a key in state s. w is the current
// period: the one holding now, or a later one when now is earlier than the
// current period (time went backwards); so w.End > now.
//
// The request is decided in the later of s's period and w: a state from an
// earlier period has ended and starts over empty in w (a new period starts
// with nothing used); a state from w or a later period keeps its count and
// its period, even with nothing used, so going back in time never resets
// or refills a quota. The request is admitted iff
// Used + n <= limit, and then counted. Denied, it can be admitted when the
// period ends (RetryAfter = End - now), unless n > limit, which can never be
// (RetryAfter = never). n = 0 is a peek: admitted, counting nothing, even
// when Used exceeds the limit (a smaller per-call limit).
func step(s state, w window, now, n, limit int64) (state, result) {
	if ended(s, w) {
		s = state{Start: w.Start, End: w.End}
	}
	r := result{Start: s.Start, End: s.End}
	switch {
	case n > limit:
		r.RetryAfter = never
	case n > limit-s.Used && n > 0: // no overflow: 0 <= Used, limit
		r.RetryAfter = s.End - now
	default:
		r.Allowed = true
		s.Used += n
	}
	r.Remaining = max(limit-s.Used, 0)
	if s.Used > 0 {
		r.ResetAfter = s.End - now
	}
	return s, r
}

// grant decides a partial request of n >= 0 events as step decides a
// request: it admits m = min(n, what remains in the period), counts them,
// and returns the new state, the result and m. The result is the
// admission's when m = n (a peek's when n = 0), else the denial of one
// more event (allowed if m > 0): what a peek, a request of m and a request
// of one more would give in turn.
func grant(s state, w window, now, n, limit int64) (state, result, int64) {
	s, peek := step(s, w, now, 0, limit)
	m := min(n, peek.Remaining)
	if m == 0 && n == 0 {
		return s, peek, 0
	}
	var r result
	if m > 0 {
		s, r = step(s, w, now, m, limit)
	}
	if m < n {
		s, r = step(s, w, now, 1, limit)
		r.Allowed = m > 0
	}
	return s, r, m
}

// refund gives back up to n >= 0 events counted in s, if s's period has not
// ended before the current period w. A count from an ended period is left
// as it is: it will not be used again, and it must not be given back in
// case time goes back into that period.
func refund(s state, w window, n int64) state {
	if ended(s, w) {
		return s
	}
	s.Used -= min(n, s.Used)
	return s
}

// ended reports whether s holds no period, or one that ended before w.
func ended(s state, w window) bool {
	return s.End <= w.Start || s.End == 0
}

// expired reports whether s is equivalent to an empty state in period w and
// every later period, so that forgetting it changes no decision (given
// that no later call is decided in a period before w).
func expired(s state, w window) bool {
	return s.Used == 0 || ended(s, w)
}
