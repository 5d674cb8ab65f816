//go:build race

package status

// raceEnabled: the race detector slows the 10-million-key test tenfold.
const raceEnabled = true
