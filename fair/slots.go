package fair

import (
	"context"
	"fmt"
	"sync"

	"github.com/admit-go/admit"
)

// SlotLanes shares one concurrency limit, the budget of max slots in
// flight, among lanes of different priority, each with reserved slots, on
// the model of RateLanes with slots in place of events.
//
// # Model
//
// Lane i reserves R_i = ⌊max × s_i/S⌋ slots (the slots left by the
// rounding going one each to the first lanes, so that they add up to max),
// and keeps K_i = ⌈reserve × R_i⌉ of them for itself (SlotLanesConfig.Reserve, half by
// default). A lane's free slots are its reserved slots less those held by
// its own requests and those lent to other lanes. A request of n slots in
// lane i is admitted:
//
//  1. from lane i's own free slots, if it has n: a lane may always use
//     all of its reserved slots that are free;
//  2. otherwise from the first lane j that lane i may borrow from
//     (SlotLanesConfig.Borrowing; the lowest priority asked first) that has n free
//     slots beyond its reserve (free - n >= K_j) and is not holding: the
//     slots are lent, and come back to lane j when the request releases
//     them;
//  3. otherwise it is refused. If lane i's own slots could ever admit n,
//     lane i holds: it lends nothing until it admits a request again or
//     all its slots are back.
//
// So at most max slots are in flight, all lanes together; a lane always
// has at least min(K_i, its free slots) at once; and its lent slots come
// back to it as the borrowers' requests end, none being lent again while
// it waits for them. Unlike a rate, slots come back only when released:
// with BorrowAny, a lane of low priority holding borrowed slots for long
// delays the lane it borrowed from by as long; keep its reserve (or use
// BorrowUp, the default) where that matters.
//
// Decisions are admit.Decisions of Kind admit.KindConcurrency: Limit is
// {Rate: R_i, Burst: R_i}, Remaining the slots the lane could take right
// now (its own free slots plus what it could borrow), RetryAfter 0 (slots
// come back when released, which cannot be foreseen), or
// admit.InfDuration, with an error wrapping admit.ErrExceedsBurst, for a
// request larger than the lane's reserved slots and than what any lender
// could lend. Rule is "lane", or "name/lane" (with a Name).
//
// A SlotLanes is safe for concurrent use: one mutex guards the lanes. It
// starts no goroutine and does not read the time. The zero SlotLanes is
// not usable; create one with NewSlotLanes.
type SlotLanes struct {
	mu     sync.Mutex
	lanes  []slotLane
	byName map[string]int
	def    int
	g      grants[slotGrant]
}

type slotLane struct {
	name     string
	rule     string
	reserved int64
	keep     int64
	used     int64 // own slots held by the lane's requests
	lent     int64 // own slots held by other lanes' requests
	hold     bool
	lenders  []int
	maxN     int64
}

type slotGrant struct {
	lane, from int32
	n          int64
}

