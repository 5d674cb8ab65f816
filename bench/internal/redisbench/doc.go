// Package redisbench holds what the Redis benchmarks of this module share
// with its programs: the Redis rate limiters they compare (Libs), a
// throwaway redis-server (Start), and the counters Redis keeps about
// itself (ReadStats).
//
// Libs is the one list of limiters: BenchmarkSkewed, BenchmarkRedisGCRA
// and BenchmarkRedisDenied (package bench) and cmd/hotkey all take their
// entries from it, so a new limiter (issue 15's prefetching store) is one
// more element of Libs.
package redisbench
