//go:build race

package policy

// raceEnabled: the race detector is on. It makes sync.Pool drop pooled
// values at random, so that a pooled value is sometimes made anew.
const raceEnabled = true
