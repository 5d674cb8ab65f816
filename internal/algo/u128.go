package algo

import "math/bits"

// u128 is an unsigned 128-bit integer. The step functions use it for the
// products of a time and a rate, which do not fit in 64 bits.
type u128 struct{ hi, lo uint64 }

func from64(x uint64) u128 { return u128{lo: x} }

// mul64 returns a*b.
func mul64(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

func (x u128) add(y u128) u128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, c)
	return u128{hi, lo}
}

func (x u128) add64(y uint64) u128 { return x.add(u128{lo: y}) }

// sub returns x-y; the caller ensures x >= y.
func (x u128) sub(y u128) u128 {
	lo, b := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, b)
	return u128{hi, lo}
}

func (x u128) cmp(y u128) int {
	switch {
	case x.hi < y.hi:
		return -1
	case x.hi > y.hi:
		return 1
	case x.lo < y.lo:
		return -1
	case x.lo > y.lo:
		return 1
	}
	return 0
}

func (x u128) less(y u128) bool { return x.cmp(y) < 0 }

// fits63 reports whether x fits in a non-negative int64.
func (x u128) fits63() bool { return x.hi == 0 && x.lo <= 1<<63-1 }

// divmod returns x/d and x%d. If the quotient does not fit in 64 bits it
// returns ok=false. d must not be zero.
func (x u128) divmod(d uint64) (q, r uint64, ok bool) {
	if d == 0 || x.hi >= d {
		return 0, 0, false
	}
	if x.hi == 0 {
		return x.lo / d, x.lo % d, true
	}
	q, r = bits.Div64(x.hi, x.lo, d)
	return q, r, true
}

// div63 returns floor(x/d) saturated to the int64 range [0, maxInt64].
func (x u128) div63(d uint64) int64 {
	q, _, ok := x.divmod(d)
	if !ok || q > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(q)
}

// ceil63 returns ceil(x/d) saturated to [0, maxInt64].
func (x u128) ceil63(d uint64) int64 {
	if d == 1 && x.hi == 0 && x.lo <= 1<<63-1 {
		return int64(x.lo)
	}
	q, r, ok := x.divmod(d)
	if !ok || q > 1<<63-1 {
		return 1<<63 - 1
	}
	if r != 0 {
		if q == 1<<63-1 {
			return q2i(q)
		}
		q++
	}
	return q2i(q)
}

func q2i(q uint64) int64 { return int64(q) }

// gcd returns the greatest common divisor of a and b (both > 0), by the
// binary algorithm.
func gcd(a, b uint64) uint64 {
	if a == 0 {
		return b
	}
	if b == 0 {
		return a
	}
	shift := bits.TrailingZeros64(a | b)
	a >>= bits.TrailingZeros64(a)
	for b != 0 {
		b >>= bits.TrailingZeros64(b)
		if a > b {
			a, b = b, a
		}
		b -= a
	}
	return a << shift
}
