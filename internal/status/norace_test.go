//go:build !race

package status

const raceEnabled = false
