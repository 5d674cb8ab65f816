package lua_test

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

// A key met several times in one call, its state kept decoded between the
// fast-path occurrences and handed to the general path in between, decides
// and stores exactly what the same requests do in separate calls.
func TestRepeatedKeyAcrossPaths(t *testing.T) {
	e := newEnv(t)
	fast := mustCompile(t, 10, time.Second, 0)        // small values: the fast path
	general := mustCompile(t, 3, 100*24*time.Hour, 0) // debts past 4e15 units: the general path
	frac := mustCompile(t, 3, time.Second, 0)         // Td = 3, Frac != 0
	seqs := [][]algo.Params{
		{fast, general, fast},
		{fast, fast, general, general, fast},
		{frac, fast, general, frac},
		{general, fast, fast},
	}
	now := int64(1_700_000_000_123_456_789)
	for si, seq := range seqs {
		one, sep := e.prefix+"one"+strconv.Itoa(si), e.prefix+"sep"+strconv.Itoa(si)
		var reqs []req
		for _, p := range seq {
			reqs = append(reqs, req{one, lua.CodeGCRA, 1, p})
		}
		got := e.mustCall(lua.Independent, now, reqs...)
		for i, p := range seq {
			want := e.mustCall(lua.Independent, now, req{sep, lua.CodeGCRA, 1, p})
			if !reflect.DeepEqual(got[i], want[0]) {
				t.Errorf("sequence %d, request %d: one call %+v, separate calls %+v", si, i, got[i], want[0])
			}
		}
		v1, err1 := e.rdb.Get(e.ctx, one).Result()
		v2, err2 := e.rdb.Get(e.ctx, sep).Result()
		if err1 != nil || err2 != nil || v1 != v2 {
			t.Errorf("sequence %d: stored %q (%v) in one call, %q (%v) in separate calls", si, v1, err1, v2, err2)
		}
	}
}
