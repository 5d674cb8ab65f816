package lua_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

func TestParseReply(t *testing.T) {
	ok := []any{"1767225600000000000", int64(1), "4", "0", "100000000", int64(0), "0", "9223372036854775807", "0"}
	now, res, err := lua.ParseReply(ok, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []algo.Result{{Allowed: true, Remaining: 4, ResetAfter: 1e8}, {RetryAfter: algo.Never}}
	if now != 1767225600000000000 || len(res) != 2 || res[0] != want[0] || res[1] != want[1] {
		t.Fatalf("got %d %+v", now, res)
	}
	mixed := []any{int64(5), int64(0), int64(4), "0", int64(7)}
	if now, res, err := lua.ParseReply(mixed, 1); err != nil || now != 5 || res[0] != (algo.Result{Remaining: 4, ResetAfter: 7}) {
		t.Fatalf("integers: %d %v %v", now, res, err)
	}
	if _, res, err := lua.ParseReply([]any{"0"}, 0); err != nil || len(res) != 0 {
		t.Fatalf("no keys: %v %v", res, err)
	}
	with := func(i int, v any) []any { return withElem(ok, i, v) }
	for name, c := range map[string]struct {
		reply any
		n     int
	}{
		"nil":             {nil, 2},
		"string":          {"x", 2},
		"[]string":        {[]string{"0"}, 0},
		"short":           {ok[:8], 2},
		"long":            {append(ok, "0"), 2},
		"negative nkeys":  {ok, -1},
		"wrong nkeys":     {ok, 1},
		"now -5":          {with(0, int64(-5)), 2},
		"now negative":    {with(0, "-1"), 2},
		"now past max":    {with(0, strconv.FormatInt(algo.MaxTime+1, 10)), 2},
		"now empty":       {with(0, ""), 2},
		"allowed 2":       {with(1, int64(2)), 2},
		"allowed -1":      {with(1, int64(-1)), 2},
		"allowed string":  {with(1, "1"), 2},
		"allowed nil":     {with(1, nil), 2},
		"remaining -4":    {with(2, int64(-4)), 2},
		"remaining float": {with(2, 4.0), 2},
		"remaining 4.0":   {with(2, "4.0"), 2},
		"remaining -1":    {with(2, "-1"), 2},
		"remaining +1":    {with(2, "+1"), 2},
		"remaining 01":    {with(2, "01"), 2},
		"remaining space": {with(2, " 1"), 2},
		"retry 2^63":      {with(3, "9223372036854775808"), 2},
		"retry 2^64":      {with(3, "18446744073709551616"), 2},
		"reset x":         {with(4, "x"), 2},
		"reset error":     {with(4, errors.New("boom")), 2},
		"reset long":      {with(8, "99999999999999999999999"), 2},
	} {
		if _, _, err := lua.ParseReply(c.reply, c.n); !errors.Is(err, lua.ErrReply) {
			t.Errorf("%s: err = %v, want ErrReply", name, err)
		}
	}
}

// withElem returns a copy of reply whose element i is v.
func withElem(reply []any, i int, v any) []any {
	c := append([]any(nil), reply...)
	c[i] = v
	return c
}

// FuzzParseReply: any reply is parsed or refused with ErrReply, never a
// panic, and what is parsed is in range and prints back to the input.
func FuzzParseReply(f *testing.F) {
	f.Add(3, "1767225600000000000", int64(1), "4", "0", "100000000", true, true)
	f.Add(1, "0", int64(0), "0", "9223372036854775807", "9223372036854775807", false, true)
	f.Add(0, "4611686018427387904", int64(2), "-1", "01", "x", true, false)
	f.Fuzz(func(t *testing.T, nkeys int, now string, allowed int64, rem, retry, reset string, asInt, asString bool) {
		nkeys %= 4
		reply := []any{now}
		for range max(nkeys, 0) {
			var a any = allowed
			if !asInt {
				a = strconv.FormatInt(allowed, 10)
			}
			var r any = rem
			if !asString {
				r = []byte(rem)
			}
			reply = append(reply, a, r, retry, reset)
		}
		n, res, err := lua.ParseReply(reply, nkeys)
		if err != nil {
			if !errors.Is(err, lua.ErrReply) {
				t.Fatalf("err %v does not wrap ErrReply", err)
			}
			return
		}
		if n < 0 || n > algo.MaxTime || strconv.FormatInt(n, 10) != now {
			t.Fatalf("now %d from %q", n, now)
		}
		for _, r := range res {
			if r.Remaining < 0 || r.RetryAfter < 0 || r.ResetAfter < 0 {
				t.Fatalf("out of range: %+v", r)
			}
			if strconv.FormatInt(r.Remaining, 10) != rem || strconv.FormatInt(r.RetryAfter, 10) != retry ||
				strconv.FormatInt(r.ResetAfter, 10) != reset || r.Allowed != (allowed == 1) {
				t.Fatalf("%+v from %q %q %q %d", r, rem, retry, reset, allowed)
			}
		}
	})
}

func TestParsePartialReply(t *testing.T) {
	// Key 0: 3 of 5 granted, one more in 100ms. Key 1: 2 of 2. Key 2: a
	// peek. Key 3: none of 4.
	ok := []any{"1767225600000000000",
		int64(1), "0", "100000000", "100000000", int64(3),
		int64(1), int64(4), int64(0), int64(7), "2",
		int64(1), int64(6), "0", "0", int64(0),
		int64(0), int64(0), "9223372036854775807", int64(0), int64(0)}
	ns := []int64{5, 2, 0, 4}
	now, res, g, err := lua.ParsePartialReply(ok, ns)
	if err != nil {
		t.Fatal(err)
	}
	want := []algo.Result{{Allowed: true, RetryAfter: 1e8, ResetAfter: 1e8}, {Allowed: true, Remaining: 4, ResetAfter: 7}, {Allowed: true, Remaining: 6}, {RetryAfter: algo.Never}}
	if now != 1767225600000000000 || len(res) != 4 || len(g) != 4 || g[0] != 3 || g[1] != 2 || g[2] != 0 || g[3] != 0 {
		t.Fatalf("got %d %+v %v", now, res, g)
	}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("key %d: %+v, want %+v", i, res[i], want[i])
		}
	}
	// A peek's result is whatever the peek said (a sliding log over its
	// burst denies it).
	if _, _, _, err := lua.ParsePartialReply([]any{"0", int64(0), int64(0), int64(5), int64(5), int64(0)}, []int64{0}); err != nil {
		t.Errorf("a denied peek: %v", err)
	}
	with := func(i int, v any) []any { return withElem(ok, i, v) }
	for name, c := range map[string]struct {
		reply any
		ns    []int64
	}{
		"nil":                   {nil, ns},
		"4 per key":             {ok[:17], ns[:4]},
		"wrong count":           {ok, ns[:3]},
		"short":                 {ok[:20], ns},
		"granted above n":       {with(10, int64(3)), ns},
		"granted negative":      {with(5, int64(-1)), ns},
		"granted string":        {with(5, "x"), ns},
		"granted nil":           {with(5, nil), ns},
		"granted past MaxInt":   {with(5, "9223372036854775808"), ns},
		"granted to a peek":     {with(15, int64(1)), ns},
		"none granted allowed":  {with(16, int64(1)), ns},
		"some granted denied":   {with(1, int64(0)), ns},
		"all granted, a wait":   {with(8, int64(1)), ns},
		"some granted, no wait": {with(3, int64(0)), ns},
		"negative n":            {ok, []int64{5, 2, -1, 4}},
		"allowed 2":             {with(6, int64(2)), ns},
	} {
		if _, _, _, err := lua.ParsePartialReply(c.reply, c.ns); !errors.Is(err, lua.ErrReply) {
			t.Errorf("%s: err = %v, want ErrReply", name, err)
		}
	}
}

// FuzzParsePartialReply: any reply is parsed or refused with ErrReply,
// never a panic, and a grant that is parsed is within its n and agrees
// with its result.
func FuzzParsePartialReply(f *testing.F) {
	f.Add(int64(5), int64(1), "0", "100", "100", int64(3))
	f.Add(int64(0), int64(1), "7", "0", "0", int64(0))
	f.Add(int64(4), int64(0), "0", "9223372036854775807", "0", int64(0))
	f.Add(int64(-1), int64(2), "01", "", "-1", int64(-5))
	f.Fuzz(func(t *testing.T, n, allowed int64, rem, retry, reset string, granted int64) {
		reply := []any{"5", allowed, rem, retry, reset, granted}
		_, res, g, err := lua.ParsePartialReply(reply, []int64{n})
		if err != nil {
			if !errors.Is(err, lua.ErrReply) {
				t.Fatalf("err %v does not wrap ErrReply", err)
			}
			return
		}
		if g[0] < 0 || g[0] > n || (n > 0 && (res[0].Allowed != (g[0] > 0) || (res[0].RetryAfter == 0) != (g[0] == n))) {
			t.Fatalf("n %d: granted %d with %+v", n, g[0], res[0])
		}
	})
}
