package algo

// Block is a run of slots of a shared GCRA schedule that one instance took
// in a partial grant and spends locally (package prefetch). The shared
// state's TAT moved from a TAT at or after the grant's instant to End by
// m×T, so the slots are the m intervals of length T ending at End; Next is
// the first one not spent yet. A slot starting at v may be spent at an
// instant now <= v (an earlier slot has expired: spending it would let
// capacity pile up, which GCRA never does) and, as in GCRA, only if the
// slots spent so far end within B×T of now. Spending the slots so keeps
// every instance's events, added together, within the shared limit's bound.
// The buckets (token and leaky) map onto the same schedule (their time to
// full is a TAT), so their blocks are Blocks too.
type Block struct {
	Next GCRA
	End  GCRA
}

// BlockOf returns the block of m slots ending end ns after at (the
// grant's instant and its ResetAfter, both on the clock that spends the
// block, rounded down by the caller so that the block ends no later than
// the shared state's TAT).
func BlockOf(p *Params, at, end, m int64) Block {
	e := GCRA{At: sat(at, end)}
	if p.Mode != Normal || m <= 0 {
		return Block{Next: e, End: e}
	}
	eu := units(e, p)
	span := mul64(uint64(m), uint64(p.Tn))
	if eu.less(span) {
		return Block{End: e}
	}
	return Block{Next: fromUnits(eu.sub(span), p), End: e}
}

// BlockStep spends n slots of b at now if they fit: from the first slot
// not expired (max(Next, now)), within the block and within B×T of now. It
// returns the block and whether the events were admitted.
func BlockStep(b Block, p *Params, now, n int64) (Block, bool) {
	switch {
	case p.Mode == Unlimited || n == 0:
		return b, true
	case p.Mode == Closed || n < 0 || n > p.Burst:
		return b, false
	}
	need := b.Next.debt(p, now).add64(uint64(n) * uint64(p.Tn))
	if from64(uint64(p.CapN)).less(need) {
		return b, false
	}
	next := gcraAt(p, now, need)
	if units(b.End, p).less(units(next, p)) {
		return b, false
	}
	b.Next = next
	return b, true
}

// BlockLeft returns how many slots of b can still be spent at now: those
// not expired, at most the burst's worth within B×T of now.
func BlockLeft(b Block, p *Params, now int64) int64 {
	switch p.Mode {
	case Unlimited:
		return p.Burst
	case Closed:
		return 0
	}
	start := units(b.Next, p)
	if nu := mul64(uint64(max(now, 0)), uint64(p.Td)); start.less(nu) {
		start = nu
	}
	end := units(b.End, p)
	if !start.less(end) {
		return 0
	}
	left := end.sub(start).div63(uint64(p.Tn))
	d := b.Next.debt(p, now)
	capN := from64(uint64(p.CapN))
	if !d.less(capN) {
		return 0
	}
	return min(left, capN.sub(d).div63(uint64(p.Tn)))
}

// BlockUndo gives back the n slots the latest BlockStep of b at now took,
// as GCRAUndo gives back an admission: Next moves back by n×T, never
// before now. Only the latest admission may be given back this way (an
// earlier one's slots are followed by spent ones).
func BlockUndo(b Block, p *Params, now, n int64) Block {
	b.Next = GCRAUndo(b.Next, p, now, n)
	return b
}
