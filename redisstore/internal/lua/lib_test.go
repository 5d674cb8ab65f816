package lua_test

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

// libDriver runs operations of lib.lua given as triples (op, a, b) of
// ARGV, a and b in decimal, and returns one string per operation. It checks
// that every value it returns is in the library's normal form.
const libDriver = `
local SMALL, BASE, floor = 9e15, 1e7, math.floor
local SMALLV = dec('9000000000000000')
local function chk(v)
  if type(v) == 'number' then
    if v < 0 or v >= SMALL or v ~= floor(v) then return 'BADNUM:' .. tostring(v) end
    return fmt(v)
  end
  if type(v) ~= 'table' then return 'BADTYPE' end
  local n = #v
  if n < 3 or v[n] == 0 then return 'BADTOP' end
  for i = 1, n do
    local x = v[i]
    if type(x) ~= 'number' or x < 0 or x >= BASE or x ~= floor(x) then return 'BADLIMB' end
  end
  if cmp(v, SMALLV) < 0 then return 'BADSMALL' end
  return fmt(v)
end
local out = {}
for i = 1, #ARGV, 3 do
  local op, a, b = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local x, y
  if op ~= 'parse' then x, y = dec(a), dec(b) end
  local res
  if op == 'add' then
    res = chk(add(x, y))
  elseif op == 'sub' then
    res = chk(sub(x, y))
  elseif op == 'mul' then
    res = chk(mul(x, y))
  elseif op == 'divmod' then
    local q, r = divmod(x, y)
    res = chk(q) .. '/' .. chk(r)
  elseif op == 'udivmod' then
    local q, r, ok = udivmod(x, y)
    res = chk(q) .. '/' .. chk(r) .. '/' .. tostring(ok)
  elseif op == 'div63' then
    res = chk(div63(x, y))
  elseif op == 'ceil63' then
    res = chk(ceil63(x, y))
  elseif op == 'cmp' then
    local c = cmp(x, y)
    if lt(x, y) ~= (c < 0) or eq(x, y) ~= (c == 0) then c = 'INCONSISTENT' end
    res = tostring(c)
  elseif op == 'fits63' then
    res = tostring(fits63(x))
  elseif op == 'parse' then
    local v = parse(a)
    if v == nil then res = 'nil' else res = chk(v) end
  elseif op == 'dec' then
    res = chk(x)
  else
    res = 'BADOP'
  end
  out[#out + 1] = res
end
return out
`

type libOp struct {
	op   string
	a, b *big.Int
	s    string // parse: the input string
}

var (
	two64  = new(big.Int).Lsh(big.NewInt(1), 64)
	two128 = new(big.Int).Lsh(big.NewInt(1), 128)
	maxI64 = big.NewInt(1<<63 - 1)
)

func pow2(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }

// edgeValues are the values where a limb, the fast path or a Go type ends.
func edgeValues() []*big.Int {
	var vs []*big.Int
	for _, s := range []string{"0", "1", "2", "9999999", "10000000", "10000001", "99999999999999", "100000000000000",
		"899999999", "900000000", "8999999999999999", "9000000000000000", "9000000000000001"} {
		v, _ := new(big.Int).SetString(s, 10)
		vs = append(vs, v)
	}
	for _, n := range []uint{26, 52, 53, 54, 60, 62, 63, 64, 96, 126, 127} {
		p := pow2(n)
		vs = append(vs, new(big.Int).Sub(p, big.NewInt(1)), p, new(big.Int).Add(p, big.NewInt(1)))
	}
	vs = append(vs, new(big.Int).Sub(two128, big.NewInt(1)))
	// Products near 2^126.
	a := new(big.Int).Sub(pow2(63), big.NewInt(1))
	vs = append(vs, new(big.Int).Mul(a, a), new(big.Int).Mul(a, new(big.Int).Sub(a, big.NewInt(2))))
	return vs
}

