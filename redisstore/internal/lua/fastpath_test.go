package lua_test

// The fast paths (fast.lua) against the Go step functions, at their bounds.

import (
	"testing"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

// TestFastPathEdges compares script and Go around the bounds of the fast
// paths (fast.lua): debts, levels, elapsed times and gaps near 4e15 and
// 9e15 ns, instants whose low 7 digits are 0 or 9999999, instants below
// 1e7, and capacities near 4e15.
func TestFastPathEdges(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	var params []algo.Params
	for _, l := range [][3]int64{
		{1, 1e9, 0}, {3, 1e9, 0}, {1, 4e15 - 1, 1}, {1, 4e15, 1}, {2, 8e15, 2}, {1, 2e15, 2},
		{1, 9e15, 1}, {7, 7, 0}, {1, 1, 1}, {1000, 1, 1000}, {7, 13, 0}, {999983, 1e9, 0}, {3, 1e9, 5},
		{7, 5e14 + 1, 0}, // Td = 7, CapN near 4e15 units
	} {
		p, err := algo.Compile(l[0], l[1], l[2])
		if err != nil {
			t.Fatal(l, err)
		}
		params = append(params, p)
	}
	// (Offsets just below 4e15 and 9e15 whose low 7 digits differ from
	// now's make the high parts differ by exactly 4e8 or 9e8.)
	offsets := []int64{0, 1, 2, 1e7 - 1, 1e7, 1e7 + 1, 4e15 - 1e7 - 1, 4e15 - 1e7, 4e15 - 5e6 + 1, 4e15 - 2, 4e15 - 1, 4e15,
		4e15 + 1, 4e15 + 1e7, 9e15 - 1e7 - 1, 9e15 - 1e7, 9e15 - 5e6 + 1, 9e15 - 2, 9e15 - 1, 9e15, 9e15 + 1, 2e16}
	nows := []int64{t0, t0 + 9999999, 1e7 - 1, algo.MaxTime}
	for _, now := range nows {
		for _, p := range params {
			var tl timeline
			add := func(code string, st any) {
				tl.keys = append(tl.keys, keySpec{code: code, params: []algo.Params{p}, init: st})
			}
			ds := offsets
			if p.Mode == algo.Normal && p.Td > 1 { // debts near 4e15 and 9e15 units
				// (786743589436924 ns: a debt of 5.5e15 units under 7/(5e14+1)ns
				// where n = Burst would round in doubles, found by search.)
				ds = append(ds[:len(ds):len(ds)], 4e15/p.Td, 4e15/p.Td+1, 9e15/p.Td-1, 9e15/p.Td, 786743589436924)
			}
			for _, d := range ds {
				for _, at := range []int64{now + d, now - d} {
					if at < 0 || at > algo.MaxTime {
						continue
					}
					add(lua.CodeGCRA, algo.GCRA{At: at})
					if p.Td > 1 {
						add(lua.CodeGCRA, algo.GCRA{At: at, Frac: 1})
						add(lua.CodeGCRA, algo.GCRA{At: at, Frac: p.Td - 1})
					}
					for _, level := range []int64{1, d, d + 1, max(d-1, 1), 4e15 - 1, 4e15, 9e15 - 2, 9e15 + 1, p.CapN, p.CapN + 1,
						d * p.Td, d*p.Td + 1, max(d*p.Td-1, 1)} {
						if level <= 0 {
							continue
						}
						add(lua.CodeTokenBucket, algo.Bucket{Last: at, Level: level})
					}
				}
			}
			add(lua.CodeGCRA, nil)
			add(lua.CodeLeakyBucket, nil)
			// Every n at now, then refunds of every n (the undo fast paths).
			for j, dt := range []int64{0, 0, 0, 0, 1e7, 4e15, 0, 1, 4e15} {
				call := callSpec{now: min(now+dt, algo.MaxTime), refund: j >= 6}
				for i, k := range tl.keys {
					code := k.code
					if code == lua.CodeTokenBucket && i%2 == 0 {
						code = lua.CodeLeakyBucket
					}
					n := []int64{p.Burst + 1, p.Burst, 1, 0}[(i+j)%4]
					call.ops = append(call.ops, opSpec{key: i, code: code, p: p, n: n})
				}
				tl.calls = append(tl.calls, call)
			}
			r.run(t, tl)
		}
	}
}

// TestFixedFastEdges compares script and Go for fixed windows at window
// edges (now = k×W-1, k×W, k×W+1), windows from 1e6 to 4e15 ns, stored
// windows behind, at and ahead of now's, and counts around the burst.
func TestFixedFastEdges(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	for _, l := range [][2]int64{
		{1, 1e6 - 1}, {1, 1e6}, {1, 1e6 + 1}, {5, 3e6}, {1000, 1e9}, {7, 7e9}, {60, 6e10}, {3600, 3.6e12},
		{1, 86400e9}, {1, 4e15 - 1}, {4, 4e15}, {1, 999999999989}, {1, 1 << 52},
	} {
		p, err := algo.Compile(l[0], l[1], 0)
		if err != nil {
			t.Fatal(l, err)
		}
		w := p.CapN / p.Td
		for _, base := range []int64{t0, algo.MaxTime, 3e18 + 12345} {
			k := base / w
			for _, now := range []int64{k*w - 1, k * w, k*w + 1, k*w + w/2, k*w + w - 1} {
				if now < 0 || now > algo.MaxTime {
					continue
				}
				var tl timeline
				kn := now / w
				for _, win := range []int64{0, kn - 1, kn, kn + 1, kn + 2} {
					for _, count := range []int64{0, 1, p.Burst - 1, p.Burst, p.Burst + 1} {
						if win < 0 || count < 0 {
							continue
						}
						tl.keys = append(tl.keys, keySpec{code: lua.CodeFixedWindow, params: []algo.Params{p},
							init: algo.FixedWindow{Win: win, Count: count}})
					}
				}
				for j, dt := range []int64{0, 1, w - 1, 0, 1, w} { // then refunds
					call := callSpec{now: min(now+dt, algo.MaxTime), refund: j >= 3}
					for i := range tl.keys {
						n := []int64{0, 1, p.Burst, p.Burst + 1, 2}[(i+int(dt%5))%5]
						call.ops = append(call.ops, opSpec{key: i, code: lua.CodeFixedWindow, p: p, n: n})
					}
					tl.calls = append(tl.calls, call)
				}
				r.run(t, tl)
			}
		}
	}
}

// TestSlidingFastEdges compares script and Go for sliding windows (strict
// and approximate) at window edges, with previous and current counts around
// the burst, stored windows behind, at and ahead of now's, and products near
// the fast path's bounds.
func TestSlidingFastEdges(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	for _, code := range []string{lua.CodeSlidingWindow, lua.CodeSlidingWindowApprox} {
		t.Run(code, func(t *testing.T) { slidingFastEdges(t, r, code) })
	}
}

func slidingFastEdges(t *testing.T, r *runner, code string) {
	for _, l := range [][2]int64{
		{1, 1e6 - 1}, {1, 1e6}, {5, 3e6}, {1000, 1e9}, {7, 7e9}, {60, 6e10}, {3600, 3.6e12}, {3, 999999999999},
		{1, 3e15 - 1}, {1, 4e15 - 3}, {1000, 3e12}, {999, 2997e9}, {10, 1e12}, {1, 4e15 + 1}, {3, 6e15 + 3},
	} {
		p, err := algo.Compile(l[0], l[1], 0)
		if err != nil {
			t.Fatal(l, err)
		}
		w := p.CapN / p.Td
		for _, base := range []int64{t0, algo.MaxTime} {
			k := base / w
			for _, now := range []int64{k*w - 1, k * w, k*w + w/3} {
				if now < 0 || now > algo.MaxTime {
					continue
				}
				var tl timeline
				kn := now / w
				for _, win := range []int64{0, kn - 2, kn - 1, kn, kn + 1, kn + 2} {
					// (Prev near k×W for small k makes slidingRetry's first quotient
					// small; counts past 3e15/W leave the fast path.)
					for _, cur := range []int64{0, 1, p.Burst / 2, p.Burst, p.Burst + 1, 3e15/w - 1, 3e15 / w, 8e15/w + 1} {
						for _, prev := range []int64{0, 1, p.Burst - 1, p.Burst, w - 1, w, 2*w - 1, 4*w + 1, 3e15/w - 1, 3e15 / w, 8e15/w + 1} {
							if win < 0 || cur < 0 || prev < 0 {
								continue
							}
							tl.keys = append(tl.keys, keySpec{code: code, params: []algo.Params{p},
								init: algo.SlidingWindow{Win: win, Cur: cur, Prev: prev}})
						}
					}
				}
				for j, dt := range []int64{0, w/2 + 1} {
					call := callSpec{now: min(now+dt, algo.MaxTime)}
					for i := range tl.keys {
						n := []int64{0, 1, p.Burst, p.Burst + 1, 2, p.Burst / 2}[(i+j)%6]
						call.ops = append(call.ops, opSpec{key: i, code: code, p: p, n: n})
					}
					tl.calls = append(tl.calls, call)
				}
				r.run(t, tl)
			}
		}
	}
}

// TestLogFastEdges compares script and Go for sliding logs whose entries
// sit at the window's edges, in the future of now (the log's clamp), at now
// (merges into the first or the newest entry), all expired, near MaxTime,
// and with gaps near the fast path's bounds.
func TestLogFastEdges(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	for _, l := range [][3]int64{{1, 1e9, 3}, {5, 5, 0}, {1000, 1e9, 0}, {1, 4e15 - 1, 1}, {3, 3e15, 0}, {7, 13, 0}} {
		p, err := algo.Compile(l[0], l[1], l[2])
		if err != nil {
			t.Fatal(l, err)
		}
		w := p.Window()
		logs := [][]int64{nil, {-w}, {-w + 1}, {0}, {1}, {-2 * w, -w, -w + 1, -1, 0}, {-w + 1, 0}, {1, 2},
			{-1, 0, 1}, {-w - 1, -w}, {-w, 0}, {-4e15 + 1, -3}, {-3, 4e15 - 9}, {-w + 1, -w + 2, -w + 3}}
		for _, now := range []int64{t0, t0 + 9999999, algo.MaxTime, algo.MaxTime - 5, 1e7 + 3} {
			var tl timeline
			for _, offs := range logs {
				for _, count := range []int64{1, max(p.Burst-1, 1), p.Burst} {
					var entries []algo.LogEntry
					for _, o := range offs {
						at := now + o
						if at < 0 || at > algo.MaxTime {
							entries = nil
							break
						}
						entries = append(entries, algo.LogEntry{At: at, N: count})
					}
					if offs != nil && entries == nil {
						continue
					}
					tl.keys = append(tl.keys, keySpec{code: lua.CodeSlidingLog, params: []algo.Params{p}, init: logOf(entries)})
				}
			}
			for j, dt := range []int64{0, 1, -1, w, 0} {
				call := callSpec{now: min(max(now+dt, 0), algo.MaxTime)}
				for i := range tl.keys {
					n := []int64{0, 1, p.Burst, p.Burst + 1, 2}[(i+j)%5]
					call.ops = append(call.ops, opSpec{key: i, code: lua.CodeSlidingLog, p: p, n: n})
				}
				tl.calls = append(tl.calls, call)
			}
			r.run(t, tl)
		}
	}
}
