package server

import (
	"sync/atomic"

	"github.com/admit-go/admit/policy"
)

// EngineSource gives the engine that decides a request. The APIs of this
// package call Engine once per request and use that engine for the whole
// request, so a server can replace its engine (on a policy reload) while
// requests are being decided: requests in flight finish with the engine
// they started with.
type EngineSource interface {
	Engine() *policy.Engine
}

// Engines is an EngineSource whose engine can be replaced: the zero value
// holds no engine (Engine returns nil) until Set. It is safe for
// concurrent use.
type Engines struct {
	p atomic.Pointer[policy.Engine]
}

// Engine returns the current engine, nil before the first Set.
func (s *Engines) Engine() *policy.Engine { return s.p.Load() }

// Set makes e the current engine and returns the one it replaces (nil
// for the first). It does not close the old engine: requests may still be
// using it, and a new engine built with Config.Previous old shares its limiters.
func (s *Engines) Set(e *policy.Engine) (old *policy.Engine) { return s.p.Swap(e) }
