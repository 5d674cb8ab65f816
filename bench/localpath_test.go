package bench

// The local path (issue 15): what a user calling each library's public API
// in the way its README shows pays per check, on the system clock.
//
//   - BenchmarkLocalPath/hot-key: one key, checked over and over, under a
//     limit it never exhausts (1e9 per second, burst 1e9), so every call is
//     admitted and writes the key's state.
//   - BenchmarkLocalPath/1M-round-robin: 1,000,000 distinct keys, all
//     present before the timer starts, visited in turn (1000 per hour,
//     burst 1000 per key, never exhausted).
//
// The libraries:
//
//   - admit-keyed: keyed.New(keyed.Config{Limit: l}) (every other field at
//     its default, so 16 shards per P and room for 1<<20 keys), called as
//     lim.Allow(ctx, admit.Request{Key: key, N: 1}), the Decision and the
//     error both looked at.
//   - go-limiter: sethvargo/go-limiter's memorystore.New(&Config{Tokens,
//     Interval}), defaults otherwise, called as store.Take(ctx, key).
//   - xrate-syncmap: what users build by hand with golang.org/x/time/rate,
//     a sync.Map of *rate.Limiter, Load then LoadOrStore on a miss, Allow.
//   - admit-gcra (hot key only): a lone admit.GCRA's Allow(), the floor a
//     keyed limiter's hot key is measured against.
//
// Each library is called directly in the timed loop, as a user's code
// would (no closure or interface in between), and each answer is checked,
// so a limit that ran out cannot pass for a fast one. Before the timer
// starts, every key is checked twice (stored, then once more in the steady
// state) and the heap is collected (see warm), so no library pays for the
// garbage of another's 1M keys or for a collection of its own setup.

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/keyed"
	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"
)

// hotKey is the one key of the hot-key case: a client address.
const hotKey = "203.0.113.7"

func BenchmarkLocalPath(b *testing.B) {
	ctx := context.Background()
	// The same limit for every library, in each one's terms.
	cases := []struct {
		name  string
		keys  func() []string
		limit admit.Limit // keyed's
		// go-limiter's: Tokens per Interval.
		tokens   uint64
		interval time.Duration
		// x/time/rate's.
		every rate.Limit
		burst int
	}{
		// 1e9 per second, burst 1e9. go-limiter refills a bucket that has
		// crossed an interval with uint64(intervals × Interval/Tokens)
		// tokens, which is 1 per second at 1e9 per second: so its limit is
		// given as 3600e9 per hour, which no run outlasts.
		{"hot-key", func() []string { return []string{hotKey} }, admitHigh, 3600 * highRate, time.Hour, highRate, highRate},
		// 1000 per hour, burst 1000 per key: a key's state never gets
		// back to full during a run, so keyed never forgets a key and
		// stores it again, however slow the machine. (At 1000 per second
		// a key is full again 1 ms after its check, and keyed forgets such
		// keys after its grace period of one second: a pass over the 1M
		// keys slower than that, as on a loaded machine, would measure
		// insertions.)
		{"1M-round-robin", keys, admit.Limit{Rate: 1000, Period: time.Hour}, 1000, time.Hour, rate.Every(3600 * time.Millisecond), 1000},
	}
	for _, c := range cases {
		b.Run(c.name+"/admit-keyed", func(b *testing.B) {
			lim, err := keyed.New(keyed.Config{Limit: c.limit})
			if err != nil {
				b.Fatal(err)
			}
			ks, cpu := warm(b, c.keys(), func(k string) bool {
				d, err := lim.Allow(ctx, admit.Request{Key: k, N: 1})
				return d.Allowed && err == nil
			})
			i := 0
			for b.Loop() {
				d, err := lim.Allow(ctx, admit.Request{Key: ks[i], N: 1})
				if !d.Allowed || err != nil {
					b.Fatal("denied", err)
				}
				if i++; i == len(ks) {
					i = 0
				}
			}
			cpuPerOp(b, cpu)
		})
		b.Run(c.name+"/go-limiter", func(b *testing.B) {
			st, err := memorystore.New(&memorystore.Config{Tokens: c.tokens, Interval: c.interval})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close(ctx)
			ks, cpu := warm(b, c.keys(), func(k string) bool {
				_, _, _, ok, err := st.Take(ctx, k)
				return ok && err == nil
			})
			i := 0
			for b.Loop() {
				_, _, _, ok, err := st.Take(ctx, ks[i])
				if !ok || err != nil {
					b.Fatal("denied", err)
				}
				if i++; i == len(ks) {
					i = 0
				}
			}
			cpuPerOp(b, cpu)
		})
		b.Run(c.name+"/xrate-syncmap", func(b *testing.B) {
			var m sync.Map
			ks, cpu := warm(b, c.keys(), func(k string) bool {
				v, _ := m.LoadOrStore(k, rate.NewLimiter(c.every, c.burst))
				return v.(*rate.Limiter).Allow()
			})
			i := 0
			for b.Loop() {
				k := ks[i]
				v, ok := m.Load(k)
				if !ok {
					v, _ = m.LoadOrStore(k, rate.NewLimiter(c.every, c.burst))
				}
				if !v.(*rate.Limiter).Allow() {
					b.Fatal("denied")
				}
				if i++; i == len(ks) {
					i = 0
				}
			}
			cpuPerOp(b, cpu)
		})
	}
	b.Run("hot-key/admit-gcra", func(b *testing.B) {
		g := mustGCRA(b, admitHigh)
		_, cpu := warm(b, []string{hotKey}, func(string) bool { return g.Allow() })
		for b.Loop() {
			if !g.Allow() {
				b.Fatal("denied")
			}
		}
		cpuPerOp(b, cpu)
	})
}

// warm calls check on every key twice (the first round stores the keys, the
// second is the steady state: sync.Map, for one, answers Load from its
// lock-free read-only map only after as many misses as it has keys), then
// collects the garbage of the previous sub-benchmark and of this one's
// setup, so that no library pays in its timed loop for another's heap or
// for a collection of its own setup. It returns keys and the process's CPU
// time, for cpuPerOp.
func warm(b *testing.B, keys []string, check func(key string) bool) ([]string, time.Duration) {
	for range 2 {
		for _, k := range keys {
			if !check(k) {
				b.Fatal("denied while warming up")
			}
		}
	}
	runtime.GC()
	b.ReportAllocs()
	return keys, processCPU()
}

// cpuPerOp reports the process's CPU time per operation since warm, as
// cpu-ns/op. On a machine shared with other work, ns/op (wall time) counts
// the time the benchmark waited for a CPU; cpu-ns/op does not (nothing else
// runs in the process during the timed loop: nothing is allocated, so the
// collector does not run).
func cpuPerOp(b *testing.B, since time.Duration) {
	if since > 0 && b.N > 0 {
		b.ReportMetric(float64(processCPU()-since)/float64(b.N), "cpu-ns/op")
	}
}
