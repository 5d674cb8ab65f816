package lua_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

// The differential test: random timelines of calls, each deciding one or
// more keys at one instant, run through the script and through the Go step
// functions, which must agree on every result and on every stored state.

// chooser is where a timeline's random choices come from: *rand.Rand for
// the random test, fuzz bytes for FuzzDecide.
type chooser interface {
	IntN(n int) int
	Uint64() uint64
}

// byteChooser takes its choices from fuzz input; when the input is used up
// every choice is 0 and done is set.
type byteChooser struct {
	b    []byte
	done bool
}

func (c *byteChooser) IntN(n int) int {
	if len(c.b) == 0 {
		c.done = true
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	if n > 256 && len(c.b) > 0 {
		v = v<<8 | int(c.b[0])
		c.b = c.b[1:]
	}
	return v % n
}

func (c *byteChooser) Uint64() uint64 {
	var buf [8]byte
	k := copy(buf[:], c.b)
	c.b = c.b[k:]
	if k == 0 {
		c.done = true
	}
	return binary.LittleEndian.Uint64(buf[:])
}

// upTo returns a value in [0, max], log-uniform in its bit length, or max
// itself sometimes.
func upTo(c chooser, max int64) int64 {
	if max <= 0 {
		return 0
	}
	if c.IntN(8) == 0 {
		return max
	}
	bits := 64 - uint(c.IntN(64))
	v := int64(c.Uint64() >> bits)
	if v > max || v < 0 {
		v = int64(c.Uint64() % uint64(max+1))
	}
	return v
}

func pick[T any](c chooser, xs ...T) T { return xs[c.IntN(len(xs))] }

// genParams returns a compiled limit, valid for a window algorithm if
// window: usual limits, fractional ones (3/s, 7/13ns, 100003/day), limits
// at the edges of what Compile accepts, and the two degenerate modes.
func genParams(c chooser, window bool) algo.Params {
	for {
		var rate, period, burst int64
		switch c.IntN(12) {
		case 0:
			rate, period, burst = algo.InfRate, 0, upTo(c, math.MaxInt64)
		case 1:
			rate, period, burst = 0, 0, 0
		case 2:
			l := pick(c, [3]int64{3, 1e9, 0}, [3]int64{7, 13, 0}, [3]int64{100003, 86400e9, 0},
				[3]int64{1, 1 << 60, 1}, [3]int64{3, 1<<61 + 1, 1}, [3]int64{1<<62 - 57, 1 << 62, 1},
				[3]int64{1 << 62, 1, 1 << 62}, [3]int64{math.MaxInt64 - 1, 1, math.MaxInt64},
				[3]int64{1000, 7e9, 0}, [3]int64{7, 13, 1}, [3]int64{13, 7, 0}, [3]int64{1, 1, 1},
				[3]int64{2, 3, 5}, [3]int64{1e9, 1e9, 0}, [3]int64{10, 1e9, 1})
			rate, period, burst = l[0], l[1], l[2]
		case 3, 4:
			rate, period, burst = upTo(c, math.MaxInt64-1)+1, upTo(c, math.MaxInt64-1)+1, upTo(c, math.MaxInt64)
		default:
			rate = pick[int64](c, 1, 2, 3, 5, 7, 10, 13, 100, 1000, 1e6)
			period = pick[int64](c, 1, 7, 13, 1000, 1e6, 3e6, 1e9, 7e9, 60e9, 3600e9, 86400e9)
			burst = pick(c, 0, 0, 1, 2, 3, 5, rate*2, int64(c.IntN(20)))
		}
		p, err := algo.Compile(rate, period, burst)
		if err == nil && window {
			err = p.CheckWindow()
		}
		if err == nil {
			return p
		}
	}
}

// windowIndex is algo's windowOf: floor(now×Td/CapN).
func windowIndex(p *algo.Params, now int64) int64 {
	x := new(big.Int).Mul(big.NewInt(now), big.NewInt(p.Td))
	return x.Quo(x, big.NewInt(p.CapN)).Int64()
}

func clampTo(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }

// addSat returns a+b within the int64 range.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// around returns an instant near now: within a few windows W or periods T,
// or anywhere.
func around(c chooser, p *algo.Params, now int64) int64 {
	t, w := int64(1), int64(1)
	if p.Mode == algo.Normal {
		t, w = max(1, p.Tn/p.Td), max(1, p.CapN/p.Td)
	}
	var d int64
	switch c.IntN(6) {
	case 0:
		return upTo(c, algo.MaxTime)
	case 1:
		d = upTo(c, 2*t)
	case 2:
		d = upTo(c, 3*w)
	default:
		d = upTo(c, w)
	}
	if c.IntN(2) == 0 {
		d = -d
	}
	return addSat(now, d)
}

// genState returns a random state of family code, plausible near now under
// p (or anything the stored form allows).
func genState(c chooser, code string, p *algo.Params, now int64) any {
	big := c.IntN(5) == 0
	count := func() int64 {
		if big || p.Mode != algo.Normal {
			return upTo(c, math.MaxInt64)
		}
		return upTo(c, min(2*p.Burst, math.MaxInt64/2))
	}
	win := func() int64 {
		if big || p.Mode != algo.Normal {
			return upTo(c, algo.MaxTime)
		}
		return clampTo(windowIndex(p, clampTo(now, 0, algo.MaxTime))+int64(c.IntN(3))-1, 0, algo.MaxTime)
	}
	switch family(code) {
	case lua.CodeGCRA:
		s := algo.GCRA{At: clampTo(around(c, p, now), 0, farFuture)}
		if big {
			s.At = upTo(c, farFuture)
		}
		if p.Mode == algo.Normal && p.Td > 1 {
			s.Frac = upTo(c, p.Td-1)
		}
		if big && c.IntN(2) == 0 {
			s.Frac = upTo(c, math.MaxInt64)
		}
		return s
	case lua.CodeTokenBucket:
		s := algo.Bucket{Last: clampTo(around(c, p, now), 0, algo.MaxTime)}
		if p.Mode == algo.Normal && !big {
			s.Level = upTo(c, min(p.CapN, math.MaxInt64/2)*2)
		} else {
			s.Level = upTo(c, math.MaxInt64)
		}
		return s
	case lua.CodeFixedWindow:
		return algo.FixedWindow{Win: win(), Count: count()}
	case lua.CodeSlidingWindow:
		return algo.SlidingWindow{Win: win(), Cur: count(), Prev: count()}
	case lua.CodeSlidingLog:
		k := 1 + c.IntN(8)
		var entries []algo.LogEntry
		at := clampTo(around(c, p, now), 0, algo.MaxTime)
		sum := int64(0)
		for range k {
			n := 1 + upTo(c, 3)
			if big {
				n = 1 + upTo(c, math.MaxInt64-1)
			}
			if n > math.MaxInt64-sum {
				break
			}
			sum += n
			entries = append(entries, algo.LogEntry{At: at, N: n})
			step := int64(1)
			if p.Mode == algo.Normal {
				step = 1 + upTo(c, max(1, p.CapN/p.Td/int64(k)))
			}
			if at > algo.MaxTime-step {
				break
			}
			at += step
		}
		return logOf(entries)
	}
	panic(code)
}

// genN returns a request size: 0, small, the burst, past it, or huge.
func genN(c chooser, p *algo.Params) int64 {
	b := p.Burst
	switch c.IntN(12) {
	case 0, 1:
		return 0
	case 2, 3, 4:
		return 1
	case 5, 6:
		return 1 + upTo(c, min(max(b-1, 0), 9))
	case 7:
		return upTo(c, b)
	case 8:
		return b
	case 9:
		if b < math.MaxInt64 {
			return b + 1
		}
		return b
	case 10:
		return math.MaxInt64
	}
	return upTo(c, math.MaxInt64)
}

type keySpec struct {
	code   string // the family's code for the initial state
	params []algo.Params
	init   any // state stored before the first call, or nil
}

type opSpec struct {
	key   int
	code  string
	p     algo.Params
	n     int64
	delay int64 // the maxDelay of "n:maxDelay" (GCRA and the buckets), 0 for none
}

type callSpec struct {
	all     bool
	refund  bool  // ops give their n back (lua.Refund)
	partial bool  // ops grant what fits of their n (lua.Partial)
	now     int64 // as sent; the script clamps it
	ops     []opSpec
}

type timeline struct {
	keys  []keySpec
	calls []callSpec
}

var codes = []string{lua.CodeGCRA, lua.CodeTokenBucket, lua.CodeLeakyBucket, lua.CodeFixedWindow, lua.CodeSlidingWindow, lua.CodeSlidingLog, lua.CodeSlidingWindowApprox}

// genTimeline returns a timeline of up to maxCalls calls over up to maxKeys
// keys.
func genTimeline(c chooser, maxKeys, maxCalls int) timeline {
	var tl timeline
	start := pick(c, int64(1_767_225_600_000_000_000), 0, algo.MaxTime, int64(1_767_225_600_000_000_000))
	start = addSat(start, int64(c.Uint64()>>34)-int64(1)<<29)
	if c.IntN(4) == 0 {
		start = upTo(c, algo.MaxTime)
	}
	nkeys := 1 + c.IntN(maxKeys)
	for range nkeys {
		code := pick(c, codes...)
		k := keySpec{code: code}
		for range 1 + c.IntN(3)/2 { // a second limit for a third of the keys
			k.params = append(k.params, genParams(c, window(code)))
		}
		if c.IntN(3) == 0 {
			k.init = genState(c, code, &k.params[0], start)
		}
		tl.keys = append(tl.keys, k)
	}
	now := start
	bc, _ := c.(*byteChooser)
	for range maxCalls {
		if bc != nil && bc.done {
			break
		}
		k0 := &tl.keys[c.IntN(nkeys)]
		p := &k0.params[0]
		switch c.IntN(10) {
		case 0, 1, 2:
			// the same instant
		case 3:
			now = addSat(now, -upTo(c, 3*max(1, p.CapN/max(p.Td, 1)))) // backwards
		case 4:
			now = pick(c, -1, math.MinInt64, algo.MaxTime+1, math.MaxInt64, 0, algo.MaxTime)
		default:
			now = clampTo(around(c, p, now), -1, math.MaxInt64)
			if now < start && c.IntN(2) == 0 {
				now = addSat(start, int64(c.IntN(1000)))
			}
		}
		call := callSpec{now: now}
		nops := 1
		if c.IntN(3) == 0 {
			nops = 2 + c.IntN(3)
			call.all = c.IntN(2) == 0
		}
		if !call.all && c.IntN(5) == 0 {
			call.refund = true
		}
		for range nops {
			ki := c.IntN(nkeys)
			k := &tl.keys[ki]
			code := k.code
			switch code {
			case lua.CodeTokenBucket, lua.CodeLeakyBucket:
				code = pick(c, lua.CodeTokenBucket, lua.CodeLeakyBucket)
			}
			p := k.params[c.IntN(len(k.params))]
			op := opSpec{key: ki, code: code, p: p, n: genN(c, &p)}
			if !call.refund && !window(code) && c.IntN(3) == 0 {
				// The delay mode: waits around a few emission intervals,
				// and bounds past the fast paths' range.
				op.delay = clampTo(pick(c, upTo(c, 4*max(1, p.CapN/max(p.Td, 1))), upTo(c, algo.MaxSpan), algo.MaxSpan, 1), 1, algo.MaxSpan)
			}
			call.ops = append(call.ops, op)
		}
		tl.calls = append(tl.calls, call)
	}
	return tl
}

// runner runs timelines against one Redis.
type runner struct {
	rdb    *redis.Client
	script *redis.Script
	prefix string
	seq    int
}

func newRunner(t testing.TB) *runner {
	return &runner{
		rdb:    redistest.Standalone(t).Client(t),
		script: redis.NewScript(lua.Decide),
		prefix: redistest.Prefix(t),
	}
}

const testMinTTL = "86400000" // one day: keys never vanish during a test

func (r *runner) run(t testing.TB, tl timeline) {
	t.Helper()
	ctx := context.Background()
	r.seq++
	names := make([]string, len(tl.keys))
	ref := make([]any, len(tl.keys))
	for i, k := range tl.keys {
		names[i] = fmt.Sprintf("%s%d:%d", r.prefix, r.seq, i)
		ref[i] = zeroState(k.code)
		if k.init != nil {
			ref[i] = k.init
			if v := encodeState(k.init); v != "" {
				if err := r.rdb.Set(ctx, names[i], v, time.Hour).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	defer r.rdb.Del(ctx, names...)
	var history []string
	for ci, call := range tl.calls {
		keys := make([]string, len(call.ops))
		mode := lua.Independent
		switch {
		case call.all:
			mode = lua.AllOrNothing
		case call.refund:
			mode = lua.Refund
		case call.partial:
			mode = lua.Partial
		}
		var a lua.Args
		type limitOf struct {
			code string
			p    algo.Params
		}
		shared := map[limitOf]*lua.Limit{} // each limit once per call, as redisstore sends it
		for i, op := range call.ops {
			keys[i] = names[op.key]
			l := shared[limitOf{op.code, op.p}]
			if l == nil || i%3 == 2 { // and now and then again
				l = lua.NewLimit(op.code, &op.p)
				shared[limitOf{op.code, op.p}] = l
			}
			a.AddDelay(l, op.n, op.delay)
		}
		args := a.Append(nil, mode, strconv.FormatInt(call.now, 10), testMinTTL)
		// The reference: the same steps at the clamped instant, each key
		// seeing the state pending from the earlier ops of the call.
		now := algo.Clamp(call.now)
		pending := append([]any(nil), ref...)
		want := make([]algo.Result, len(call.ops))
		wantGranted := make([]int64, len(call.ops))
		ns := make([]int64, len(call.ops))
		allowed := true
		for i, op := range call.ops {
			ns[i] = op.n
			switch {
			case call.refund:
				pending[op.key], want[i] = refRefund(op.code, pending[op.key], &op.p, now, op.n)
			case call.partial:
				pending[op.key], want[i], wantGranted[i] = refPartial(op.code, pending[op.key], &op.p, now, op.n)
			case op.delay > 0:
				pending[op.key], want[i] = refDelay(op.code, pending[op.key], &op.p, now, op.n, op.delay)
			default:
				pending[op.key], want[i] = refStep(op.code, pending[op.key], &op.p, now, op.n)
			}
			allowed = allowed && want[i].Allowed
		}
		if !call.all || allowed {
			ref = pending
		}
		for _, op := range call.ops {
			history = append(history, fmt.Sprintf("call %d all=%v refund=%v partial=%v now=%d key %d %s n=%d delay=%d %+v", ci, call.all, call.refund, call.partial, call.now, op.key, op.code, op.n, op.delay, op.p))
		}
		reply, err := r.script.Run(ctx, r.rdb, keys, args...).Result()
		if err != nil {
			t.Fatalf("%v\nhistory:\n%s", err, strings.Join(history, "\n"))
		}
		var gotNow int64
		var got []algo.Result
		granted := make([]int64, len(keys))
		if call.partial {
			gotNow, got, granted, err = lua.ParsePartialReply(reply, ns)
		} else {
			gotNow, got, err = lua.ParseReply(reply, len(keys))
		}
		if err != nil {
			t.Fatalf("%v\nhistory:\n%s", err, strings.Join(history, "\n"))
		}
		if gotNow != now {
			t.Fatalf("call %d: now %d, want %d", ci, gotNow, now)
		}
		for i := range got {
			if got[i] != want[i] || granted[i] != wantGranted[i] {
				t.Fatalf("call %d op %d: script %+v granting %d, Go %+v granting %d\ninitial states: %s\nhistory:\n%s",
					ci, i, got[i], granted[i], want[i], wantGranted[i], initStates(tl), strings.Join(history, "\n"))
			}
		}
		// Every stored state is the Go state.
		vals, err := r.rdb.MGet(ctx, names...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			s, _ := v.(string)
			st, err := decodeState(tl.keys[i].code, s)
			if err != nil {
				t.Fatalf("call %d key %d: %v", ci, i, err)
			}
			if !sameState(st, ref[i]) {
				t.Fatalf("call %d key %d: stored %s (%q), Go %s\ninitial states: %s\nhistory:\n%s",
					ci, i, showState(st), s, showState(ref[i]), initStates(tl), strings.Join(history, "\n"))
			}
		}
	}
}

func initStates(tl timeline) string {
	var parts []string
	for i, k := range tl.keys {
		if k.init != nil {
			parts = append(parts, fmt.Sprintf("key %d: %s", i, showState(k.init)))
		}
	}
	return strings.Join(parts, "; ")
}

func TestDifferential(t *testing.T) {
	r := newRunner(t)
	trials := 400
	if testing.Short() {
		trials = 50
	}
	rng := rand.New(rand.NewPCG(testSeed(t), 7))
	for range trials {
		r.run(t, genTimeline(rng, 3, 30))
	}
}

// testSeed returns the seed of a random test: $ADMIT_SEED, or the clock's
// nanoseconds, which it logs.
func testSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ADMIT_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (set ADMIT_SEED to run it again)", seed)
	return seed
}

// TestDifferentialEachAlgorithm runs timelines of one key per algorithm, so
// that each gets its share whatever the random draws.
func TestDifferentialEachAlgorithm(t *testing.T) {
	r := newRunner(t)
	rng := rand.New(rand.NewPCG(42, 42))
	for _, code := range codes {
		t.Run(code, func(t *testing.T) {
			for range 40 {
				r.run(t, oneAlgorithm(rng, code))
			}
		})
	}
}

// oneAlgorithm returns a timeline of one key of algorithm code.
func oneAlgorithm(rng *rand.Rand, code string) timeline {
	tl := genTimeline(rng, 1, 25)
	k := &tl.keys[0]
	if window(k.code) != window(code) {
		k.params = []algo.Params{genParams(rng, window(code))}
		for ci := range tl.calls {
			for oi := range tl.calls[ci].ops {
				tl.calls[ci].ops[oi].p = k.params[0]
			}
		}
	}
	if k.init != nil {
		k.init = genState(rng, code, &k.params[0], tl.calls[0].now)
	}
	k.code = code
	for ci := range tl.calls {
		for oi := range tl.calls[ci].ops {
			tl.calls[ci].ops[oi].code = code
			if window(code) {
				tl.calls[ci].ops[oi].delay = 0
			}
		}
	}
	return tl
}

// FuzzDecide drives the same comparison from fuzz input: go test runs the
// seeds; go test -fuzz FuzzDecide explores.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte("gcra at the edge of the time line"))
	f.Add([]byte{2, 0, 5, 1, 9, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{255, 254, 253, 252, 251, 250, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("sliding log with backwards instants and huge n: \x05\x05\x05\x03\x03\x03\x0a\x0a\x0a"))
	r := newRunner(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &byteChooser{b: data}
		r.run(t, genTimeline(c, 3, 40))
	})
}
