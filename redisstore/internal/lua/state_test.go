package lua_test

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

// The tests' side of the stored forms (see the package documentation), the
// zero states, and the Go step functions the script must agree with.

const farFuture = algo.MaxTime + 2*algo.MaxSpan

// family returns the state family of an algorithm code: the token bucket
// and the leaky bucket meter share one.
func family(code string) string {
	switch code {
	case lua.CodeLeakyBucket:
		return lua.CodeTokenBucket
	case lua.CodeSlidingWindowApprox: // the sliding window's state
		return lua.CodeSlidingWindow
	}
	return code
}

func window(code string) bool {
	return code == lua.CodeFixedWindow || family(code) == lua.CodeSlidingWindow || code == lua.CodeSlidingLog
}

func zeroState(code string) any {
	switch family(code) {
	case lua.CodeGCRA:
		return algo.GCRA{}
	case lua.CodeTokenBucket:
		return algo.Bucket{}
	case lua.CodeFixedWindow:
		return algo.FixedWindow{}
	case lua.CodeSlidingWindow:
		return algo.SlidingWindow{}
	case lua.CodeSlidingLog:
		return new(algo.SlidingLog)
	}
	panic("unknown code " + code)
}

// refStep runs the Go step function the script mirrors for code, the one
// the root package's limiter and the keyed package use for that algorithm.
// It never changes st (a log is cloned).
func refStep(code string, st any, p *algo.Params, now, n int64) (any, algo.Result) {
	if code == lua.CodeSlidingWindowApprox {
		return algo.SlidingWindowApproxStep(st.(algo.SlidingWindow), p, now, n)
	}
	switch family(code) {
	case lua.CodeGCRA:
		return algo.GCRAStep(st.(algo.GCRA), p, now, n)
	case lua.CodeTokenBucket:
		return algo.BucketStep(st.(algo.Bucket), p, now, n)
	case lua.CodeFixedWindow:
		return algo.FixedWindowStep(st.(algo.FixedWindow), p, now, n)
	case lua.CodeSlidingWindow:
		return algo.SlidingWindowStep(st.(algo.SlidingWindow), p, now, n)
	case lua.CodeSlidingLog:
		l := st.(*algo.SlidingLog).Clone()
		r := l.SlidingLogStep(p, now, n)
		return l, r
	}
	panic("unknown code " + code)
}

// refDelay decides n events at now within maxDelay ns as the script does
// for an "n:maxDelay" argument (GCRA and the buckets only).
func refDelay(code string, st any, p *algo.Params, now, n, maxDelay int64) (any, algo.Result) {
	if family(code) == lua.CodeGCRA {
		return algo.GCRADelay(st.(algo.GCRA), p, now, n, maxDelay)
	}
	return algo.BucketDelay(st.(algo.Bucket), p, now, n, maxDelay)
}

// refRefund gives back n events at now as the script's refund mode does:
// the algorithm's undo function, then a peek for the result. It never
// changes st.
func refRefund(code string, st any, p *algo.Params, now, n int64) (any, algo.Result) {
	if code == lua.CodeSlidingWindowApprox {
		return algo.SlidingWindowApproxStep(algo.SlidingWindowUndo(st.(algo.SlidingWindow), p, now, n), p, now, 0)
	}
	switch family(code) {
	case lua.CodeGCRA:
		return algo.GCRAStep(algo.GCRAUndo(st.(algo.GCRA), p, now, n), p, now, 0)
	case lua.CodeTokenBucket:
		return algo.BucketStep(algo.BucketUndo(st.(algo.Bucket), p, now, n), p, now, 0)
	case lua.CodeFixedWindow:
		return algo.FixedWindowStep(algo.FixedWindowUndo(st.(algo.FixedWindow), p, now, n), p, now, 0)
	case lua.CodeSlidingWindow:
		return algo.SlidingWindowStep(algo.SlidingWindowUndo(st.(algo.SlidingWindow), p, now, n), p, now, 0)
	case lua.CodeSlidingLog:
		l := st.(*algo.SlidingLog).Clone()
		l.SlidingLogUndo(p, now, n)
		r := l.SlidingLogStep(p, now, 0)
		return l, r
	}
	panic("unknown code " + code)
}

