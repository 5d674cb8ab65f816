package algo

// SlidingWindow is the state of a sliding-window counter: Cur events
// admitted in window Win and Prev in the window before. Windows are W = B×T
// long, aligned on the Unix epoch. At elapsed time e into the current window
// the counter estimates the events of the last W as
//
//	Prev×(W-e)/W + Cur
//
// Two step functions read the state, and differ only in how they round the
// weighted term Prev×(W-e)/W to whole events: SlidingWindowStep rounds it
// up (n fits iff the exact estimate plus n is at most B: the strict form),
// SlidingWindowApproxStep rounds it down (n fits iff the estimate plus n
// is below B+1: the "estimate < limit" form of Cloudflare's description).
// The arithmetic is exact. The zero value is empty.
type SlidingWindow struct {
	Win  int64
	Cur  int64
	Prev int64
}

// SlidingWindowStep admits n events at now if the estimate plus n is at
// most B. An instant before the current window counts at the window's
// start. Only an admission (n > 0) changes the state.
//
// Since the weighted term is positive until the window ends whenever Prev
// > 0, a window that follows a window with admissions admits at most B-1:
// under steady overload B-1 per window (Rate×(B-1)/B), or for B = 1 one
// event every other window.
func SlidingWindowStep(s SlidingWindow, p *Params, now, n int64) (SlidingWindow, Result) {
	return slidingStep(s, p, now, n, false)
}

// SlidingWindowApproxStep admits n events at now if ⌊Prev×(W-e)/W⌋ + Cur
// + n <= B, that is if the estimate plus n is below B+1. It decides as
// SlidingWindowStep otherwise, on the same state, and admits B per window
// under steady overload. An admission at an instant where the previous
// window no longer weighs (⌊Prev×(W-e)/W⌋ = 0 for the rest of the window)
// forgets Prev, so that from ResetAfter on the state is the zero state's.
func SlidingWindowApproxStep(s SlidingWindow, p *Params, now, n int64) (SlidingWindow, Result) {
	return slidingStep(s, p, now, n, true)
}

// slidingStep admits n iff (estimate + n)×W <= B×W + slack, in units:
// slack 0 is the strict form, W-1 the approximate one (estimate + n < B+1).
// Remaining is then the largest n that fits, ⌊(B×W + slack - est×W)/W⌋.
func slidingStep(s SlidingWindow, p *Params, now, n int64, approx bool) (SlidingWindow, Result) {
	saved := s
	switch p.Mode {
	case Unlimited:
		return s, unlimited()
	case Closed:
		return s, closed(n)
	}
	var slack uint64
	if approx {
		slack = uint64(p.CapN) - 1
	}
	k, e := windowOf(p, now)
	switch {
	case k == s.Win+1:
		s = SlidingWindow{Win: k, Prev: s.Cur}
	case k > s.Win:
		s = SlidingWindow{Win: k}
	case k < s.Win:
		e = 0
	}
	capN := uint64(p.CapN)
	// weighted = Prev×(W-e), in units; the estimate×W is weighted + Cur×W.
	weighted := mul64(uint64(s.Prev), capN-uint64(e))
	limit := mul64(uint64(p.Burst), capN).add64(slack)
	est := weighted.add(mul64(uint64(s.Cur), capN))
	r := Result{Allowed: true}
	switch {
	case n > p.Burst:
		r = Result{RetryAfter: Never}
	case n > 0:
		if limit.less(est.add(mul64(uint64(n), capN))) {
			r = Result{RetryAfter: untilUnits(p, now, s.Win, slidingRetry(s, p, e, n, slack))}
		} else {
			s.Cur += n
			if !from64(slack).less(weighted) {
				s.Prev = 0 // it weighs nothing from now to the window's end
			}
			est = est.add(mul64(uint64(n), capN))
			saved = s
		}
	}
	if est.less(limit) {
		// Remaining = floor((B×W + slack - est)/W).
		r.Remaining = limit.sub(est).div63(capN)
	}
	// Full again (B fits) once the counts weigh at most slack: Cur from
	// the first e' of the next window with Cur×(W-e') <= slack, Prev from
	// the first e' of this one with Prev×(W-e') <= slack.
	switch {
	case s.Cur > 0:
		r.ResetAfter = untilUnits(p, now, s.Win, 2*capN-slack/uint64(s.Cur))
	case s.Prev > 0:
		r.ResetAfter = untilUnits(p, now, s.Win, capN-slack/uint64(s.Prev))
	}
	return saved, r
}

// SlidingWindowUndo gives back n events admitted at now: it takes them off
// the current count of the state, where SlidingWindowStep counted them (for
// an instant in the state's window or before it), never below zero. An
// instant in a later window than the state's gives back nothing. n <= 0 and
// the degenerate modes change nothing.
func SlidingWindowUndo(s SlidingWindow, p *Params, now, n int64) SlidingWindow {
	if p.Mode != Normal || n <= 0 {
		return s
	}
	if k, _ := windowOf(p, now); k > s.Win {
		return s
	}
	s.Cur -= min(n, s.Cur)
	return s
}

// untilUnits returns the ns from now until off units after the start of
// window k, rounded up.
func untilUnits(p *Params, now, k int64, off uint64) int64 {
	at := mul64(uint64(k), uint64(p.CapN)).add64(off)
	nowU := mul64(uint64(now), uint64(p.Td))
	if !nowU.less(at) {
		return 0
	}
	return at.sub(nowU).ceil63(uint64(p.Td))
}

// slidingRetry returns the offset, in units from the start of the current
// window, of the first instant at which n events (n <= B) fit, given that
// they do not fit at elapsed e, for slidingStep's slack.
func slidingRetry(s SlidingWindow, p *Params, e, n int64, slack uint64) uint64 {
	capN := uint64(p.CapN)
	// In this window: the first e' with Prev×(W-e') <= (B-Cur-n)×W + slack.
	if room := p.Burst - s.Cur - n; room >= 0 && s.Prev > 0 {
		q, _, _ := mul64(uint64(room), capN).add64(slack).divmod(uint64(s.Prev))
		// q < W - e because the request was denied at e.
		if q > 0 {
			return capN - q
		}
	}
	// In the next window Prev' = Cur and Cur' = 0: the first e' with
	// Cur×(W-e') <= (B-n)×W + slack, else the window after.
	var at uint64
	if s.Cur > 0 {
		q, _, _ := mul64(uint64(p.Burst-n), capN).add64(slack).divmod(uint64(s.Cur))
		if q < capN {
			at = capN - q
		}
	}
	return capN + at
}

// addSat returns a+b saturated at Never.
func addSat(a, b int64) int64 {
	if b > Never-a {
		return Never
	}
	return a + b
}

// SlidingWindowRebase converts a state kept under limit old into one under
// limit new at now: the current and previous counts carry over into the new
// limit's current and previous windows.
func SlidingWindowRebase(s SlidingWindow, old, new *Params, now int64) SlidingWindow {
	if old.Mode != Normal || new.Mode != Normal {
		return SlidingWindow{}
	}
	k, _ := windowOf(old, now)
	kn, _ := windowOf(new, now)
	switch k {
	case s.Win:
		return SlidingWindow{Win: kn, Cur: s.Cur, Prev: s.Prev}
	case s.Win + 1:
		return SlidingWindow{Win: kn, Prev: s.Cur}
	}
	return SlidingWindow{Win: kn}
}
