package algo

// Weighted fair sharing of one GCRA budget among tenants (fair.Share;
// redisstore's share.lua mirrors this file line for line).
//
// The budget is a GCRA limit (Params P). Each tenant has a weight w and a
// share: a GCRA in the budget's units whose emission interval is
// T×W/w, W being the sum of the weights of the tenants active in the last
// two windows (a window is ShareParams.Window ns long, aligned on the
// epoch), and whose capacity is the budget's, B×T: the tenant's share is
// B×w/W events of burst and R×w/W of rate, and the shares of the active
// tenants add up to the budget. A request of n events is admitted
//
//  1. within its share, if the budget and the tenant's share both admit
//     n: both are charged;
//  2. else beyond the reserve, if the budget admits n and still holds
//     Keep events after them (LendN = CapN - Keep×Tn): only the budget is
//     charged, so that what the busy tenants use beyond their shares is
//     never held against them later;
//  3. else it is refused.
//
// Every admission is charged to the budget, so the events admitted never
// exceed the budget's bound. A tenant within its share is refused only if
// the budget itself is empty, and tenants beyond their shares can never
// take the last Keep events, so each active tenant gets at least its
// weighted share when the budget is contended; an idle tenant's share is
// left to the budget, where the others take it beyond the reserve (at
// once), and the tenant leaves W within two windows.

// ShareMaxWeight is the largest weight of a tenant.
const ShareMaxWeight = 1 << 20

// shareMaxSum bounds the sums of weights a ShareBudget keeps (they
// saturate there), so that the script holds them as exact Lua numbers.
const shareMaxSum = 1 << 52

// ShareBudget is the state of a budget shared by tenants: its GCRA, and
// the weights of the tenants seen in the current window and the one
// before. Win is the current window's index plus one (0: none yet); Cur
// sums the weights of the tenants seen in it, Prev those seen in the one
// before, and New those seen in it but not in the one before, so that the
// active weight is Prev + New. The zero value is a full budget that has
// seen no one.
type ShareBudget struct {
	GCRA
	Win, Cur, Prev, New int64
}

// ShareTenant is the state of one tenant of a budget: its share's GCRA,
// and the index plus one of the last window it asked in (0: never). The
// zero value is a tenant that has used nothing and was not seen.
type ShareTenant struct {
	GCRA
	Seen int64
}

// ShareParams are the parameters of a shared budget: its limit (Mode
// Normal), the capacity beyond the reserve LendN = CapN - Keep×Tn (units,
// 0 to CapN), and the length of a window (ns, at least 1).
type ShareParams struct {
	P      Params
	LendN  int64
	Window int64
}

// shareCount moves budget b to window win (the index plus one of now's)
// and counts tenant t of weight w in it, and returns them with the active
// weight W (at least w). An instant before the budget's window counts in
// the budget's window.
func shareCount(b ShareBudget, t ShareTenant, win, w int64) (ShareBudget, ShareTenant, int64) {
	if win == b.Win+1 {
		b.Win, b.Prev, b.Cur, b.New = win, b.Cur, 0, 0
	} else if win > b.Win {
		b.Win, b.Prev, b.Cur, b.New = win, 0, 0, 0
	}
	win = b.Win
	if t.Seen != win {
		b.Cur = min(b.Cur+w, shareMaxSum)
		if t.Seen != win-1 {
			b.New = min(b.New+w, shareMaxSum)
		}
		t.Seen = win
	}
	return b, t, max(b.Prev+b.New, w)
}

// shareCost returns the cost of n <= Burst events to a tenant of weight w
// among an active weight W: ⌈n×Tn×W/w⌉ units, saturated at Never.
func shareCost(p *Params, n, bigW, w int64) int64 {
	return mul64(uint64(n)*uint64(p.Tn), uint64(bigW)).ceil63(uint64(w))
}

