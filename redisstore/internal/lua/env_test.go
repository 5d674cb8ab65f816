package lua_test

// The test environment: a Redis, the script, and checked calls of it.

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

// t0 is an instant on the time line the tests start from.
const t0 = int64(1_767_225_600_000_000_000)

func mustCompile(t testing.TB, rate int64, period time.Duration, burst int64) algo.Params {
	t.Helper()
	p, err := algo.Compile(rate, int64(period), burst)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type req struct {
	key  string
	code string
	n    int64
	p    algo.Params
}

type env struct {
	t      testing.TB
	ctx    context.Context
	rdb    *redis.Client
	script *redis.Script
	prefix string
}

func newEnv(t testing.TB) *env {
	return &env{t: t, ctx: context.Background(), rdb: redistest.Standalone(t).Client(t),
		script: redis.NewScript(lua.Decide), prefix: redistest.Prefix(t)}
}

// call runs the script and returns its reply or error.
func (e *env) call(mode, now, minTTL string, reqs ...req) (int64, []algo.Result, error) {
	keys := make([]string, len(reqs))
	var a lua.Args
	for i, r := range reqs {
		keys[i] = r.key
		a.Add(lua.NewLimit(r.code, &r.p), r.n)
	}
	args := a.Append(nil, mode, now, minTTL)
	v, err := e.script.Run(e.ctx, e.rdb, keys, args...).Result()
	if err != nil {
		return 0, nil, err
	}
	return lua.ParseReply(v, len(keys))
}

func (e *env) mustCall(mode string, now int64, reqs ...req) []algo.Result {
	e.t.Helper()
	_, res, err := e.call(mode, strconv.FormatInt(now, 10), testMinTTL, reqs...)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) get(key string) string {
	e.t.Helper()
	v, err := e.rdb.Get(e.ctx, key).Result()
	if err == redis.Nil {
		return ""
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}
