// Package prefetchstats carries the counts of a policy engine's
// prefetching limiters (package prefetch) from package policy to admit
// serve's metrics, without a method on policy.Engine's public surface.
package prefetchstats

import "github.com/admit-go/admit/prefetch"

// Of calls visit with the counts of each prefetching limiter of engine (a
// *policy.Engine; nothing for a closed one or any other value) and the
// label of its layer (rule[/tier][/kind], or domain/override/limit). It
// is set by package policy when it is linked in, and nil before.
var Of func(engine any, visit func(label string, s prefetch.Stats))
