package bench

// Keyed limiters: many clients, one limit each.
//
//   - BenchmarkKeyed1M: 1,000,000 distinct keys, visited round-robin, every
//     key already present and checked once more, and the heap collected,
//     before the timer starts (the steady state of a busy service; see
//     warm). Each library reads the clock itself, so admit is called in its
//     clock-reading form (Allow). "xrate-syncmap" is the structure users
//     build by hand with golang.org/x/time/rate: a sync.Map of
//     *rate.Limiter. Every call goes through a closure (keyedLibs);
//     BenchmarkLocalPath calls each library directly.
//   - BenchmarkKeyed1MParallel: the same from every P (run with -cpu 1,2).
//   - BenchmarkKeyedMemory: the heap retained per key after inserting 1M
//     keys, after GC, reported as B/key. The keys' own bytes are not
//     counted: admit copies each key into its arena (subtracted), the others
//     keep a reference to the benchmark's string.
//   - BenchmarkLocalPath: one hot key and 1M keys round-robin, each library
//     called directly in the benchmark loop as its README shows (see its
//     comment for how it differs from BenchmarkKeyed1M).
//   - BenchmarkKeyedFlood: 10,000,000 unique keys through admit with a cap of
//     1,000,000, a hot key denied all along; reports the heap after GC and
//     fails if the hot key is ever admitted again.
//
// Except in BenchmarkLocalPath, all limits are 1000 per second with a burst
// of 1000 per key, which the benchmarks never exhaust (each key is visited
// once per million calls).

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/keyed"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	"golang.org/x/time/rate"
)

const (
	keyCount = 1_000_000
	keyRate  = 1000
)

// keys returns the benchmark's keys, built on first use.
var keys = sync.OnceValue(func() []string {
	k := make([]string, keyCount)
	for i := range k {
		k[i] = "client-" + strconv.Itoa(i)
	}
	return k
})

// heavy skips a benchmark that needs seconds and gigabytes in -short mode
// (the smoke run of scripts/test).
func heavy(b *testing.B) {
	if testing.Short() {
		b.Skip("heavy: skipped with -short")
	}
}

// keyedLib is one library's keyed limiter, called as it is normally used.
type keyedLib struct {
	name string
	make func(b *testing.B) (allow func(key string) bool, close func())
}

var keyedLibs = []keyedLib{
	{"admit-keyed", func(b *testing.B) (func(string) bool, func()) {
		lim, err := keyed.New(keyed.Config{Limit: admit.PerSecond(keyRate), MaxKeys: 2 * keyCount})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		return func(k string) bool {
			d, err := lim.Allow(ctx, admit.Request{Key: k, N: 1})
			return d.Allowed && err == nil
		}, func() { runtime.KeepAlive(lim) }
	}},
	{"xrate-syncmap", func(b *testing.B) (func(string) bool, func()) {
		var m sync.Map
		return func(k string) bool {
			v, ok := m.Load(k)
			if !ok {
				v, _ = m.LoadOrStore(k, rate.NewLimiter(keyRate, keyRate))
			}
			return v.(*rate.Limiter).Allow()
		}, func() { runtime.KeepAlive(&m) }
	}},
	{"go-limiter", func(b *testing.B) (func(string) bool, func()) {
		ctx := context.Background()
		st, err := memorystore.New(&memorystore.Config{Tokens: keyRate, Interval: time.Second, SweepMinTTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		return func(k string) bool {
			_, _, _, ok, err := st.Take(ctx, k)
			return ok && err == nil
		}, func() { st.Close(ctx) }
	}},
	{"throttled", func(b *testing.B) (func(string) bool, func()) {
		ctx := context.Background()
		st, err := memstore.NewCtx(0)
		if err != nil {
			b.Fatal(err)
		}
		l, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: throttled.PerSec(keyRate), MaxBurst: keyRate - 1})
		if err != nil {
			b.Fatal(err)
		}
		return func(k string) bool {
			limited, _, err := l.RateLimitCtx(ctx, k, 1)
			return !limited && err == nil
		}, func() { runtime.KeepAlive(l) }
	}},
}

func BenchmarkKeyed1M(b *testing.B) {
	heavy(b)
	benchKeys := keys()
	for _, lib := range keyedLibs {
		b.Run(lib.name, func(b *testing.B) {
			allow, done := lib.make(b)
			defer done()
			_, cpu := warm(b, benchKeys, allow)
			i := 0
			for b.Loop() {
				if !allow(benchKeys[i]) {
					b.Fatal("denied")
				}
				if i++; i == keyCount {
					i = 0
				}
			}
			cpuPerOp(b, cpu)
		})
	}
}

