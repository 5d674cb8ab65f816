package lua_test

import (
	"context"
	"regexp"
	"strconv"
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
// general path) to a key that owes a second's worth. The server is
// private to the benchmark, so its statistics count nothing else.
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
	for _, c := range []struct {
		name   string
		code   string
		keys   int
		p      *algo.Params
		refund bool
	}{
		{"gcra/1key", lua.CodeGCRA, 1, &p, false},
		{"gcra/10keys", lua.CodeGCRA, 10, &p, false},
		{"gcra/fractional-T", lua.CodeGCRA, 1, &frac, false},
		{"gcra/general", lua.CodeGCRA, 1, &long, false},
		{"tb/1key", lua.CodeTokenBucket, 1, &p, false},
		{"fw/1key", lua.CodeFixedWindow, 1, &p, false},
		{"sw/1key", lua.CodeSlidingWindow, 1, &p, false},
		{"sl/1key-burst100", lua.CodeSlidingLog, 1, &small, false},
		{"gcra/refund", lua.CodeGCRA, 1, &p, true},
		{"fw/refund", lua.CodeFixedWindow, 1, &p, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			keys := make([]string, c.keys)
			var a lua.Args
			l := lua.NewLimit(c.code, c.p)
			for i := range keys {
				keys[i] = "bench:" + c.name + ":" + strconv.Itoa(i)
				a.Add(l, 1)
			}
			args := a.Append(nil, lua.Independent, lua.RedisTime, "0")
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
