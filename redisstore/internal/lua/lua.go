package lua

import (
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
)

// sources holds the script's parts. Decide is a prelude defining import,
// whose branches are the modules: every file but the top-level ones, each
// the body of a function run at most once per call, on the first import of
// it (modules share their exports through the table L). A call thus builds
// the closures of the modules it uses and no others: EVALSHA runs the whole
// chunk every time. fast.lua, main.lua and entry.lua follow at the
// chunk's top level.
//
//go:embed *.lua
var sources embed.FS

var modules = []string{
	"lib",           // exact integers (u128.go)
	"params",        // params.go
	"gcra",          // gcra.go
	"bucket",        // bucket.go
	"window",        // window.go
	"fixedwindow",   // fixedwindow.go
	"slidingwindow", // slidingwindow.go
	"slidinglog",    // slidinglog.go
	"slow",          // the general path of main.lua
	"partial",       // the partial mode of main.lua
}

const prelude = `-- admit decision script (github.com/admit-go/admit/redisstore/internal/lua)

local loaded, L = {}, {}

-- import runs module name once per call and returns what it returned (true
-- if nothing); modules add their exports to L. Each module is a branch of
-- import, so a call creates the functions of the modules it uses only.
local function import(name)
  local m = loaded[name]
  if m ~= nil then
    return m
  end
  loaded[name] = true -- (modules import each other only in order)
`

// Decide is the source of the decision script: the .lua files of this
// package composed into one chunk, so that one EVALSHA decides any number
// of keys with any algorithms. The package documentation describes its
// calling convention.
var Decide = compose(modules, "fast", "main", "entry")

// Share is the source of the script of a budget shared by weights
// (redisstore's Share): the modules lib, params, gcra and share, and
// sharemain.lua and entry.lua at the top level. share.go describes its calling
// convention.
var Share = compose([]string{"lib", "params", "gcra", "share"}, "sharemain", "entry")

// compose returns the prelude with mods as the branches of import, then
// the files tops at the chunk's top level.
func compose(mods []string, tops ...string) string {
	read := func(name string) string {
		b, err := sources.ReadFile(name)
		if err != nil {
			panic("lua: " + err.Error()) // every part is embedded
		}
		return string(b)
	}
	var b strings.Builder
	b.WriteString(prelude)
	for i, m := range mods {
		if i > 0 {
			b.WriteString("  else")
		} else {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "if name == %q then\n    m = (function()\n-- %s.lua\n%s    end)()\n", m, m, read(m+".lua"))
	}
	b.WriteString("  end\n  m = m or true\n  loaded[name] = m\n  return m\nend\nL.import = import\n")
	for _, t := range tops {
		b.WriteString("\n-- " + t + ".lua\n" + read(t+".lua"))
	}
	return b.String()
}

// The algorithm codes of the script, one per admit.Algorithm that Redis
// supports (all but the pacer, which is not an Algorithm).
const (
	CodeGCRA          = "gcra" // admit.AlgGCRA: algo.GCRAStep
	CodeTokenBucket   = "tb"   // admit.AlgTokenBucket: algo.BucketStep
	CodeLeakyBucket   = "lb"   // admit.AlgLeakyBucket: algo.BucketStep (the same state as "tb")
	CodeFixedWindow   = "fw"   // admit.AlgFixedWindow: algo.FixedWindowStep
	CodeSlidingWindow = "sw"   // admit.AlgSlidingWindow: algo.SlidingWindowStep
	CodeSlidingLog    = "sl"   // admit.AlgSlidingLog: (*algo.SlidingLog).SlidingLogStep
	// admit.AlgSlidingWindowApprox: algo.SlidingWindowApproxStep, on the
	// sliding window's state (stored as "sw" stores it)
	CodeSlidingWindowApprox = "swa"
)

// The values of ARGV[1].
const (
	// Independent decides and writes each key on its own, in order.
	Independent = "0"
	// AllOrNothing admits every key's request or none: it decides all of
	// them, then writes only if all were allowed.
	AllOrNothing = "1"
	// Refund gives back each key's n events, admitted at the call's
	// instant (the undo functions of internal/algo), and replies for each
	// key what a peek (n = 0) would then get.
	Refund = "2"
	// Partial grants each key, on its own, the largest m <= n events that
	// fit at the call's instant, and replies m after the key's result (see
	// ParsePartialReply).
	Partial = "3"
)