// randBelow returns a value of random bit length up to bits, or an edge
// value.
func randBelow(r *rand.Rand, bits uint, edges []*big.Int) *big.Int {
	if r.IntN(4) == 0 {
		for {
			e := edges[r.IntN(len(edges))]
			if e.BitLen() <= int(bits) {
				return e
			}
		}
	}
	n := uint(r.IntN(int(bits) + 1))
	v := new(big.Int)
	for v.BitLen() < int(n) {
		v.Lsh(v, 32).Or(v, big.NewInt(int64(r.Uint32())))
	}
	if n < uint(v.BitLen()) {
		v.Rsh(v, uint(v.BitLen())-n)
	}
	return v
}

func (o libOp) want() string {
	a, b := o.a, o.b
	switch o.op {
	case "add":
		return new(big.Int).Add(a, b).String()
	case "sub":
		return new(big.Int).Sub(a, b).String()
	case "mul":
		return new(big.Int).Mul(a, b).String()
	case "divmod":
		q, m := new(big.Int).QuoRem(a, b, new(big.Int))
		return q.String() + "/" + m.String()
	case "udivmod":
		q, m := new(big.Int).QuoRem(a, b, new(big.Int))
		if q.Cmp(two64) >= 0 {
			return "0/0/false"
		}
		return q.String() + "/" + m.String() + "/true"
	case "div63", "ceil63":
		q, m := new(big.Int).QuoRem(a, b, new(big.Int))
		if q.Cmp(two64) >= 0 || q.Cmp(maxI64) >= 0 {
			return maxI64.String()
		}
		if o.op == "ceil63" && m.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		return q.String()
	case "cmp":
		return strconv.Itoa(a.Cmp(b))
	case "fits63":
		return strconv.FormatBool(a.Cmp(maxI64) <= 0)
	case "parse": // digits only (leading zeros allowed), at most 19, at most MaxInt64
		v, err := strconv.ParseInt(o.s, 10, 64)
		if err != nil || v < 0 || len(o.s) > 19 || strings.Trim(o.s, "0123456789") != "" {
			return "nil"
		}
		return strconv.FormatInt(v, 10)
	case "dec":
		return a.String()
	}
	return "?"
}

func randParseInput(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		return []string{"", "-1", "+1", "00", "01", "1a", " 1", "1 ", "0x10", "1e5", "9223372036854775808",
			"9223372036854775807", "99999999999999999999", "18446744073709551615", "0", "-0", "1.0", "١"}[r.IntN(18)]
	case 1:
		return strconv.FormatUint(r.Uint64(), 10)
	case 2:
		return "0" + strconv.FormatInt(r.Int64N(1e12), 10)
	default:
		return strconv.FormatInt(r.Int64()>>r.IntN(63), 10)
	}
}