// refPartial grants up to n events at now as the script's partial mode
// does, by the loop of keyed.Limiter.AllowAtMost over refStep: peek, ask
// for what fits (or for one event when nothing does, for the wait), and
// ask again while events are granted and more are wanted. It returns the
// state, the decision after the grant and the events granted, and never
// changes st.
func refPartial(code string, st any, p *algo.Params, now, n int64) (any, algo.Result, int64) {
	var granted int64
	if n == 0 {
		st, r := refStep(code, st, p, now, 0)
		return st, r, 0
	}
	for {
		st1, peek := refStep(code, st, p, now, 0)
		k := max(min(n-granted, peek.Remaining), 1)
		st2, r := refStep(code, st1, p, now, k)
		st = st2
		if r.Allowed {
			granted += k
			if granted < n {
				continue
			}
			return st, r, granted
		}
		if k != 1 {
			panic("a peek's Remaining did not fit")
		}
		r.Allowed = granted > 0
		return st, r, granted
	}
}

// logEntries returns a log's entries, oldest first. algo.SlidingLog does not
// export them; reflection reads its ring buffer.
func logEntries(l *algo.SlidingLog) []algo.LogEntry {
	v := reflect.ValueOf(l).Elem()
	buf := v.FieldByName("buf")
	head, size := int(v.FieldByName("head").Int()), int(v.FieldByName("size").Int())
	out := make([]algo.LogEntry, 0, size)
	for i := range size {
		e := buf.Index((head + i) % buf.Len())
		out = append(out, algo.LogEntry{At: e.Field(0).Int(), N: e.Field(1).Int()})
	}
	return out
}

// logOf builds a log holding entries (instants strictly increasing) by
// admitting them under a limit wide enough that none expires or is refused.
func logOf(entries []algo.LogEntry) *algo.SlidingLog {
	wide := algo.Params{Mode: algo.Normal, Burst: math.MaxInt64, Tn: 1, Td: 1, CapN: math.MaxInt64}
	l := new(algo.SlidingLog)
	for _, e := range entries {
		if r := l.SlidingLogStep(&wide, e.At, e.N); !r.Allowed {
			panic(fmt.Sprintf("logOf: %v refused", e))
		}
	}
	return l
}

// encodeState returns the stored form of a state, "" for an empty log
// (which the script deletes).
func encodeState(st any) string {
	switch s := st.(type) {
	case algo.GCRA:
		if s.Frac == 0 {
			return fmt.Sprintf("g%d", s.At)
		}
		return fmt.Sprintf("g%d:%d", s.At, s.Frac)
	case algo.Bucket:
		return fmt.Sprintf("b%d:%d", s.Last, s.Level)
	case algo.FixedWindow:
		return fmt.Sprintf("f%d:%d", s.Win, s.Count)
	case algo.SlidingWindow:
		return fmt.Sprintf("s%d:%d:%d", s.Win, s.Cur, s.Prev)
	case *algo.SlidingLog:
		var b strings.Builder
		prev := int64(0)
		for i, e := range logEntries(s) {
			if i == 0 {
				fmt.Fprintf(&b, "l%d:%d", e.At, e.N)
			} else {
				fmt.Fprintf(&b, ",%d:%d", e.At-prev, e.N)
			}
			prev = e.At
		}
		return b.String()
	}
	panic(fmt.Sprintf("encodeState %T", st))
}