// RedisTime is the value of ARGV[2] that makes the script use Redis TIME as
// the instant.
const RedisTime = ""

var codes = [...]string{
	admit.AlgGCRA:          CodeGCRA,
	admit.AlgTokenBucket:   CodeTokenBucket,
	admit.AlgLeakyBucket:   CodeLeakyBucket,
	admit.AlgFixedWindow:   CodeFixedWindow,
	admit.AlgSlidingWindow: CodeSlidingWindow,
	admit.AlgSlidingLog:    CodeSlidingLog,

	admit.AlgSlidingWindowApprox: CodeSlidingWindowApprox,
}

// Code returns the script's code for algorithm a, or false if the script
// does not implement a.
func Code(a admit.Algorithm) (string, bool) {
	if int(a) < len(codes) {
		return codes[a], true
	}
	return "", false
}

// Limit is one limit's six arguments to the script, formatted once: the
// algorithm code and the compiled limit's Mode, Burst, Tn, Td and CapN as
// decimal strings.
type Limit [6]any

// NewLimit formats limit p of algorithm code. p must come from
// algo.Compile (and pass CheckWindow for the window algorithms); the script
// rejects any other limit.
func NewLimit(code string, p *algo.Params) *Limit {
	return &Limit{code,
		strconv.Itoa(int(p.Mode)),
		strconv.FormatInt(p.Burst, 10),
		strconv.FormatInt(p.Tn, 10),
		strconv.FormatInt(p.Td, 10),
		strconv.FormatInt(p.CapN, 10)}
}

// Args collects the arguments of one script call: each distinct limit
// once, then a limit and a cost per key, in the order of the keys. The zero
// value is empty; Reset empties it for reuse.
type Args struct {
	limits []*Limit
	keys   []any // per key: the limit's index (from 1) and n
}

// Add appends the request of one key (the call's next KEYS entry): n
// events under limit l. Limits are told apart by pointer, so reuse one
// *Limit per limit to send it once.
func (a *Args) Add(l *Limit, n int64) {
	j := 0
	for i, x := range a.limits {
		if x == l {
			j = i + 1
			break
		}
	}
	if j == 0 {
		a.limits = append(a.limits, l)
		j = len(a.limits)
	}
	a.keys = append(a.keys, int64(j), n)
}

// AddDelay is Add of a request in the delay mode (Request.MaxDelay): the
// key's cost is sent as "n:maxDelay" (ns), which the script decides with
// GCRADelay or BucketDelay (GCRA and the buckets only; not in the Refund
// and Partial modes). maxDelay <= 0 is Add.
func (a *Args) AddDelay(l *Limit, n, maxDelay int64) {
	if maxDelay <= 0 {
		a.Add(l, n)
		return
	}
	a.Add(l, n)
	a.keys[len(a.keys)-1] = strconv.FormatInt(n, 10) + ":" + strconv.FormatInt(maxDelay, 10)
}

// Len returns the number of keys added.
func (a *Args) Len() int { return len(a.keys) / 2 }

// Reset empties a, keeping its memory.
func (a *Args) Reset() {
	clear(a.limits)
	a.limits, a.keys = a.limits[:0], a.keys[:0]
}

// Append appends the call's ARGV to dst and returns the result: mode
// (Independent, AllOrNothing or Refund), now (decimal ns, or RedisTime), the
// minimum TTL (decimal ms), the number of limits, the limits, and the keys'
// limit indexes and costs.
func (a *Args) Append(dst []any, mode, now, minTTL string) []any {
	dst = append(dst, mode, now, minTTL, int64(len(a.limits)))
	for _, l := range a.limits {
		dst = append(dst, l[:]...)
	}
	return append(dst, a.keys...)
}

// ErrReply reports a reply of the script that does not have the documented
// form. ParseReply wraps it with what was wrong.
var ErrReply = errors.New("lua: malformed script reply")

