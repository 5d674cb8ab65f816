package algo

import (
	"math/big"
	"testing"
)

func big128(x u128) *big.Int {
	b := new(big.Int).SetUint64(x.hi)
	b.Lsh(b, 64)
	return b.Or(b, new(big.Int).SetUint64(x.lo))
}

func FuzzU128(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint64(1), uint64(1), uint64(1))
	f.Add(uint64(1<<63), uint64(1<<63-1), uint64(3), uint64(7), uint64(1<<62))
	f.Add(^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0))
	f.Fuzz(func(t *testing.T, a, b, c, e, d uint64) {
		x, y := mul64(a, b), mul64(c, e)
		bx, by := big128(x), big128(y)
		if want := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b)); bx.Cmp(want) != 0 {
			t.Fatalf("mul64(%d,%d) = %v, want %v", a, b, bx, want)
		}
		if got, want := x.cmp(y), bx.Cmp(by); got != want {
			t.Fatalf("cmp = %d, want %d", got, want)
		}
		sum := new(big.Int).Add(bx, by)
		if sum.BitLen() <= 128 {
			if got := big128(x.add(y)); got.Cmp(sum) != 0 {
				t.Fatalf("add = %v, want %v", got, sum)
			}
		}
		if bx.Cmp(by) >= 0 {
			if got, want := big128(x.sub(y)), new(big.Int).Sub(bx, by); got.Cmp(want) != 0 {
				t.Fatalf("sub = %v, want %v", got, want)
			}
		}
		if d == 0 {
			if _, _, ok := x.divmod(0); ok {
				t.Fatal("divmod by 0 ok")
			}
			return
		}
		bd := new(big.Int).SetUint64(d)
		q, r := new(big.Int).QuoRem(bx, bd, new(big.Int))
		gq, gr, ok := x.divmod(d)
		if ok != (q.BitLen() <= 64) {
			t.Fatalf("divmod ok = %v for quotient %v", ok, q)
		}
		if ok && (gq != q.Uint64() || gr != r.Uint64()) {
			t.Fatalf("divmod = %d,%d want %v,%v", gq, gr, q, r)
		}
		max63 := big.NewInt(1<<63 - 1)
		wantFloor := q
		if wantFloor.Cmp(max63) > 0 {
			wantFloor = max63
		}
		if got := x.div63(d); big.NewInt(got).Cmp(wantFloor) != 0 {
			t.Fatalf("div63 = %d want %v", got, wantFloor)
		}
		ceil := new(big.Int).Set(q)
		if r.Sign() != 0 {
			ceil.Add(ceil, big.NewInt(1))
		}
		if ceil.Cmp(max63) > 0 {
			ceil = max63
		}
		if got := x.ceil63(d); big.NewInt(got).Cmp(ceil) != 0 {
			t.Fatalf("ceil63 = %d want %v", got, ceil)
		}
	})
}

func TestGCD(t *testing.T) {
	for _, c := range []struct{ a, b, want uint64 }{
		{1, 1, 1}, {12, 18, 6}, {1e9, 3, 1}, {1e9, 100, 100}, {0, 5, 5}, {5, 0, 5},
		{1 << 40, 1 << 20, 1 << 20}, {3600e9, 5000, 5000}, {17, 1e9, 1},
	} {
		if got := gcd(c.a, c.b); got != c.want {
			t.Errorf("gcd(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := new(big.Int).GCD(nil, nil, new(big.Int).SetUint64(c.a), new(big.Int).SetUint64(c.b)); c.a != 0 && c.b != 0 && got.Uint64() != c.want {
			t.Errorf("table wrong for %d, %d", c.a, c.b)
		}
	}
}

func FuzzGCD(f *testing.F) {
	f.Add(uint64(12), uint64(18))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		if a == 0 || b == 0 {
			return
		}
		want := new(big.Int).GCD(nil, nil, new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
		if got := gcd(a, b); got != want.Uint64() {
			t.Fatalf("gcd(%d, %d) = %d, want %v", a, b, got, want)
		}
	})
}