// decodeState parses a stored form of family code; "" (a missing key) is
// the zero state.
func decodeState(code, v string) (any, error) {
	if v == "" {
		return zeroState(code), nil
	}
	fields := func(tag byte, n int) ([]int64, error) {
		if v[0] != tag {
			return nil, fmt.Errorf("tag %q, want %q", v[0], tag)
		}
		parts := strings.Split(v[1:], ":")
		if len(parts) != n {
			return nil, fmt.Errorf("%q: %d fields, want %d", v, len(parts), n)
		}
		out := make([]int64, n)
		for i, p := range parts {
			x, err := strconv.ParseInt(p, 10, 64)
			if err != nil || x < 0 || strconv.FormatInt(x, 10) != p {
				return nil, fmt.Errorf("%q: bad field %q", v, p)
			}
			out[i] = x
		}
		return out, nil
	}
	switch family(code) {
	case lua.CodeGCRA:
		if strings.Contains(v, ":") {
			f, err := fields('g', 2)
			if err != nil {
				return nil, err
			}
			if f[1] == 0 {
				return nil, fmt.Errorf("%q: explicit zero Frac", v)
			}
			if f[0] > farFuture {
				return nil, fmt.Errorf("%q: At past farFuture", v)
			}
			return algo.GCRA{At: f[0], Frac: f[1]}, nil
		}
		f, err := fields('g', 1)
		if err != nil {
			return nil, err
		}
		if f[0] > farFuture {
			return nil, fmt.Errorf("%q: At past farFuture", v)
		}
		return algo.GCRA{At: f[0]}, nil
	case lua.CodeTokenBucket:
		f, err := fields('b', 2)
		if err != nil {
			return nil, err
		}
		if f[0] > algo.MaxTime {
			return nil, fmt.Errorf("%q: Last past MaxTime", v)
		}
		return algo.Bucket{Last: f[0], Level: f[1]}, nil
	case lua.CodeFixedWindow:
		f, err := fields('f', 2)
		if err != nil {
			return nil, err
		}
		if f[0] > algo.MaxTime {
			return nil, fmt.Errorf("%q: Win past MaxTime", v)
		}
		return algo.FixedWindow{Win: f[0], Count: f[1]}, nil
	case lua.CodeSlidingWindow:
		f, err := fields('s', 3)
		if err != nil {
			return nil, err
		}
		if f[0] > algo.MaxTime {
			return nil, fmt.Errorf("%q: Win past MaxTime", v)
		}
		return algo.SlidingWindow{Win: f[0], Cur: f[1], Prev: f[2]}, nil
	case lua.CodeSlidingLog:
		if v[0] != 'l' {
			return nil, fmt.Errorf("tag %q, want 'l'", v[0])
		}
		var entries []algo.LogEntry
		prev, sum := int64(0), int64(0)
		for i, item := range strings.Split(v[1:], ",") {
			a, n, ok := strings.Cut(item, ":")
			at, err1 := strconv.ParseInt(a, 10, 64)
			cnt, err2 := strconv.ParseInt(n, 10, 64)
			if !ok || err1 != nil || err2 != nil || cnt < 1 || at < 0 || (i > 0 && at < 1) ||
				strconv.FormatInt(at, 10) != a || strconv.FormatInt(cnt, 10) != n {
				return nil, fmt.Errorf("%q: bad entry %q", v, item)
			}
			if at > algo.MaxTime-prev || cnt > math.MaxInt64-sum {
				return nil, fmt.Errorf("%q: entry %q out of range", v, item)
			}
			at += prev
			sum += cnt
			entries = append(entries, algo.LogEntry{At: at, N: cnt})
			prev = at
		}
		return logOf(entries), nil
	}
	return nil, fmt.Errorf("unknown code %q", code)
}

// sameState reports whether two states of one family are equal (logs by
// their entries).
func sameState(a, b any) bool {
	la, ok1 := a.(*algo.SlidingLog)
	lb, ok2 := b.(*algo.SlidingLog)
	if ok1 && ok2 {
		return reflect.DeepEqual(logEntries(la), logEntries(lb)) && la.Sum() == lb.Sum()
	}
	return a == b
}

func showState(st any) string {
	if l, ok := st.(*algo.SlidingLog); ok {
		return fmt.Sprintf("log%v", logEntries(l))
	}
	return fmt.Sprintf("%+v", st)
}