// ShareStep decides n >= 0 events of a tenant of weight w (1 to
// ShareMaxWeight) at now, and returns the new states and the decision.
// sp.P.Mode must be Normal. A request of n > 0 events that can be
// admitted (n at most the burst) counts the tenant as active, admitted or
// not; a peek (n = 0) changes nothing.
//
// Remaining is what the tenant could take at once: the larger of what
// both the budget and its share hold, and what the budget holds beyond
// the reserve. RetryAfter is the wait until the request would fit if
// nothing else happened (Never if it never can: n beyond both the share's
// burst and the budget's beyond the reserve, or beyond the burst).
// ResetAfter is the time until the budget and the share are both full.
func ShareStep(b ShareBudget, t ShareTenant, sp *ShareParams, now, n, w int64) (ShareBudget, ShareTenant, Result) {
	p := &sp.P
	b1, t1, bigW := shareCount(b, t, now/sp.Window+1, w)
	d0 := b1.debt(p, now)
	td := t1.debt(p, now)
	if n == 0 {
		return b, t, shareReport(sp, d0, td, bigW, w, true, 0)
	}
	if n > p.Burst {
		return b, t, shareReport(sp, d0, td, bigW, w, false, Never)
	}
	capN := from64(uint64(p.CapN))
	need := d0.add64(uint64(n) * uint64(p.Tn))
	cost := shareCost(p, n, bigW, w)
	within := cost <= p.CapN
	tneed := td.add64(uint64(cost))
	if within && !capN.less(need) && !capN.less(tneed) {
		b1.GCRA, t1.GCRA = gcraAt(p, now, need), gcraAt(p, now, tneed)
		return b1, t1, shareReport(sp, need, tneed, bigW, w, true, 0)
	}
	lendN := from64(uint64(sp.LendN))
	if !lendN.less(need) {
		b1.GCRA = gcraAt(p, now, need)
		return b1, t1, shareReport(sp, need, td, bigW, w, true, 0)
	}
	wait := Never
	if within {
		wait = 0
		if capN.less(need) {
			wait = need.sub(capN).ceil63(uint64(p.Td))
		}
		if capN.less(tneed) {
			wait = max(wait, tneed.sub(capN).ceil63(uint64(p.Td)))
		}
	}
	if uint64(n)*uint64(p.Tn) <= uint64(sp.LendN) {
		wait = min(wait, need.sub(lendN).ceil63(uint64(p.Td)))
	}
	return b1, t1, shareReport(sp, d0, td, bigW, w, false, wait)
}

// shareReport fills a Result from the budget's debt d and the tenant's td
// (units) after the decision.
func shareReport(sp *ShareParams, d, td u128, bigW, w int64, allowed bool, retry int64) Result {
	p := &sp.P
	r := Result{Allowed: allowed, RetryAfter: retry}
	var own, share, lend int64
	if d.less(from64(uint64(p.CapN))) {
		own = (p.CapN - int64(d.lo)) / p.Tn
	}
	if td.less(from64(uint64(p.CapN))) {
		share = mul64(uint64((p.CapN-int64(td.lo))/p.Tn), uint64(w)).div63(uint64(bigW))
	}
	if d.less(from64(uint64(sp.LendN))) {
		lend = (sp.LendN - int64(d.lo)) / p.Tn
	}
	r.Remaining = max(min(own, share), lend)
	r.ResetAfter = max(d.ceil63(uint64(p.Td)), td.ceil63(uint64(p.Td)))
	return r
}

// ShareUndo gives back n events a tenant of weight w was admitted at now:
// the budget's by GCRAUndo, and the share's at the cost they have at now
// (the share never beyond full: events admitted beyond the reserve, which
// the share was not charged for, give it back what it has used at most).
// The windows are left as they are. n <= 0 changes nothing.
func ShareUndo(b ShareBudget, t ShareTenant, sp *ShareParams, now, n, w int64) (ShareBudget, ShareTenant) {
	p := &sp.P
	if n <= 0 || n > p.Burst {
		return b, t
	}
	b.GCRA = GCRAUndo(b.GCRA, p, now, n)
	_, _, bigW := shareCount(b, t, now/sp.Window+1, w)
	t.GCRA = gcraGive(t.GCRA, p, now, from64(uint64(shareCost(p, n, bigW, w))))
	return b, t
}
