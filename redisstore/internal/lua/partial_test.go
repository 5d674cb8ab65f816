package lua_test

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

// The partial mode (lua.Partial) against refPartial, the loop of
// keyed.Limiter.AllowAtMost over the Go step functions.

// withPartial makes about half the calls of tl that decide keys on their
// own partial grants.
func withPartial(tl timeline, rng *rand.Rand) timeline {
	for i := range tl.calls {
		c := &tl.calls[i]
		if !c.all && !c.refund && rng.IntN(2) == 0 {
			c.partial = true
			for j := range c.ops {
				c.ops[j].delay = 0 // (the delay mode is not partial)
			}
		}
	}
	return tl
}

func TestDifferentialPartial(t *testing.T) {
	r := newRunner(t)
	trials := 300
	if testing.Short() {
		trials = 40
	}
	rng := rand.New(rand.NewPCG(testSeed(t), 15))
	for range trials {
		r.run(t, withPartial(genTimeline(rng, 3, 30), rng))
	}
	each := rand.New(rand.NewPCG(15, 18))
	for _, code := range codes {
		t.Run(code, func(t *testing.T) {
			for range 40 {
				r.run(t, withPartial(oneAlgorithm(each, code), each))
			}
		})
	}
}

// FuzzDecidePartial is FuzzDecide with partial calls, chosen by a
// generator seeded with the input's hash.
func FuzzDecidePartial(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte("a partial grant at the edge of the time line"))
	f.Add([]byte{2, 0, 5, 1, 9, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte("sliding log with backwards instants and huge n: \x05\x05\x05\x03\x03\x03\x0a\x0a\x0a"))
	r := newRunner(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		h := fnv.New64a()
		h.Write(data)
		tl := genTimeline(&byteChooser{b: data}, 3, 40)
		r.run(t, withPartial(tl, rand.New(rand.NewPCG(h.Sum64(), 1))))
	})
}

// TestPartialMode: directed cases of the partial mode for every algorithm:
// a part of n, all of it, nothing, a peek, more than the burst, keys met
// twice in a call, the degenerate limits, and bad arguments, which fail
// the call and write nothing.
func TestPartialMode(t *testing.T) {
	e := newEnv(t)
	p := mustCompile(t, 10, time.Hour, 0) // T = 6min, B = 10
	T := int64(6 * time.Minute)
	grant := func(reqs ...req) ([]algo.Result, []int64) {
		t.Helper()
		keys := make([]string, len(reqs))
		ns := make([]int64, len(reqs))
		var a lua.Args
		for i, r := range reqs {
			keys[i], ns[i] = r.key, r.n
			a.Add(lua.NewLimit(r.code, &r.p), r.n)
		}
		v, err := e.script.Run(e.ctx, e.rdb, keys, a.Append(nil, lua.Partial, strconv.FormatInt(t0, 10), "0")...).Result()
		if err != nil {
			t.Fatal(err)
		}
		_, res, g, err := lua.ParsePartialReply(v, ns)
		if err != nil {
			t.Fatal(err)
		}
		return res, g
	}
	for _, code := range codes {
		key := e.prefix + "partial:" + code
		r, g := grant(req{key, code, 4, p})
		if g[0] != 4 || !r[0].Allowed || r[0].Remaining != 6 || r[0].RetryAfter != 0 {
			t.Errorf("%s: 4 of a fresh 10: %d, %+v", code, g[0], r[0])
		}
		// 10 asked, 6 fit: granted, and one more waits (a bucket T, a
		// window its end). The same key twice in a call: the second sees
		// the first's grant.
		r, g = grant(req{key, code, 10, p}, req{key, code, 3, p})
		if g[0] != 6 || !r[0].Allowed || r[0].Remaining != 0 || r[0].RetryAfter <= 0 {
			t.Errorf("%s: 10 when 6 fit: %d, %+v", code, g[0], r[0])
		}
		if !window(code) && r[0].RetryAfter != T {
			t.Errorf("%s: RetryAfter %v after the grant, want T = %v", code, time.Duration(r[0].RetryAfter), time.Duration(T))
		}
		if g[1] != 0 || r[1].Allowed || r[1] != (algo.Result{RetryAfter: r[0].RetryAfter, ResetAfter: r[0].ResetAfter}) {
			t.Errorf("%s: 3 when none fit: %d, %+v (after %+v)", code, g[1], r[1], r[0])
		}
		if got := e.mustCall(lua.Independent, t0, req{key, code, 0, p}); got[0].Remaining != 0 {
			t.Errorf("%s: a peek after the grants: %+v", code, got[0])
		}
		// More than the burst, on a fresh key: the burst.
		r, g = grant(req{key + ":big", code, math.MaxInt64, p}, req{key + ":peek", code, 0, p})
		if g[0] != 10 || !r[0].Allowed || r[0].RetryAfter <= 0 || g[1] != 0 || r[1] != (algo.Result{Allowed: true, Remaining: 10}) {
			t.Errorf("%s: MaxInt64 and a peek: %v, %+v", code, g, r)
		}
		// The degenerate limits read nothing: unlimited grants any n,
		// closed nothing, for ever.
		inf, closed := mustCompile(t, algo.InfRate, 0, 5), mustCompile(t, 0, 0, 0)
		r, g = grant(req{key + ":inf", code, math.MaxInt64, inf}, req{key + ":closed", code, 3, closed}, req{key + ":closed", code, 0, closed})
		want := []algo.Result{{Allowed: true, Remaining: math.MaxInt64}, {RetryAfter: algo.Never}, {Allowed: true}}
		if g[0] != math.MaxInt64 || g[1] != 0 || g[2] != 0 || r[0] != want[0] || r[1] != want[1] || r[2] != want[2] {
			t.Errorf("%s: degenerate limits: %v, %+v", code, g, r)
		}
	}
	// Bad arguments fail the call; nothing is written.
	key := e.prefix + "partial:bad"
	for _, n := range []string{"x", "-1", "1.5", "99999999999999999999"} {
		var a lua.Args
		a.Add(lua.NewLimit(lua.CodeGCRA, &p), 1)
		args := a.Append(nil, lua.Partial, strconv.FormatInt(t0, 10), "0")
		args[len(args)-1] = n
		_, err := e.script.Run(e.ctx, e.rdb, []string{key}, args...).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "admit: key 1: n must be") {
			t.Errorf("n = %q: err = %v", n, err)
		}
	}
	if err := e.rdb.HSet(e.ctx, key, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	var a lua.Args
	a.Add(lua.NewLimit(lua.CodeGCRA, &p), 1)
	a.Add(lua.NewLimit(lua.CodeGCRA, &p), 1)
	other := e.prefix + "partial:other"
	if _, err := e.script.Run(e.ctx, e.rdb, []string{other, key}, a.Append(nil, lua.Partial, strconv.FormatInt(t0, 10), "0")...).Result(); err == nil || !strings.HasPrefix(err.Error(), "admit: ") {
		t.Errorf("a hash at the key: err = %v", err)
	}
	if v := e.get(other); v != "" {
		t.Errorf("the failed call wrote %q", v)
	}
}
