// Package prefetchhook reaches a policy engine's prefetching limiters
// (package prefetch) from admit serve, for its metrics and the count of
// live instances, without a method on policy.Engine's public surface.
package prefetchhook

import "github.com/admit-go/admit/prefetch"

// Stats calls visit with the counts of each prefetching limiter of engine
// (a *policy.Engine; nothing for a closed one or any other value) and the
// label of its layer (rule[/tier][/kind], or domain/override/limit). It
// is set by package policy when it is linked in, and nil before.
var Stats func(engine any, visit func(label string, s prefetch.Stats))

// SetInstances tells each prefetching limiter of engine (a *policy.Engine)
// that n instances share its store (prefetch.Limiter.SetInstances). It is
// set by package policy when it is linked in, and nil before.
var SetInstances func(engine any, n int)
