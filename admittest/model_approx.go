package admittest

import "math/big"

// The approximate sliding window (admit.AlgSlidingWindowApprox) counts the
// previous window's events as whole ones: at instant x in the current
// window [S, S+W) its estimate is ⌊Prev×(S+W-x)/W⌋ + Cur, and n fits iff
// that is at most B-n. It falls in steps, so the first instant at which it
// is at most a target is the first whole nanosecond after the instant the
// exact weighted term reaches the next whole number.

// approxEstimate returns ⌊Prev×(S+W-x)/W⌋ + Cur for x in [S, S+W).
func (m *model) approxEstimate(k *modelKey, start, x *big.Rat) *big.Rat {
	left := new(big.Rat).Sub(new(big.Rat).Add(start, m.c), x)
	w := floorRat(mulInt(left.Quo(left, m.c), k.prev))
	return ratInt(w + k.cur)
}

// approxRetry returns the first instant (a whole nanosecond) at which the
// approximate estimate, with no more events admitted, is at most target:
// ⌊Prev×(S+W-x)/W⌋ + Cur on [S, S+W), ⌊Cur×(S+2W-x)/W⌋ on [S+W, S+2W),
// then 0. With target 0 it is the instant the key is full again.
func (m *model) approxRetry(k *modelKey, start *big.Rat, target int64) *big.Rat {
	end := new(big.Rat).Add(start, m.c)
	// The first whole ns after end - (room+1)×W/count, where count×(end-x)/W
	// falls below room+1.
	after := func(end *big.Rat, count, room int64) *big.Rat {
		back := mulInt(m.c, room+1)
		back.Quo(back, ratInt(count))
		return ratInt(floorRat(new(big.Rat).Sub(end, back)) + 1)
	}
	if target >= k.cur {
		if k.prev == 0 {
			return start
		}
		return after(end, k.prev, target-k.cur)
	}
	// In the next window, from its start on.
	at := after(new(big.Rat).Add(end, m.c), k.cur, target)
	if first := ratInt(ceilRat(end)); at.Cmp(first) < 0 {
		return first
	}
	return at
}
