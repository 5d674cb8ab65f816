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
	"github.com/admit-go/admit/redisstore/lua"
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

// BenchmarkDecide measures one EVALSHA deciding keys GCRA keys (and the
// other algorithms on one key) with Redis TIME, mostly admitted: ns/op is
// the round trip, server-µs/call what Redis spent in the script (INFO
// commandstats). The server is private to the benchmark, so its statistics
// count nothing else.
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
	for _, c := range []struct {
		name string
		code string
		keys int
	}{
		{"gcra/1key", lua.CodeGCRA, 1},
		{"gcra/10keys", lua.CodeGCRA, 10},
		{"tb/1key", lua.CodeTokenBucket, 1},
		{"fw/1key", lua.CodeFixedWindow, 1},
		{"sw/1key", lua.CodeSlidingWindow, 1},
		{"sl/1key", lua.CodeSlidingLog, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			keys := make([]string, c.keys)
			args := []any{lua.Independent, lua.RedisTime, "0"}
			for i := range keys {
				keys[i] = "bench:" + c.name + ":" + strconv.Itoa(i)
				args = lua.AppendArgs(args, c.code, 1, &p)
			}
			rdb.Del(ctx, keys...)
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
