package lua_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

func TestCode(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range admit.Algorithms() {
		c, ok := lua.Code(a)
		if !ok || c == "" || seen[c] {
			t.Fatalf("Code(%v) = %q, %v", a, c, ok)
		}
		seen[c] = true
	}
	if _, ok := lua.Code(admit.Algorithm(200)); ok {
		t.Fatal("Code of an unknown algorithm is ok")
	}
}

func TestAllOrNothing(t *testing.T) {
	e := newEnv(t)
	a, b := e.prefix+"a", e.prefix+"b"
	p10 := mustCompile(t, 10, time.Second, 0)
	p1 := mustCompile(t, 1, time.Second, 0)
	// b has room for one: take it.
	if r := e.mustCall(lua.Independent, t0, req{b, lua.CodeGCRA, 1, p1}); !r[0].Allowed {
		t.Fatal("first request on b denied")
	}
	before := e.get(b)
	// a fits, b does not: nothing is written.
	r := e.mustCall(lua.AllOrNothing, t0, req{a, lua.CodeGCRA, 1, p10}, req{b, lua.CodeGCRA, 1, p1})
	if !r[0].Allowed || r[1].Allowed {
		t.Fatalf("got %+v, want a allowed and b denied", r)
	}
	if v := e.get(a); v != "" {
		t.Fatalf("a was written (%q) though b was denied", v)
	}
	if v := e.get(b); v != before {
		t.Fatalf("b changed from %q to %q", before, v)
	}
	// Independent: a is written though b is denied.
	r = e.mustCall(lua.Independent, t0, req{a, lua.CodeGCRA, 1, p10}, req{b, lua.CodeGCRA, 1, p1})
	if !r[0].Allowed || r[1].Allowed {
		t.Fatalf("got %+v, want a allowed and b denied", r)
	}
	if v := e.get(a); v != "g"+strconv.FormatInt(t0+1e8, 10) {
		t.Fatalf("a = %q after an independent admission", v)
	}
	// Once b has room again, both are admitted and written.
	r = e.mustCall(lua.AllOrNothing, t0+1e9, req{a, lua.CodeGCRA, 1, p10}, req{b, lua.CodeGCRA, 1, p1})
	if !r[0].Allowed || !r[1].Allowed {
		t.Fatalf("got %+v, want both allowed", r)
	}
	if e.get(a) != "g"+strconv.FormatInt(t0+1e9+1e8, 10) || e.get(b) != "g"+strconv.FormatInt(t0+2e9, 10) {
		t.Fatalf("a = %q, b = %q", e.get(a), e.get(b))
	}
}

func TestRepeatedKey(t *testing.T) {
	e := newEnv(t)
	k := e.prefix + "k"
	p := mustCompile(t, 2, time.Second, 0) // burst 2, T = 500ms
	for _, mode := range []string{lua.AllOrNothing, lua.Independent} {
		// The second sees the first's pending admission; the third, the
		// first two.
		r := e.mustCall(mode, t0, req{k, lua.CodeGCRA, 1, p}, req{k, lua.CodeGCRA, 1, p}, req{k, lua.CodeGCRA, 1, p})
		want := []algo.Result{
			{Allowed: true, Remaining: 1, ResetAfter: 5e8},
			{Allowed: true, Remaining: 0, ResetAfter: 1e9},
			{Allowed: false, Remaining: 0, RetryAfter: 5e8, ResetAfter: 1e9},
		}
		for i := range want {
			if r[i] != want[i] {
				t.Fatalf("mode %s: result %d = %+v, want %+v", mode, i, r[i], want[i])
			}
		}
		switch v := e.get(k); mode {
		case lua.AllOrNothing:
			if v != "" {
				t.Fatalf("all-or-nothing with a denial wrote %q", v)
			}
		case lua.Independent:
			if v != "g"+strconv.FormatInt(t0+1e9, 10) {
				t.Fatalf("independent wrote %q", v)
			}
		}
	}
	// The same key with two algorithms of different states is refused.
	k2 := e.prefix + "k2"
	_, _, err := e.call(lua.Independent, "100", "0", req{k2, lua.CodeGCRA, 1, p}, req{k2, lua.CodeFixedWindow, 1, p})
	if err == nil || !strings.HasPrefix(err.Error(), "admit: ") {
		t.Fatalf("two state types on one key: err = %v", err)
	}
	// The token bucket and the leaky bucket meter share their state.
	r := e.mustCall(lua.Independent, t0, req{k2, lua.CodeTokenBucket, 2, p}, req{k2, lua.CodeLeakyBucket, 1, p})
	if !r[0].Allowed || r[1].Allowed {
		t.Fatalf("tb then lb on one key: %+v", r)
	}
}