// NewSlotLanes returns cfg.Lanes sharing cfg.Max slots in flight (see
// SlotLanes for the model). It fails with an error wrapping
// admit.ErrInvalidLimit if Max <= 0, and admit.ErrInvalidConfig for lanes
// it cannot use (see Lane; the message says "fair: invalid lanes"),
// including a Max too small to give each lane one slot, and for another
// field outside its domain.
func NewSlotLanes(cfg SlotLanesConfig) (*SlotLanes, error) {
	max, lanes := cfg.Max, cfg.Lanes
	if max <= 0 {
		return nil, fmt.Errorf("%w: concurrency limit %d, must be positive", admit.ErrInvalidLimit, max)
	}
	sum, byName, err := checkLanes(lanes)
	if err != nil {
		return nil, err
	}
	c, err := checkConfig(cfg.Options, cfg.Borrowing, cfg.Reserve, cfg.DefaultLane, byName)
	if err != nil {
		return nil, err
	}
	parts, err := split(max, lanes, sum, "limit")
	if err != nil {
		return nil, err
	}
	s := &SlotLanes{lanes: make([]slotLane, len(lanes)), byName: byName, def: c.def}
	for i, l := range lanes {
		s.lanes[i] = slotLane{name: l.Name, rule: rule(c.name, l.Name), reserved: parts[i], keep: reserveOf(parts[i], c.reserve)}
	}
	for i := range s.lanes {
		l := &s.lanes[i]
		l.lenders = c.borrow.lenders(i, len(lanes))
		l.maxN = l.reserved
		for _, j := range l.lenders {
			l.maxN = maxOf(l.maxN, s.lanes[j].reserved-s.lanes[j].keep)
		}
	}
	return s, nil
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// free returns lane j's free slots. It requires s.mu.
func (l *slotLane) free() int64 { return l.reserved - l.used - l.lent }

// lending reports whether lane j lends, clearing a hold that has ended
// (all its slots back). It requires s.mu.
func (l *slotLane) lending() bool {
	if l.hold && l.used == 0 && l.lent == 0 {
		l.hold = false
	}
	return !l.hold
}

// TryAcquire takes n slots of the lane named key if it has them free, of
// its own or borrowed, and never waits. If the request is admitted, the
// Permit holds the slots until its Release; otherwise it is the zero
// Permit. n = 0 is always admitted and holds nothing.
//
// The error is non-nil only for bad input, with a Decision that denies
// with RetryAfter admit.InfDuration: a lane that does not exist
// (ErrUnknownLane, unless SlotLanesConfig.DefaultLane), n < 0 (admit.ErrInvalidCost),
// or n more than the lane could ever get (admit.ErrExceedsBurst). The
// context is not consulted.
func (s *SlotLanes) TryAcquire(ctx context.Context, key string, n int64) (Permit, admit.Decision, error) {
	i, err := lane(s.byName, s.def, key)
	if err != nil {
		return Permit{}, admit.Decision{RetryAfter: admit.InfDuration, Kind: admit.KindConcurrency}, err
	}
	l := &s.lanes[i]
	d := admit.Decision{Limit: admit.Limit{Rate: l.reserved, Burst: l.reserved}, Rule: l.rule, Kind: admit.KindConcurrency}
	switch {
	case n < 0:
		d.RetryAfter = admit.InfDuration
		return Permit{}, d, fmt.Errorf("%w: %d slots requested", admit.ErrInvalidCost, n)
	case n > l.maxN:
		s.mu.Lock()
		d.Remaining = s.remaining(i)
		s.mu.Unlock()
		d.RetryAfter = admit.InfDuration
		return Permit{}, d, fmt.Errorf("%w: %d slots requested, lane %q can get at most %d", admit.ErrExceedsBurst, n, l.name, l.maxN)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 0 {
		d.Allowed, d.Remaining = true, s.remaining(i)
		return Permit{}, d, nil
	}
	from := -1
	if l.free() >= n {
		l.used += n
		from = i
	} else {
		for _, j := range l.lenders {
			m := &s.lanes[j]
			if m.lending() && m.free()-n >= m.keep {
				m.lent += n
				from = j
				break
			}
		}
	}
	if from < 0 {
		if n <= l.reserved {
			l.hold = true
		}
		d.Remaining = s.remaining(i)
		return Permit{}, d, nil
	}
	l.hold = false
	idx, id := s.g.add(slotGrant{lane: int32(i), from: int32(from), n: n})
	d.Allowed, d.Remaining = true, s.remaining(i)
	return Permit{h: s, idx: idx, id: id}, d, nil
}

// remaining returns the slots lane i could take now. It requires s.mu.
func (s *SlotLanes) remaining(i int) int64 {
	l := &s.lanes[i]
	r := maxOf(l.free(), 0)
	for _, j := range l.lenders {
		if m := &s.lanes[j]; m.lending() {
			r += maxOf(m.free()-m.keep, 0)
		}
	}
	return r
}

func (s *SlotLanes) release(idx int32, id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.g.take(idx, id)
	if !ok {
		return false
	}
	if g.from == g.lane {
		s.lanes[g.from].used -= g.n
	} else {
		s.lanes[g.from].lent -= g.n
	}
	return true
}

// LaneStats describes one lane of a SlotLanes.
type LaneStats struct {
	Name     string
	Reserved int64 // slots reserved for the lane
	Used     int64 // of its own slots, those its requests hold
	Lent     int64 // of its own slots, those other lanes' requests hold
	Borrowed int64 // slots its requests hold from other lanes
	Holding  bool  // lending nothing until it admits again or its slots are back
}

// Stats returns the state of every lane, in priority order.
func (s *SlotLanes) Stats() []LaneStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := make([]LaneStats, len(s.lanes))
	for i := range s.lanes {
		l := &s.lanes[i]
		l.lending()
		st[i] = LaneStats{Name: l.name, Reserved: l.reserved, Used: l.used, Lent: l.lent, Holding: l.hold}
	}
	for _, r := range s.g.recs {
		if r.id != 0 && r.v.from != r.v.lane {
			st[r.v.lane].Borrowed += r.v.n
		}
	}
	return st
}

// Layer returns s as admit.Slots, for use as a layer of a compose.Chain:
// their TryAcquire is SlotLanes.TryAcquire with the key naming the lane,
// and the Permit's Release as the Releaser. As concurrency.Limiter.Slots
// does, it reports a request that could never be admitted
// (admit.ErrExceedsBurst) as a refusal, without an error. The Slots have
// no method beyond admit.Slots, and are safe for concurrent use.
func (s *SlotLanes) Layer() admit.Slots { return slotLanesLayer{s} }

// slotLanesLayer is a SlotLanes seen as admit.Slots, for SlotLanes.Layer.
type slotLanesLayer struct{ s *SlotLanes }

var _ admit.Slots = slotLanesLayer{}

// TryAcquire is SlotLanes.TryAcquire, with the Permit as a
// admit.Releaser.
func (l slotLanesLayer) TryAcquire(ctx context.Context, r admit.Request) (admit.Releaser, admit.Decision, error) {
	p, d, err := l.s.TryAcquire(ctx, r.Key, r.N)
	if err != nil && errorsIsExceeds(err) {
		err = nil
	}
	return asReleaser(p), d, err
}
