// Package bench compares admit side by side with other Go rate limiters:
// golang.org/x/time/rate, go.uber.org/ratelimit, throttled/v2,
// sethvargo/go-limiter and ulule/limiter/v3. It is a separate module so that
// their code never enters admit's go.mod. The package has no code; the
// benchmarks are in its test files, and RESULTS.md records their figures.
//
// Run them with
//
//	go test -run='^$' -bench=. -benchmem -count=10 -cpu 1,2 .
package bench
