//go:build race

package main

// raceEnabled: the test binary runs under the race detector, and the
// end-to-end tests build admit with -race too, which reuses the packages
// the test's own build compiled.
const raceEnabled = true