func TestRedisTime(t *testing.T) {
	e := newEnv(t)
	p := mustCompile(t, 10, time.Second, 0)
	before := time.Now()
	now, res, err := e.call(lua.Independent, lua.RedisTime, "0", req{e.prefix + "k", lua.CodeGCRA, 1, p})
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if now < before.Add(-time.Second).UnixNano() || now > after.Add(time.Second).UnixNano() {
		t.Fatalf("now = %v, want within a second of %v", time.Unix(0, now), before)
	}
	if now%1000 != 0 {
		t.Fatalf("now = %d is not whole microseconds", now)
	}
	if !res[0].Allowed {
		t.Fatal("denied")
	}
	// The state is at the instant Redis gave.
	if v := e.get(e.prefix + "k"); v != "g"+strconv.FormatInt(now+1e8, 10) {
		t.Fatalf("stored %q, want TAT %d", v, now+1e8)
	}
}

func TestClampedNow(t *testing.T) {
	e := newEnv(t)
	p := mustCompile(t, 10, time.Second, 0)
	for _, c := range []struct {
		now  string
		want int64
	}{
		{"-1", 0}, {"-9223372036854775808", 0}, {"0", 0}, {"4611686018427387904", algo.MaxTime},
		{"4611686018427387905", algo.MaxTime}, {"9223372036854775807", algo.MaxTime},
	} {
		now, _, err := e.call(lua.Independent, c.now, "0", req{e.prefix + "k" + c.now, lua.CodeGCRA, 0, p})
		if err != nil || now != c.want {
			t.Errorf("now %s: got %d, %v; want %d", c.now, now, err, c.want)
		}
	}
}