func BenchmarkKeyed1MParallel(b *testing.B) {
	heavy(b)
	benchKeys := keys()
	for _, lib := range keyedLibs {
		b.Run(lib.name, func(b *testing.B) {
			allow, done := lib.make(b)
			defer done()
			warm(b, benchKeys, allow)
			b.ResetTimer() // not the filling of the table
			var seq sync.Mutex
			next := 0
			b.RunParallel(func(pb *testing.PB) {
				seq.Lock()
				i := next * 7919 % keyCount
				next++
				seq.Unlock()
				for pb.Next() {
					allow(benchKeys[i])
					if i++; i == keyCount {
						i = 0
					}
				}
			})
		})
	}
}

func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func BenchmarkKeyedMemory(b *testing.B) {
	heavy(b)
	benchKeys := keys()
	keyBytes := 0
	for _, k := range benchKeys {
		keyBytes += len(k)
	}
	for _, lib := range keyedLibs {
		b.Run(lib.name, func(b *testing.B) {
			var perKey float64
			for b.Loop() {
				before := heapNow()
				allow, done := lib.make(b)
				for _, k := range benchKeys {
					allow(k)
				}
				grown := float64(heapNow()) - float64(before)
				if lib.name == "admit-keyed" {
					grown -= float64(keyBytes)
				}
				perKey = grown / keyCount
				done()
			}
			b.ReportMetric(perKey, "B/key")
		})
	}
}

func BenchmarkKeyedFlood(b *testing.B) {
	heavy(b)
	const flood, capKeys = 10_000_000, 1_000_000
	for b.Loop() {
		lim, err := keyed.New(keyed.Config{Limit: admit.PerHour(1), MaxKeys: capKeys})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		now := time.Now()
		lim.Allow(ctx, admit.Request{Key: "hot", N: 1, At: now})
		buf := make([]byte, 0, 32)
		for i := range flood {
			buf = strconv.AppendInt(append(buf[:0], "flood-"...), int64(i), 10)
			lim.Allow(ctx, admit.Request{Key: string(buf), N: 1, At: now})
			if i%100 == 0 {
				if d, _ := lim.Allow(ctx, admit.Request{Key: "hot", N: 1, At: now}); d.Allowed {
					b.Fatalf("the hot key was admitted after %d flood keys", i)
				}
			}
		}
		b.ReportMetric(float64(lim.Len()), "keys-held")
		b.ReportMetric(float64(heapNow())/(1<<20), "heap-MiB")
		runtime.KeepAlive(lim)
	}
}

// BenchmarkMemoryLatency measures the floor under BenchmarkKeyed1M on this
// machine: one read of a random 24-byte slot in a 24 MiB table (the size of
// admit's GCRA table at 1M keys), where each read's address depends on the
// previous read, as one Allow call's lookup depends on its key. "independent"
// is the same reads with addresses that do not depend on each other, which
// the CPU overlaps. A keyed limiter that touches one random cache line per
// call, under a lock, cannot be faster than "dependent" plus its hashing,
// locking and step function.
func BenchmarkMemoryLatency(b *testing.B) {
	heavy(b)
	type slot struct {
		meta, a uint64
		_       uint64 // a 24-byte slot, as admit's
	}
	const n = 1 << 20
	s := make([]slot, n)
	for i := range s {
		s[i].meta = uint64(i)
	}
	for _, dependent := range []bool{true, false} {
		name := "independent"
		if dependent {
			name = "dependent"
		}
		b.Run(name, func(b *testing.B) {
			x, sum := uint32(1), uint64(0)
			for b.Loop() {
				x = x*2654435761 + 1
				if dependent {
					x += uint32(sum & 1)
				}
				i := int(x>>12) & (n - 1)
				sum += s[i].meta
				s[i].a++
			}
			runtime.KeepAlive(sum)
		})
	}
}

// hotKey is the one key of BenchmarkLocalPath's hot-key case: a client
// address.
const hotKey = "203.0.113.7"

// BenchmarkLocalPath measures the local path (issue 15): what a user
// calling each library's public API in the way its README shows pays per
// check, on the system clock.
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
		if testing.Short() && c.name == "1M-round-robin" {
			continue // seconds and a gigabyte per library: not in the smoke run
		}
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
	cpu, _ := processCPU()
	return keys, cpu
}

// cpuPerOp reports the process's CPU time per operation since warm, as
// cpu-ns/op. On a machine shared with other work, ns/op (wall time) counts
// the time the benchmark waited for a CPU; cpu-ns/op does not (nothing else
// runs in the process during the timed loop: nothing is allocated, so the
// collector does not run).
func cpuPerOp(b *testing.B, since time.Duration) {
	if now, ok := processCPU(); ok && b.N > 0 {
		b.ReportMetric(float64(now-since)/float64(b.N), "cpu-ns/op")
	}
}
