package algo

// FixedWindow is the state of a fixed-window counter: Count events admitted
// in window Win. Windows are B×T long (one Period when Burst = Rate) and
// aligned on the Unix epoch; each admits at most B events, so any interval
// of length t holds at most B×(⌈t/W⌉+1) admitted events (twice the burst
// across a window edge). The zero value is an empty window.
type FixedWindow struct {
	Win   int64
	Count int64
}

// FixedWindowStep admits n events at now if they fit in the current window.
// An instant before the window the state is in counts in that window. Only
// an admission (n > 0) changes the state.
func FixedWindowStep(s FixedWindow, p *Params, now, n int64) (FixedWindow, Result) {
	saved := s
	switch p.Mode {
	case Unlimited:
		return s, unlimited()
	case Closed:
		return s, closed(n)
	}
	k, _ := windowOf(p, now)
	if k > s.Win {
		s = FixedWindow{Win: k}
	}
	r := Result{Allowed: true}
	switch {
	case n > p.Burst:
		r = Result{RetryAfter: Never}
	case n > p.Burst-s.Count:
		r = Result{RetryAfter: untilWindow(p, now, s.Win+1)}
	case n > 0:
		s.Count += n
		saved = s
	}
	r.Remaining = max(p.Burst-s.Count, 0)
	if s.Count > 0 {
		r.ResetAfter = untilWindow(p, now, s.Win+1)
	}
	return saved, r
}

// FixedWindowUndo gives back n events admitted at now: it takes them off
// the count of the window FixedWindowStep counted them in (the state's
// window, for an instant in it or before it), never below zero. An instant
// in a later window than the state's gives back nothing: no event admitted
// then is in the state (and a window the state has left no longer counts).
// n <= 0 and the degenerate modes change nothing.
func FixedWindowUndo(s FixedWindow, p *Params, now, n int64) FixedWindow {
	if p.Mode != Normal || n <= 0 {
		return s
	}
	if k, _ := windowOf(p, now); k > s.Win {
		return s
	}
	s.Count -= min(n, s.Count)
	return s
}

// FixedWindowRebase converts a state kept under limit old into one under
// limit new at now: the count of the window holding now carries over into
// the new limit's window holding now.
func FixedWindowRebase(s FixedWindow, old, new *Params, now int64) FixedWindow {
	if old.Mode != Normal || new.Mode != Normal {
		return FixedWindow{}
	}
	if k, _ := windowOf(old, now); k != s.Win {
		return FixedWindow{}
	}
	k, _ := windowOf(new, now)
	return FixedWindow{Win: k, Count: s.Count}
}