// TestTTL checks the expiry of written keys: PX = max(ceil(ResetAfter/1ms)+1,
// minimum TTL), for every algorithm.
func TestTTL(t *testing.T) {
	e := newEnv(t)
	p := mustCompile(t, 10, time.Second, 0) // burst 10, T = 100ms, W = 1s
	for _, code := range codes {
		key := e.prefix + "ttl:" + code
		now := t0 + 123456789
		_, r, err := e.call(lua.Independent, strconv.FormatInt(now, 10), "0", req{key, code, 3, p})
		if err != nil {
			t.Fatal(err)
		}
		want := (r[0].ResetAfter+999_999)/1_000_000 + 1
		pttl, err := e.rdb.PTTL(e.ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ms := pttl.Milliseconds(); ms > want || ms < want-200 {
			t.Errorf("%s: PTTL %dms after ResetAfter %v, want %dms", code, ms, time.Duration(r[0].ResetAfter), want)
		}
		// With a larger minimum TTL, the minimum applies.
		_, _, err = e.call(lua.Independent, strconv.FormatInt(now, 10), "3600000", req{key, code, 1, p})
		if err != nil {
			t.Fatal(err)
		}
		if pttl, _ := e.rdb.PTTL(e.ctx, key).Result(); pttl < 3599*time.Second || pttl > time.Hour {
			t.Errorf("%s: PTTL %v with a minimum TTL of 1h", code, pttl)
		}
		// A denial does not touch the TTL.
		if err := e.rdb.PExpire(e.ctx, key, 5*time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		_, r, err = e.call(lua.Independent, strconv.FormatInt(now, 10), "0", req{key, code, 11, p})
		if err != nil || r[0].Allowed {
			t.Fatalf("%s: n > burst: %+v, %v", code, r, err)
		}
		if pttl, _ := e.rdb.PTTL(e.ctx, key).Result(); pttl < 4*time.Hour {
			t.Errorf("%s: a denial changed the TTL to %v", code, pttl)
		}
	}
	// In Redis TIME mode the expiry is exact: Redis 7 freezes the clock
	// during a script, so PEXPIRETIME - floor(now/1ms) is the PX the script
	// set (or 1ms more: the frozen clock may have passed TIME's millisecond),
	// and the key lives at least until now + ResetAfter.
	odd := mustCompile(t, 1, time.Second+1, 3) // ResetAfter not a whole ms
	for _, code := range codes {
		key := e.prefix + "ttl:exact:" + code
		now, r, err := e.call(lua.Independent, lua.RedisTime, "0", req{key, code, 1, odd}) // ResetAfter 1s+1ns
		if err != nil || !r[0].Allowed {
			t.Fatal(r, err)
		}
		at, err := e.rdb.Do(e.ctx, "PEXPIRETIME", key).Int64()
		if err != nil {
			t.Skipf("PEXPIRETIME: %v (Redis < 7)", err)
		}
		want := (r[0].ResetAfter+999_999)/1_000_000 + 1
		if px := at - now/1_000_000; px < want || px > want+1 || at*1_000_000 < now+r[0].ResetAfter {
			t.Errorf("%s: PX %dms (expiry %d) after ResetAfter %dns at %d, want %dms", code, px, at, r[0].ResetAfter, now, want)
		}
	}
	// A TTL in Redis TIME mode: the key outlives ResetAfter and expires.
	key := e.prefix + "ttl:time"
	short := mustCompile(t, 1, 20*time.Millisecond, 0)
	_, r, err := e.call(lua.Independent, lua.RedisTime, "0", req{key, lua.CodeGCRA, 1, short})
	if err != nil || !r[0].Allowed {
		t.Fatal(r, err)
	}
	if pttl, _ := e.rdb.PTTL(e.ctx, key).Result(); pttl <= 0 || pttl > 21*time.Millisecond {
		t.Fatalf("PTTL %v for ResetAfter 20ms", pttl)
	}
}

// TestResetAfterForgets checks the rule behind the TTL in Go: at any
// instant from ResetAfter after a step that changed a state on, the state
// decides exactly as a missing key (the zero state) does, and leaves the
// same state behind.
func TestResetAfterForgets(t *testing.T) {
	rng := newRand(99)
	for range 3000 {
		code := codes[rng.IntN(len(codes))]
		p := genParams(rng, window(code))
		now := clampTo(t0+int64(rng.Uint64()>>40), 0, algo.MaxTime)
		if rng.IntN(4) == 0 {
			now = upTo(rng, algo.MaxTime)
		}
		st := genState(rng, code, &p, now)
		for range 20 {
			n := genN(rng, &p)
			next, r := refStep(code, st, &p, now, n)
			changed := !sameState(next, st)
			st = next
			if changed {
				for _, d := range []int64{0, 1, int64(rng.Uint64() >> 20), upTo(rng, algo.MaxTime)} {
					at := min(addSat(addSat(now, r.ResetAfter), d), algo.MaxTime)
					if addSat(now, r.ResetAfter) > algo.MaxTime {
						break // never forgotten before the end of the time line
					}
					m := genN(rng, &p)
					s1, r1 := refStep(code, st, &p, at, m)
					s0, r0 := refStep(code, zeroState(code), &p, at, m)
					if r1 != r0 || (r1.Allowed && m > 0 && !sameState(s1, s0)) {
						t.Fatalf("%s %+v: state %s from %d with ResetAfter %d; at %d n=%d: %+v (%s), missing key: %+v (%s)",
							code, p, showState(st), now, r.ResetAfter, at, m, r1, showState(s1), r0, showState(s0))
					}
				}
			}
			now = clampTo(around(rng, &p, now), 0, algo.MaxTime)
		}
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t)
	p := mustCompile(t, 10, time.Second, 0)
	good := e.prefix + "good"
	hash := e.prefix + "hash"
	if err := e.rdb.HSet(e.ctx, hash, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	// Every error leaves the earlier keys of its call unwritten.
	expectErr := func(name string, reqs ...req) {
		t.Helper()
		_, _, err := e.call(lua.Independent, strconv.FormatInt(t0, 10), "0", append([]req{{good, lua.CodeGCRA, 1, p}}, reqs...)...)
		if err == nil || !strings.HasPrefix(err.Error(), "admit: ") {
			t.Errorf("%s: err = %v, want an error starting with \"admit: \"", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
		if v := e.get(good); v != "" {
			t.Errorf("%s: the call wrote %q before failing", name, v)
		}
	}
	for _, code := range codes {
		expectErr("hash key, "+code, req{hash, code, 1, p})
	}
	garbage := []string{"", "garbage", "g", "g-1", "g1.5", "g1:", "g1:2:3", "g1:-2", "g99999999999999999999",
		"g9223372036854775807", "b1", "b1:2:3", "b-1:2", "b9223372036854775807:1", "f1", "fx:1", "f4611686018427387905:1",
		"s1:2", "s1:2:3:4", "l", "l1", "l1:0", "l1:1,", "l1:1,0:1", "l1:1,,2:1", "l5:1;2:1", "l4611686018427387904:1,1:1",
		"l1:9223372036854775807,1:1", "x1:2", strings.Repeat("9", 1<<20), "g" + strings.Repeat("1", 1<<20)}
	for i, v := range garbage {
		for _, code := range codes {
			key := e.prefix + "garbage:" + strconv.Itoa(i)
			if err := e.rdb.Set(e.ctx, key, v, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := decodeState(code, v); err == nil && v != "" {
				continue // a valid state of this algorithm
			}
			expectErr("value "+strconvQuote(v)+", "+code, req{key, code, 1, p})
		}
	}
	// Instants past MaxTime, decided at MaxTime (near them).
	for i, v := range []string{"l4611686018427387900:1,5:1", "b4611686018427387905:1", "g6917529027641081857"} {
		key := e.prefix + "pastmax:" + strconv.Itoa(i)
		if err := e.rdb.Set(e.ctx, key, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		code := map[byte]string{'l': lua.CodeSlidingLog, 'b': lua.CodeTokenBucket, 'g': lua.CodeGCRA}[v[0]]
		_, _, err := e.call(lua.Independent, strconv.FormatInt(algo.MaxTime, 10), "0", req{key, code, 1, p})
		if err == nil || !strings.HasPrefix(err.Error(), "admit: ") {
			t.Errorf("%q at MaxTime: err = %v", v, err)
		}
	}
	// A state of another algorithm.
	other := e.prefix + "other"
	e.mustCall(lua.Independent, t0, req{other, lua.CodeSlidingWindow, 1, p})
	expectErr("sliding window state read as gcra", req{other, lua.CodeGCRA, 1, p})

	// Malformed arguments.
	key := e.prefix + "args"
	bad := func(name string, args ...any) {
		t.Helper()
		_, err := e.script.Run(e.ctx, e.rdb, []string{key}, args...).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "admit: ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	// ok is: mode, now, minTTL, 1 limit, the limit (code, Mode, Burst, Tn,
	// Td, CapN), then key 1's limit index and n.
	ok := append([]any{"0", "100", "0", "1"}, lua.NewLimit(lua.CodeGCRA, &p)[:]...)
	ok = append(ok, "1", "1")
	with := func(i int, v any) []any {
		a := append([]any(nil), ok...)
		a[i] = v
		return a
	}
	bad("no arguments")
	bad("too few", "0", "100", "0", "1", "gcra")
	bad("too many", append(with(0, "0"), "x")...)
	for _, c := range []struct {
		i int
		v string
	}{
		{0, "4"}, {0, ""}, {1, "x"}, {1, "--1"}, {1, "99999999999999999999"}, {1, "-99999999999999999999"},
		{1, "1.5"}, {1, "inf"}, {1, "nan"}, {1, "1e300"},
		{2, "-1"}, {2, ""}, {2, "1.5"},
		{3, "2"}, {3, "0"}, {3, "x"}, {3, "-1"},
		{4, "token_bucket"}, {4, ""}, {11, "-1"}, {11, "0.5"}, {11, "9223372036854775808"},
		{5, "3"}, {5, ""}, {6, "0"}, {6, "-1"}, {7, "0"}, {8, "0"}, {9, "999"}, {9, "x"},
		{10, "0"}, {10, "2"}, {10, "x"}, {10, "1.5"}, {10, ""},
	} {
		bad("argument "+strconv.Itoa(c.i+1)+" = "+strconvQuote(c.v), with(c.i, c.v)...)
		if c.i > 0 { // and in refund mode
			a := with(c.i, c.v)
			a[0] = lua.Refund
			bad("refund: argument "+strconv.Itoa(c.i+1)+" = "+strconvQuote(c.v), a...)
		}
	}
	// Limits algo.Compile cannot produce.
	for _, q := range []algo.Params{
		{Mode: algo.Normal, Burst: 10, Tn: 1e8, Td: 1, CapN: 1e9 + 1},
		{Mode: algo.Normal, Burst: 1 << 40, Tn: 1 << 40, Td: 1, CapN: 0},
		{Mode: algo.Normal, Burst: 1, Tn: math.MaxInt64, Td: 1, CapN: math.MaxInt64}, // longer than MaxSpan
	} {
		bad("params "+strconvQuote(q), oneKey(lua.CodeGCRA, &q)...)
	}
	sub := algo.Params{Mode: algo.Normal, Burst: 1, Tn: 1, Td: 2, CapN: 1} // window of 1/2 ns
	bad("sub-ns window", oneKey(lua.CodeFixedWindow, &sub)...)
	if _, _, err := e.call(lua.Independent, "100", "0", req{key, lua.CodeGCRA, 1, sub}); err != nil {
		t.Errorf("a sub-ns T is fine for gcra: %v", err)
	}
}

// TestDegenerateModesReadNothing: an unlimited or closed limit decides
// without reading the key, as the Go step functions do.
func TestDegenerateModesReadNothing(t *testing.T) {
	e := newEnv(t)
	hash := e.prefix + "hash"
	if err := e.rdb.HSet(e.ctx, hash, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	inf := mustCompile(t, algo.InfRate, 0, 5)
	closed := mustCompile(t, 0, 0, 0)
	for _, code := range codes {
		r := e.mustCall(lua.Independent, t0, req{hash, code, 7, inf}, req{hash, code, 0, closed}, req{hash, code, 1, closed})
		want := []algo.Result{{Allowed: true, Remaining: math.MaxInt64}, {Allowed: true}, {RetryAfter: algo.Never}}
		for i := range want {
			if r[i] != want[i] {
				t.Errorf("%s: result %d = %+v, want %+v", code, i, r[i], want[i])
			}
		}
	}
}

// TestKeyBytes: the script never parses keys, so any bytes do.
func TestKeyBytes(t *testing.T) {
	e := newEnv(t)
	p := mustCompile(t, 1, time.Second, 0)
	for _, suffix := range []string{"\x00", "{", "}", "{}", "{a}b", "\xff\xfe", "\r\n", strings.Repeat("{k}\x00", 1<<18)} {
		key := e.prefix + suffix
		for i, want := range []bool{true, false} {
			r := e.mustCall(lua.Independent, t0, req{key, lua.CodeGCRA, 1, p})
			if r[0].Allowed != want {
				t.Fatalf("key of %d bytes, request %d: allowed = %v", len(key), i, r[0].Allowed)
			}
		}
		if v := e.get(key); v != "g"+strconv.FormatInt(t0+1e9, 10) {
			t.Fatalf("key of %d bytes holds %q", len(key), v)
		}
		e.rdb.Del(e.ctx, key)
	}
}

func strconvQuote(v any) string {
	s := strconv.Quote(strings.TrimSpace(strings.ReplaceAll(fmtAny(v), "\n", " ")))
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

func fmtAny(v any) string { return fmt.Sprint(v) }

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

// TestCluster runs the script on a Redis Cluster: keys that share a hash
// tag, all-or-nothing, with Redis TIME and an explicit instant.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx := context.Background()
	rdb := redistest.SharedCluster(t).Client(t)
	script := redis.NewScript(lua.Decide)
	p := mustCompile(t, 1, time.Second, 0)
	tag := "{" + redistest.Prefix(t) + "}"
	keys := []string{tag + "a", tag + "b", tag + "a"}
	var args []any
	var a lua.Args
	l := lua.NewLimit(lua.CodeGCRA, &p)
	for _, mode := range []string{lua.RedisTime, strconv.FormatInt(t0, 10)} {
		a.Reset()
		for range keys {
			a.Add(l, 1)
		}
		args = a.Append(args[:0], lua.AllOrNothing, mode, "0")
		v, err := script.Run(ctx, rdb, keys, args...).Result()
		if err != nil {
			t.Fatal(err)
		}
		_, res, err := lua.ParseReply(v, len(keys))
		if err != nil {
			t.Fatal(err)
		}
		// a and b fit; a again does not: nothing is written.
		if !res[0].Allowed || !res[1].Allowed || res[2].Allowed {
			t.Fatalf("%s: %+v", mode, res)
		}
		if n, err := rdb.Exists(ctx, tag+"a", tag+"b").Result(); err != nil || n != 0 {
			t.Fatalf("%s: %d keys written, %v", mode, n, err)
		}
	}
}

// oneKey returns the arguments of one independent key at 100 ns with no
// minimum TTL, n = 1 under limit p of code.
func oneKey(code string, p *algo.Params) []any {
	var a lua.Args
	a.Add(lua.NewLimit(code, p), 1)
	return a.Append(nil, lua.Independent, "100", "0")
}

// TestRefundMode: refunds give events back and reply a peek's result; a
// missing key stays missing, an emptied log is deleted, a degenerate limit
// reads nothing, and the key's TTL follows its new ResetAfter.
func TestRefundMode(t *testing.T) {
	e := newEnv(t)
	p := mustCompile(t, 10, time.Hour, 0) // T = 6min, B = 10
	call := func(mode string, reqs ...req) []algo.Result {
		t.Helper()
		_, res, err := e.call(mode, strconv.FormatInt(t0, 10), "0", reqs...)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, code := range codes {
		key := e.prefix + "refund:" + code
		// A missing key is full: nothing is written.
		r := call(lua.Refund, req{key, code, 3, p})
		if want := (algo.Result{Allowed: true, Remaining: 10}); r[0] != want {
			t.Errorf("%s: refund of a missing key: %+v", code, r[0])
		}
		if v := e.get(key); v != "" {
			t.Errorf("%s: refund of a missing key wrote %q", code, v)
		}
		a := call(lua.Independent, req{key, code, 6, p})
		if !a[0].Allowed || a[0].Remaining != 4 {
			t.Fatalf("%s: admission: %+v", code, a[0])
		}
		// Two refunds in one call: each sees the other's state.
		r = call(lua.Refund, req{key, code, 2, p}, req{key, code, 1, p})
		if r[0].Remaining != 6 || r[1].Remaining != 7 || !r[0].Allowed || r[0].RetryAfter != 0 {
			t.Errorf("%s: refunds: %+v", code, r)
		}
		// The key expires when its new state is full: a bucket sooner, a
		// window still when it ends, the approximate sliding window sooner
		// (fewer events weigh less than one event sooner).
		reset := r[1].ResetAfter
		sooner := !window(code) || code == lua.CodeSlidingWindowApprox
		if (sooner && reset >= a[0].ResetAfter) || (!sooner && reset != a[0].ResetAfter) {
			t.Errorf("%s: ResetAfter %v after the refunds, %v before", code, time.Duration(reset), time.Duration(a[0].ResetAfter))
		}
		if got := e.rdb.PTTL(e.ctx, key).Val(); got <= 0 || got > time.Duration(reset)+2*time.Millisecond {
			t.Errorf("%s: TTL %v after the refunds, ResetAfter %v", code, got, time.Duration(reset))
		}
		r = call(lua.Refund, req{key, code, 1 << 62, p})
		if want := (algo.Result{Allowed: true, Remaining: 10}); r[0] != want {
			t.Errorf("%s: refund of everything: %+v", code, r[0])
		}
		if v := e.get(key); code == lua.CodeSlidingLog && v != "" {
			t.Errorf("%s: an emptied log is kept: %q", code, v)
		}
		if r := call(lua.Independent, req{key, code, 10, p}); !r[0].Allowed {
			t.Errorf("%s: the whole burst after the refunds: %+v", code, r[0])
		}
	}
	// Degenerate limits read nothing and reply a peek's result.
	hash := e.prefix + "refund:hash"
	if err := e.rdb.HSet(e.ctx, hash, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	inf := mustCompile(t, algo.InfRate, 0, 5)
	closed := mustCompile(t, 0, 0, 0)
	for _, code := range codes {
		r := call(lua.Refund, req{hash, code, 7, inf}, req{hash, code, 3, closed})
		if want := []algo.Result{{Allowed: true, Remaining: math.MaxInt64}, {Allowed: true}}; r[0] != want[0] || r[1] != want[1] {
			t.Errorf("%s: %+v", code, r)
		}
	}
	// A refund of a key holding another type fails and writes nothing.
	if _, _, err := e.call(lua.Refund, "100", "0", req{hash, lua.CodeGCRA, 1, p}); err == nil || !strings.HasPrefix(err.Error(), "admit: ") {
		t.Errorf("refund of a hash: %v", err)
	}
}
