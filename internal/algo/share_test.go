package algo

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// shareM is a budget shared by four tenants, for the fuzz target.
type shareM struct {
	b  ShareBudget
	ts [4]ShareTenant
	sp *ShareParams
}

// FuzzShare runs random timelines of four tenants of random weights
// through ShareStep and ShareUndo and checks that the budget's bound holds
// over all of them, that a peek changes nothing, and that waiting
// RetryAfter is enough (the active weight only falls while nobody asks),
// and that Remaining events are admitted.
func FuzzShare(f *testing.F) {
	f.Add(uint16(3), uint16(5), uint16(6), uint16(9), []byte{0, 0, 1, 0, 0, 0x11, 0, 0, 0x21, 100, 0, 0x31, 7, 0, 0x82})
	f.Add(uint16(99), uint16(6), uint16(19), uint16(0), []byte("the quick brown fox jumps over the lazy dog, three times"))
	f.Fuzz(func(t *testing.T, rate, period, burst, window uint16, data []byte) {
		p, err := fuzzLimit(rate, period, burst)
		if err != nil || p.Mode != Normal {
			t.Skip()
		}
		keep := (p.Burst + 1) / 2
		sp := &ShareParams{P: p, LendN: (p.Burst - keep) * p.Tn, Window: int64(window)*(p.Tn/p.Td/8+1) + 1}
		m := &shareM{sp: sp}
		weights := [4]int64{1, 3, 1 << 20, 7}
		if len(data) > 600 {
			data = data[:600]
		}
		var ev []event
		now := int64(1e15)
		for len(data) >= 3 {
			dt := int64(binary.LittleEndian.Uint16(data)) * (p.Tn/p.Td/64 + 1) / 16
			who := int(data[2]>>4) % 4
			n := int64(data[2] % 8)
			undo := data[2]&0x80 != 0 && n > 0
			data = data[3:]
			now += dt
			w := weights[who]
			where := fmt.Sprintf("%+v at %d tenant %d n=%d", sp, now, who, n)
			if undo {
				m.b, m.ts[who] = ShareUndo(m.b, m.ts[who], sp, now, n, w)
				continue
			}
			b0, t0 := m.b, m.ts[who]
			b, tn, r := ShareStep(b0, t0, sp, now, n, w)
			switch {
			case n == 0:
				if !r.Allowed || b != b0 || tn != t0 {
					t.Fatalf("%s: a peek got %+v or changed the state", where, r)
				}
			case n > p.Burst:
				if r.Allowed || r.RetryAfter != Never {
					t.Fatalf("%s: n > burst got %+v", where, r)
				}
			case r.Allowed:
				ev = append(ev, event{now, n})
			case r.RetryAfter <= 0:
				t.Fatalf("%s: denied with RetryAfter %+v", where, r)
			case r.RetryAfter != Never:
				if _, _, r2 := ShareStep(b0, t0, sp, now+r.RetryAfter, n, w); !r2.Allowed {
					t.Fatalf("%s: denied %+v but not admitted after RetryAfter", where, r)
				}
			}
			if r.Remaining < 0 || r.Remaining > p.Burst {
				t.Fatalf("%s: Remaining out of range %+v", where, r)
			}
			if r.Remaining > 0 {
				if _, _, r2 := ShareStep(b, tn, sp, now, r.Remaining, w); !r2.Allowed {
					t.Fatalf("%s: Remaining %d not admitted", where, r.Remaining)
				}
			}
			m.b, m.ts[who] = b, tn
		}
		checkBucketBound(t, "share", &p, ev)
	})
}

// TestShareSplitsByWeight: tenants of weights 1 and 3 asking at ten times
// the budget get it 1:3 once the first burst is spent; alone, one gets all
// of it.
func TestShareSplitsByWeight(t *testing.T) {
	p, _ := Compile(100, 1e9, 100)
	sp := &ShareParams{P: p, LendN: 50 * p.Tn, Window: 5e8}
	var b ShareBudget
	var ts [2]ShareTenant
	w := [2]int64{1, 3}
	var got [2]int
	const ms = int64(1e6)
	for now := int64(1e15); now < 1e15+20_000*ms; now += ms {
		i := int(now/ms) % 2
		var r Result
		b, ts[i], r = ShareStep(b, ts[i], sp, now, 1, w[i])
		if r.Allowed && now >= 1e15+10_000*ms {
			got[i]++
		}
	}
	if got[0] != 250 || got[1] != 750 {
		t.Errorf("admitted %v over 10 s, want [250 750]", got)
	}
	got = [2]int{}
	for now := int64(1e15 + 30_000*ms); now < 1e15+40_000*ms; now += ms {
		var r Result
		b, ts[0], r = ShareStep(b, ts[0], sp, now, 1, 1)
		if r.Allowed && now >= 1e15+31_000*ms {
			got[0]++
		}
	}
	if got[0] != 900 {
		t.Errorf("alone, admitted %d over 9 s, want 900", got[0])
	}
}