func TestLib(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Standalone(t).Client(t)
	src := lua.LibSource() + libDriver
	edges := edgeValues()
	r := rand.New(rand.NewPCG(1, 2))
	var ops []libOp
	// Every pair of edge values, then random ones.
	for _, a := range edges {
		for _, b := range edges {
			ops = append(ops, libOp{op: "add", a: a, b: b}, libOp{op: "cmp", a: a, b: b})
			if a.Cmp(b) >= 0 {
				ops = append(ops, libOp{op: "sub", a: a, b: b})
			}
			if a.BitLen() <= 64 && b.BitLen() <= 64 {
				ops = append(ops, libOp{op: "mul", a: a, b: b})
			}
			if b.Sign() > 0 && b.BitLen() <= 64 {
				ops = append(ops, libOp{op: "divmod", a: a, b: b}, libOp{op: "udivmod", a: a, b: b},
					libOp{op: "div63", a: a, b: b}, libOp{op: "ceil63", a: a, b: b})
			}
		}
		ops = append(ops, libOp{op: "fits63", a: a, b: a}, libOp{op: "dec", a: a, b: a},
			libOp{op: "parse", a: a, b: a, s: a.String()})
	}
	// Divisions that take Knuth's rare steps in base 1e7: two corrections
	// of the estimated quotient limb, and the add-back (step D6).
	for _, c := range [][2]string{
		{"60869816331162500000100000025000000", "50877469999998"},
		{"5000001874123999999988797414", "50000009999998"},
		{"4999999478407500000010793595", "50000009999999"},
		{"262936240000002500000199999990000001", "68087319999998"},
		{"1304790118546795000001", "34228229999999"},
		{"439685799999994999999", "50000019309094"},
		{"640793600000002914571", "100000000000001"},
		{"1000000049999990000001", "100000015000001"},
		{"864309600000005000001", "200000000000002"},
		{"1000000050000000982282", "200000010000002"},
		{"500000100000000000000", "100000000000001"},
		{"3400670000002000000101509797391555", "100000010000001"},
	} {
		a, _ := new(big.Int).SetString(c[0], 10)
		b, _ := new(big.Int).SetString(c[1], 10)
		ops = append(ops, libOp{op: "divmod", a: a, b: b})
	}
	for range 20000 {
		var o libOp
		switch k := r.IntN(9); k {
		case 0:
			o = libOp{op: "add", a: randBelow(r, 127, edges), b: randBelow(r, 127, edges)}
		case 1:
			o = libOp{op: "sub", a: randBelow(r, 128, edges), b: randBelow(r, 128, edges)}
			if o.a.Cmp(o.b) < 0 {
				o.a, o.b = o.b, o.a
			}
		case 2:
			o = libOp{op: "mul", a: randBelow(r, 64, edges), b: randBelow(r, 64, edges)}
		case 3, 4:
			o = libOp{op: []string{"divmod", "udivmod", "div63", "ceil63"}[r.IntN(4)], a: randBelow(r, 128, edges), b: randBelow(r, 64, edges)}
			if r.IntN(3) == 0 { // a near a multiple of b
				o.a = new(big.Int).Mul(o.b, randBelow(r, 64, edges))
				o.a.Add(o.a, big.NewInt(int64(r.IntN(3))))
				if o.a.BitLen() > 128 {
					o.a.Rsh(o.a, uint(o.a.BitLen()-128))
				}
			}
			if o.b.Sign() == 0 {
				o.b = big.NewInt(1)
			}
		case 5:
			o = libOp{op: "cmp", a: randBelow(r, 128, edges), b: randBelow(r, 128, edges)}
			if r.IntN(2) == 0 {
				o.b = o.a
			}
		case 6:
			o = libOp{op: "fits63", a: randBelow(r, 128, edges)}
			o.b = o.a
		case 7:
			o = libOp{op: "dec", a: randBelow(r, 128, edges)}
			o.b = o.a
		default:
			o = libOp{op: "parse", a: big.NewInt(0), b: big.NewInt(0), s: randParseInput(r)}
		}
		ops = append(ops, o)
	}
	const batch = 2000
	for start := 0; start < len(ops); start += batch {
		chunk := ops[start:min(start+batch, len(ops))]
		args := make([]any, 0, 3*len(chunk))
		for _, o := range chunk {
			switch {
			case o.op == "parse":
				args = append(args, o.op, "0", "0")
			default:
				args = append(args, o.op, o.a.String(), o.b.String())
			}
		}
		// parse takes its string in place of a (dec of a non-number is never
		// asked for).
		for i, o := range chunk {
			if o.op == "parse" {
				args[3*i+1] = o.s
			}
		}
		res, err := rdb.Eval(ctx, src, nil, args...).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(chunk) {
			t.Fatalf("%d results for %d ops", len(res), len(chunk))
		}
		for i, o := range chunk {
			if want := o.want(); res[i] != want {
				t.Errorf("%s(%v, %v %q) = %s, want %s", o.op, o.a, o.b, o.s, res[i], want)
			}
		}
	}
}

// TestLibParseFormat round-trips every int64 edge through parse and fmt.
func TestLibParseFormat(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Standalone(t).Client(t)
	var args []any
	var want []string
	for _, v := range []int64{0, 1, 9, 10, 1e7 - 1, 1e7, 1e14, 1e15, 9e15 - 1, 9e15, 1<<53 - 1, 1 << 53, 1<<53 + 1, 1 << 62, 1<<63 - 1} {
		s := strconv.FormatInt(v, 10)
		args = append(args, "parse", s, "0")
		want = append(want, s)
	}
	res, err := rdb.Eval(ctx, lua.LibSource()+libDriver, nil, args...).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res, " "); got != strings.Join(want, " ") {
		t.Fatalf("got %s\nwant %s", got, fmt.Sprint(want))
	}
}
