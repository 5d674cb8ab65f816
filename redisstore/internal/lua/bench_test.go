package lua_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

var usecPerCall = regexp.MustCompile(`cmdstat_evalsha:calls=(\d+),usec=(\d+)`)

// serverUsec returns the calls of EVALSHA and the µs Redis spent in them.
func serverUsec(b *testing.B, rdb *redis.Client) (calls, usec float64) {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	m := usecPerCall.FindStringSubmatch(info)
	if m == nil {
		return 0, 0
	}
	c, _ := strconv.ParseFloat(m[1], 64)
	u, _ := strconv.ParseFloat(m[2], 64)
	return c, u
}

// BenchmarkDecide measures one EVALSHA deciding one or ten keys with Redis
// TIME, at 1e6/s (nearly every request admitted; the sliding log at 100/s),
// on the fast paths and on the general path: ns/op is the round trip,
// server-µs/call what Redis spent in the script (INFO commandstats). The
// "refund" cases give one event back per call (the refund mode, on the
// general path) to a key that owes a second's worth. The "partial" cases
// grant what fits of n (the partial mode): 1 of 1 (a peek and an
// admission), and 100 asked of a burst of 100 at 1e6/s, what accrued since
// the previous call (a peek, an admission and the wait for one more). The
// "+delay" cases ask with a MaxDelay of 1s (the delay mode) what fits at
// once: what the delay mode costs a request that does not wait. The server is private to the
// benchmark, so its statistics count nothing else.
func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	srv := redistest.NewStandalone(b)
	rdb := srv.Client(b)
	script := redis.NewScript(lua.Decide)
	if err := script.Load(ctx, rdb).Err(); err != nil {
		b.Fatal(err)
	}
	p, err := algo.Compile(1_000_000, int64(time.Second), 0) // 1e6/s: nearly every request admitted
	if err != nil {
		b.Fatal(err)
	}
	// The sliding log's cost grows with its entries (up to Burst): 100/s.
	small, err := algo.Compile(100, int64(time.Second), 0)
	if err != nil {
		b.Fatal(err)
	}
	frac, err := algo.Compile(3, int64(time.Millisecond), 0) // T = 1ms/3: Td = 3
	if err != nil {
		b.Fatal(err)
	}
	long, err := algo.Compile(1, int64(100*24*time.Hour), 0) // T of 8.64e15ns: the general path
	if err != nil {
		b.Fatal(err)
	}
	block, err := algo.Compile(1_000_000, int64(time.Second), 100) // a burst of 100 refilled in 100µs
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		code   string
		keys   int
		p      *algo.Params
		refund bool
		n      int64  // the events per key (0: 1)
		mode   string // lua.Independent unless set
	}{
		{"gcra/1key", lua.CodeGCRA, 1, &p, false, 0, ""},
		{"gcra/1key+delay", lua.CodeGCRA, 1, &p, false, 0, ""},
		{"gcra/10keys", lua.CodeGCRA, 10, &p, false, 0, ""},
		{"gcra/fractional-T", lua.CodeGCRA, 1, &frac, false, 0, ""},
		{"gcra/general", lua.CodeGCRA, 1, &long, false, 0, ""},
		{"tb/1key", lua.CodeTokenBucket, 1, &p, false, 0, ""},
		{"tb/1key+delay", lua.CodeTokenBucket, 1, &p, false, 0, ""},
		{"fw/1key", lua.CodeFixedWindow, 1, &p, false, 0, ""},
		{"sw/1key", lua.CodeSlidingWindow, 1, &p, false, 0, ""},
		{"sl/1key-burst100", lua.CodeSlidingLog, 1, &small, false, 0, ""},
		{"gcra/refund", lua.CodeGCRA, 1, &p, true, 0, ""},
		{"fw/refund", lua.CodeFixedWindow, 1, &p, true, 0, ""},
		{"gcra/partial-1", lua.CodeGCRA, 1, &p, false, 1, lua.Partial},
		{"gcra/partial-short", lua.CodeGCRA, 1, &block, false, 100, lua.Partial},
		{"fw/partial-1", lua.CodeFixedWindow, 1, &p, false, 1, lua.Partial},
	} {
		b.Run(c.name, func(b *testing.B) {
			keys := make([]string, c.keys)
			var a lua.Args
			l := lua.NewLimit(c.code, c.p)
			mode := lua.Independent
			if c.mode != "" {
				mode = c.mode
			}
			for i := range keys {
				keys[i] = "bench:" + c.name + ":" + strconv.Itoa(i)
				if strings.HasSuffix(c.name, "+delay") {
					a.AddDelay(l, max(c.n, 1), int64(time.Second)) // the delay mode, nothing waiting
				} else {
					a.Add(l, max(c.n, 1))
				}
			}
			args := a.Append(nil, mode, lua.RedisTime, "0")
			rdb.Del(ctx, keys...)
			if c.refund {
				// A second's worth of events admitted, given back one
				// per call.
				var fill lua.Args
				fill.Add(l, c.p.Burst)
				if err := script.EvalSha(ctx, rdb, keys, fill.Append(nil, lua.Independent, lua.RedisTime, "0")...).Err(); err != nil {
					b.Fatal(err)
				}
				args = a.Append(nil, lua.Refund, lua.RedisTime, "0")
			}
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := script.EvalSha(ctx, rdb, keys, args...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if calls, usec := serverUsec(b, rdb); calls > 0 {
				b.ReportMetric(usec/calls, "server-µs/call")
			}
		})
	}
}
