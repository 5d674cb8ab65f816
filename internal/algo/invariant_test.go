package algo

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"testing"
	"time"
)

// machine runs one algorithm's step function over its state.
type machine interface {
	step(now, n int64) Result
	clone() machine
}

type gcraM struct {
	s GCRA
	p *Params
}

func (m *gcraM) step(now, n int64) (r Result) { m.s, r = GCRAStep(m.s, m.p, now, n); return }
func (m *gcraM) clone() machine               { c := *m; return &c }

type bucketM struct {
	s Bucket
	p *Params
}

func (m *bucketM) step(now, n int64) (r Result) { m.s, r = BucketStep(m.s, m.p, now, n); return }
func (m *bucketM) clone() machine               { c := *m; return &c }

type fixedM struct {
	s FixedWindow
	p *Params
}

func (m *fixedM) step(now, n int64) (r Result) { m.s, r = FixedWindowStep(m.s, m.p, now, n); return }
func (m *fixedM) clone() machine               { c := *m; return &c }

type slidingM struct {
	s      SlidingWindow
	p      *Params
	approx bool // SlidingWindowApproxStep
}

func (m *slidingM) step(now, n int64) (r Result) {
	if m.approx {
		m.s, r = SlidingWindowApproxStep(m.s, m.p, now, n)
		return
	}
	m.s, r = SlidingWindowStep(m.s, m.p, now, n)
	return
}
func (m *slidingM) clone() machine { c := *m; return &c }

type logM struct {
	s *SlidingLog
	p *Params
}

func (m *logM) step(now, n int64) Result { return m.s.SlidingLogStep(m.p, now, n) }
func (m *logM) clone() machine           { return &logM{m.s.Clone(), m.p} }

var machines = []struct {
	name   string
	window bool
	make   func(p *Params) machine
}{
	{"gcra", false, func(p *Params) machine { return &gcraM{p: p} }},
	{"bucket", false, func(p *Params) machine { return &bucketM{p: p} }},
	{"fixed_window", true, func(p *Params) machine { return &fixedM{p: p} }},
	{"sliding_window", true, func(p *Params) machine { return &slidingM{p: p} }},
	{"sliding_window_approx", true, func(p *Params) machine { return &slidingM{p: p, approx: true} }},
	{"sliding_log", true, func(p *Params) machine { return &logM{s: &SlidingLog{}, p: p} }},
}

type event struct{ at, n int64 }

// fuzzLimit derives a valid limit from three bytes-worth of fuzz input: small
// bursts and rates, periods from 1ns to a day, often awkward fractions.
func fuzzLimit(rate, period, burst uint16) (Params, error) {
	r := int64(rate%50) + 1
	if rate >= 60000 {
		// Large prime rates: over a day, CapN passes 2^62.
		r = []int64{65521, 99991, 100003}[rate%3]
	}
	periods := []int64{1, 7, 1000, int64(time.Millisecond), 3 * int64(time.Millisecond), int64(time.Second), 7 * int64(time.Second), int64(time.Minute), 24 * int64(time.Hour)}
	pd := periods[int(period)%len(periods)] * (int64(period/16%5) + 1)
	return Compile(r, pd, int64(burst%20))
}

// checkTimeline runs the timeline through m and checks every documented
// property of each decision.
func checkTimeline(t *testing.T, name string, p *Params, m machine, data []byte, start int64) (admitted []event, monotone bool) {
	t.Helper()
	now := start
	monotone = true
	for len(data) >= 3 {
		dt := int64(binary.LittleEndian.Uint16(data)) * (p.Tn/p.Td/64 + 1) / 16
		n := int64(data[2] % 8)
		if data[2] >= 250 {
			n = p.Burst + 1
		}
		if data[2] >= 240 && data[2] < 250 && now-dt >= 0 {
			dt, monotone = -dt, false
		}
		data = data[3:]
		now += dt
		before := m.clone()
		r := m.step(now, n)
		where := fmt.Sprintf("%s %+v at %d n=%d", name, p, now-start, n)
		switch {
		case n > p.Burst:
			if r.Allowed || r.RetryAfter != Never {
				t.Fatalf("%s: n > burst got %+v", where, r)
			}
		case n == 0:
			if !r.Allowed || r.RetryAfter != 0 {
				t.Fatalf("%s: peek got %+v", where, r)
			}
		case r.Allowed:
			admitted = append(admitted, event{now, n})
			if r.RetryAfter != 0 {
				t.Fatalf("%s: allowed with RetryAfter %+v", where, r)
			}
		default:
			// RetryAfter is exact: the same request is admitted then, and
			// not one nanosecond before.
			if r.RetryAfter <= 0 || r.RetryAfter == Never {
				t.Fatalf("%s: denied with RetryAfter %+v", where, r)
			}
			if !before.clone().step(now+r.RetryAfter, n).Allowed {
				t.Fatalf("%s: denied %+v but not admitted after RetryAfter", where, r)
			}
			if before.clone().step(now+r.RetryAfter-1, n).Allowed {
				t.Fatalf("%s: denied %+v but admitted 1ns before RetryAfter", where, r)
			}
		}
		if r.Remaining < 0 || r.Remaining > p.Burst {
			t.Fatalf("%s: Remaining out of range %+v", where, r)
		}
		// Remaining is exact: that many more are admitted now, one more is not.
		after := m.clone()
		if r.Remaining > 0 && !after.clone().step(now, r.Remaining).Allowed {
			t.Fatalf("%s: Remaining %d not admitted", where, r.Remaining)
		}
		if r.Remaining < p.Burst && after.clone().step(now, r.Remaining+1).Allowed {
			t.Fatalf("%s: Remaining %d but %d admitted", where, r.Remaining, r.Remaining+1)
		}
		// ResetAfter is exact: full then, not full 1ns before.
		if got := after.clone().step(now+r.ResetAfter, 0).Remaining; got != p.Burst {
			t.Fatalf("%s: %+v: Remaining %d after ResetAfter", where, r, got)
		}
		if r.ResetAfter > 0 && after.clone().step(now+r.ResetAfter-1, 0).Remaining == p.Burst {
			t.Fatalf("%s: %+v: full 1ns before ResetAfter", where, r)
		}
	}
	return admitted, monotone
}

