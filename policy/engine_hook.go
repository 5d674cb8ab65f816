package policy

// The hooks of internal/enginehook: the state of an engine's layers, for
// admit serve's status page and metrics, and its prefetching limiters
// (engine_prefetch.go).

import (
	"slices"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/adaptive"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/fair"
	"github.com/admit-go/admit/internal/enginehook"
)

func init() {
	enginehook.Layers = layersOf
	enginehook.Prefetch = prefetchStatsOf
	enginehook.SetInstances = setInstances
}

// each calls f with each instance held (the one alone, or each key's).
func (p *perKey[T]) each(f func(T)) {
	if !p.multi {
		f(p.one)
		return
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, v := range p.m {
		f(v)
	}
}

// eachLayer calls f with each layer of e, those of inline limits
// included.
func (e *Engine) eachLayer(f func(c *clayer)) {
	for _, c := range e.byPrint {
		f(c)
	}
	for _, d := range e.domains {
		if m := d.ov.m.Load(); m != nil {
			for _, c := range *m {
				f(c)
			}
		}
	}
}

// layersOf visits the layers of engine (a *Engine): see enginehook.Layers.
func layersOf(engine any, visit func(*enginehook.Layer)) {
	e, ok := engine.(*Engine)
	if !ok || e == nil || e.closed.Load() {
		return
	}
	var l enginehook.Layer
	var vals []float64
	e.eachLayer(func(c *clayer) {
		l = enginehook.Layer{
			Label: c.label, Kind: c.kind.String(),
			Shared: c.class == classRemote || c.class == classRemoteSlots,
			Rate:   c.limit.Rate, Burst: c.limit.Burst, PeriodNanos: int64(c.limit.Period), Text: c.text,
		}
		vals = layerState(&l, c, vals[:0])
		visit(&l)
	})
}

// slotCounts are the counts of the slots of a cap kept in a shared store,
// which its failure policy (compose.GuardSlots) hides: those held through
// this instance, in the store (redisstore's count them) and in its
// fallback, if it has one.
type slotCounts []enginehook.SlotCounter

// heldCounts returns held with the counts of slots added if they are
// counted (an enginehook.SlotCounter), or nil if not.
func heldCounts(held slotCounts, slots admit.Slots) slotCounts {
	if sc, ok := slots.(enginehook.SlotCounter); ok {
		return append(held, sc)
	}
	return nil
}

// SlotCounts sums s's counts.
func (s slotCounts) SlotCounts() (inFlight, waiting int64) {
	for _, sc := range s {
		in, w := sc.SlotCounts()
		inFlight, waiting = inFlight+in, waiting+w
	}
	return inFlight, waiting
}

// layerState fills in what l's layer c knows of its state, using vals as
// scratch; it returns vals.
func layerState(l *enginehook.Layer, c *clayer, vals []float64) []float64 {
	var slots any = c.slots
	if c.held != nil {
		slots = c.held
	}
	switch s := slots.(type) {
	case *gradientSlots:
		l.Kind, l.Slots, l.Floor = "adaptive_concurrency", true, s.floor
		s.keys.each(func(g *adaptive.Gradient) {
			st := g.Stats()
			l.InFlight += st.InFlight
			l.Waiting += int64(st.Waiting)
			vals = append(vals, float64(st.Limit))
		})
	case *slotLanes:
		l.Kind, l.Slots = "lanes_concurrency", true
		s.keys.each(func(x *fair.SlotLanes) {
			l.Keys++
			for _, st := range x.Stats() {
				l.InFlight += st.Used + st.Borrowed
			}
		})
	case enginehook.SlotCounter:
		l.Slots = true
		l.InFlight, l.Waiting = s.SlotCounts()
	}
	switch s := c.lim.(type) {
	case *aimdLimiter:
		l.Kind, l.Floor = "adaptive_rate", s.floor
		s.keys.each(func(a *adaptive.AIMD) {
			lim := a.Limit()
			if lim.Period > 0 {
				vals = append(vals, float64(lim.Rate)*1e9/float64(lim.Period))
			}
		})
	case *perBudget[*fair.RateLanes]:
		l.Kind, l.Keys = "lanes", s.keys.count()
	case *perBudget[*fair.Share]:
		l.Kind, l.Keys = "share", s.keys.count()
	case *compose.Guard:
		st := s.Stats()
		l.Guarded, l.Fallback, l.Failures, l.Timeouts = true, st.Active, st.Failures, st.Timeouts
	}
	if len(vals) > 0 {
		l.Keys, l.Current = len(vals), summarize(vals)
	}
	return vals
}

// count returns the number of instances held.
func (p *perKey[T]) count() int {
	if !p.multi {
		return 1
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.m)
}

// summarize returns the Summary of vals, which it sorts.
func summarize(vals []float64) enginehook.Summary {
	slices.Sort(vals)
	n := len(vals)
	med := vals[n/2]
	if n%2 == 0 {
		med = (vals[n/2-1] + vals[n/2]) / 2
	}
	return enginehook.Summary{N: n, Min: vals[0], Median: med, Max: vals[n-1]}
}
