// Package lanelimits holds the bounds of package fair's lanes, which package
// policy checks a policy file's lanes against before it builds them (so
// that its errors name the file and the line). Each is stated in the
// documentation of fair.Lane and fair's Configs.
package lanelimits

// Bounds of the lanes of one budget.
const (
	// MaxLanes is the most lanes one budget may have.
	MaxLanes = 64
	// MaxShare is the largest share a lane may have.
	MaxShare = 1 << 20
)
