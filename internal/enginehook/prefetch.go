package enginehook

import "github.com/admit-go/admit/prefetch"

// Prefetch calls visit with the counts of each prefetching limiter
// (package prefetch) of engine (a *policy.Engine; nothing for a closed
// one or any other value) and the label of its layer (rule[/tier][/kind],
// or domain/override/limit), for admit serve's metrics. It is set by
// package policy when it is linked in, and nil before.
var Prefetch func(engine any, visit func(label string, s prefetch.Stats))

// SetInstances tells each prefetching limiter of engine (a *policy.Engine)
// that n instances share its store (prefetch.Limiter.SetInstances), for
// admit serve's count of live instances. It is set by package policy when
// it is linked in, and nil before.
var SetInstances func(engine any, n int)