// checkBucketBound checks that every closed interval [a, b] of admitted
// events holds at most B + ⌊(b-a)/T⌋ events. With ceil set it checks
// B + ⌈(b-a)/T⌉ + ceil[0] instead (for b > a): the approximate sliding
// window's bound with 0, the strict one's with -1.
func checkBucketBound(t *testing.T, name string, p *Params, ev []event, ceil ...int64) {
	t.Helper()
	for i := range ev {
		sum := int64(0)
		for j := i; j < len(ev); j++ {
			sum += ev[j].n
			span := ev[j].at - ev[i].at
			allowed := p.Burst + mul64(uint64(span), uint64(p.Td)).div63(uint64(p.Tn))
			if len(ceil) > 0 && span > 0 {
				allowed = p.Burst + mul64(uint64(span), uint64(p.Td)).ceil63(uint64(p.Tn)) + ceil[0]
			}
			if sum > allowed {
				t.Fatalf("%s %+v: %d events in [%d, %d] > the bound %d", name, p, sum, ev[i].at, ev[j].at, allowed)
			}
		}
	}
}

// checkWindowBound checks the fixed window's bound: an interval of length t
// holds at most B×(⌈t/W⌉+1), and each window at most B.
func checkWindowBound(t *testing.T, name string, p *Params, ev []event) {
	t.Helper()
	w := new(big.Rat).SetFrac64(p.CapN, p.Td)
	for i := range ev {
		sum := int64(0)
		for j := i; j < len(ev); j++ {
			sum += ev[j].n
			q := new(big.Rat).Quo(new(big.Rat).SetInt64(ev[j].at-ev[i].at), w)
			c := new(big.Int).Quo(q.Num(), q.Denom())
			if !q.IsInt() {
				c.Add(c, big.NewInt(1))
			}
			if bound := p.Burst * (c.Int64() + 1); sum > bound {
				t.Fatalf("%s %+v: %d events in [%d, %d] > %d", name, p, sum, ev[i].at, ev[j].at, bound)
			}
		}
	}
}

// checkLogBound checks the sliding log's bound: every interval shorter than
// the window holds at most B events.
func checkLogBound(t *testing.T, p *Params, ev []event) {
	t.Helper()
	w := p.Window()
	for i := range ev {
		sum := int64(0)
		for j := i; j < len(ev) && ev[j].at-ev[i].at < w; j++ {
			if sum += ev[j].n; sum > p.Burst {
				t.Fatalf("sliding_log %+v: %d events within %dns of %d", p, sum, w, ev[i].at)
			}
		}
	}
}

func FuzzInvariants(f *testing.F) {
	f.Add(uint16(3), uint16(5), uint16(2), int64(0), []byte{0, 0, 1, 0, 0, 1, 0, 0, 1, 100, 0, 1})
	f.Add(uint16(99), uint16(6), uint16(0), int64(1e18), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 255, 255, 250})
	f.Add(uint16(6), uint16(37), uint16(13), int64(17), []byte("the quick brown fox jumps over the lazy dog"))
	f.Fuzz(func(t *testing.T, rate, period, burst uint16, start int64, data []byte) {
		p, err := fuzzLimit(rate, period, burst)
		if err != nil {
			t.Skip()
		}
		start = Clamp(start) / 2
		if len(data) > 600 {
			data = data[:600]
		}
		for _, mk := range machines {
			if mk.window && p.CheckWindow() != nil {
				continue
			}
			ev, monotone := checkTimeline(t, mk.name, &p, mk.make(&p), data, start)
			switch {
			case !monotone:
				// The bounds speak of instants in order.
			case mk.name == "fixed_window":
				checkWindowBound(t, mk.name, &p, ev)
			case mk.name == "sliding_log":
				checkLogBound(t, &p, ev)
				checkBucketBound(t, mk.name, &p, ev)
			case mk.name == "sliding_window_approx":
				checkBucketBound(t, mk.name, &p, ev, 0)
			case mk.name == "sliding_window":
				checkBucketBound(t, mk.name, &p, ev)
				checkBucketBound(t, mk.name, &p, ev, -1)
			default:
				checkBucketBound(t, mk.name, &p, ev)
			}
		}
	})
}

// TestBucketsAgree: GCRA and the bucket decide identically on
// non-decreasing timelines.
func FuzzBucketsAgree(f *testing.F) {
	f.Add(uint16(3), uint16(5), uint16(2), []byte{0, 0, 1, 9, 9, 2, 200, 0, 3})
	f.Fuzz(func(t *testing.T, rate, period, burst uint16, data []byte) {
		p, err := fuzzLimit(rate, period, burst)
		if err != nil {
			t.Skip()
		}
		g, b := &gcraM{p: &p}, &bucketM{p: &p}
		now := int64(1e18)
		for ; len(data) >= 3; data = data[3:] {
			now += int64(data[0]) * int64(data[1]) * (p.Tn/p.Td/32 + 1)
			n := int64(data[2] % 12)
			if rg, rb := g.step(now, n), b.step(now, n); rg != rb {
				t.Fatalf("%+v at %d n=%d: gcra %+v bucket %+v", p, now, n, rg, rb)
			}
		}
	})
}