// ParseReply checks and converts the script's reply for nkeys keys, as
// go-redis returns it (RESP2 or RESP3): the instant the script decided at
// and one result per key. Each number may be an integer reply or a decimal
// string. Every departure from the documented form (a
// wrong type or length, a number that does not parse or is out of range)
// is an error wrapping ErrReply; ParseReply never panics.
func ParseReply(reply any, nkeys int) (now int64, results []algo.Result, err error) {
	return parse(reply, nkeys, 4)
}

// ParsePartialReply checks and converts the reply of a Partial call whose
// keys asked ns[i] events each: the instant, one result per key and the
// events granted to each, as ParseReply does. A grant must be in [0,
// ns[i]] and, for ns[i] > 0, agree with its result (allowed iff something
// was granted, RetryAfter 0 iff all ns[i] were), else the reply is
// malformed (ErrReply). (The result of ns[i] = 0 is a peek's, which a
// sliding log holding more than the burst, after a change of limit,
// denies.)
func ParsePartialReply(reply any, ns []int64) (now int64, results []algo.Result, granted []int64, err error) {
	if now, results, err = parse(reply, len(ns), 5); err != nil {
		return 0, nil, nil, err
	}
	a := reply.([]any) // parse checked it
	granted = make([]int64, len(ns))
	for i, n := range ns {
		j := 5 + 5*i
		if n < 0 {
			return 0, nil, nil, fmt.Errorf("%w: key %d asked %d events", ErrReply, i, n)
		}
		if granted[i], err = field(a, j, n); err != nil {
			return 0, nil, nil, err
		}
		r, g := results[i], granted[i]
		if n > 0 && (r.Allowed != (g > 0) || (r.RetryAfter == 0) != (g == n)) {
			return 0, nil, nil, fmt.Errorf("%w: key %d: %d of %d granted, but %+v", ErrReply, i, g, n, r)
		}
	}
	return now, results, granted, nil
}

// parse checks and converts a reply of width elements per key, whose first
// four are the key's result.
func parse(reply any, nkeys, width int) (now int64, results []algo.Result, err error) {
	a, ok := reply.([]any)
	if !ok {
		return 0, nil, fmt.Errorf("%w: got %T, want an array", ErrReply, reply)
	}
	if nkeys < 0 || len(a) != 1+width*nkeys {
		return 0, nil, fmt.Errorf("%w: %d elements for %d keys", ErrReply, len(a), nkeys)
	}
	if now, err = field(a, 0, algo.MaxTime); err != nil {
		return 0, nil, err
	}
	results = make([]algo.Result, nkeys)
	for i := range results {
		r := &results[i]
		j := 1 + width*i
		switch v := a[j].(type) {
		case int64:
			if v != 0 && v != 1 {
				return 0, nil, fmt.Errorf("%w: element %d: allowed is %d, want 0 or 1", ErrReply, j, v)
			}
			r.Allowed = v == 1
		default:
			return 0, nil, fmt.Errorf("%w: element %d: allowed is %T, want an integer", ErrReply, j, v)
		}
		if r.Remaining, err = field(a, j+1, algo.Never); err != nil {
			return 0, nil, err
		}
		if r.RetryAfter, err = field(a, j+2, algo.Never); err != nil {
			return 0, nil, err
		}
		if r.ResetAfter, err = field(a, j+3, algo.Never); err != nil {
			return 0, nil, err
		}
	}
	return now, results, nil
}

// field returns a[j], an integer reply or a decimal string in [0, most].
func field(a []any, j int, most int64) (int64, error) {
	switch v := a[j].(type) {
	case int64:
		if v >= 0 && v <= most {
			return v, nil
		}
	case string:
		if v, ok := parseDec(v, most); ok {
			return v, nil
		}
	default:
		return 0, fmt.Errorf("%w: element %d is %T, want an integer or a decimal string", ErrReply, j, v)
	}
	return 0, fmt.Errorf("%w: element %d is %.40q, want an integer in [0, %d]", ErrReply, j, fmt.Sprint(a[j]), most)
}

// parseDec parses s as strconv.FormatInt writes a value in [0, most].
func parseDec(s string, most int64) (int64, bool) {
	if len(s) == 0 || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + uint64(c) // at most 19 digits: below 2^64
	}
	if v > uint64(most) {
		return 0, false
	}
	return int64(v), true
}
