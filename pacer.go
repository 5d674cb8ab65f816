package admit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/internal/timeline"
)

// Pacer is a leaky bucket used as a queue: it releases events one emission
// interval T = Period/Rate apart, and callers that arrive while a slot is
// taken wait for theirs in FIFO order instead of being refused. It is
// uber-go/ratelimit's Take with a context, a bound on the queue and a bound
// on the wait, and exact spacing when T is not a whole number of
// nanoseconds (3 per second releases at 0, 333333334ns, 666666667ns, 1s...).
//
// A caller arriving at instant now with k callers queued ahead of it is
// released at TAT + k×T, where TAT is the slot of the next event (or now, if
// that slot has passed). The pacer never releases two events less than T
// apart, so over any interval of length t it releases at most 1 + ⌊t/T⌋
// events; a pacer that has been idle releases the next caller at once,
// without letting a burst through. Limit.Burst is not used: a Pacer's
// burst is always 1.
//
// A wait that would pass the context's deadline, the maximum wait
// (PacerConfig.MaxWait) or a full queue (PacerConfig.MaxQueue) is refused
// at once, with an error wrapping ErrDeadline, ErrWaitTooLong or
// ErrQueueFull. A caller whose context is cancelled while it waits leaves
// the queue, and the callers behind it move up one slot.
//
// Unlimited releases every caller at once; a zero Limit refuses every one
// with an error wrapping ErrExceedsBurst.
//
// The zero Pacer is not usable; create one with NewPacer. A Pacer starts no
// goroutine and needs no Close. It is safe for concurrent use.
type Pacer struct {
	mu    sync.Mutex
	p     algo.Params
	limit Limit
	next  algo.GCRA // the slot of the next event (TAT, burst 1)
	head  *pacerWaiter
	tail  *pacerWaiter
	n     int // callers queued

	// The callers that finished waiting (granted or gone) and the time
	// they waited in all, ns; kept on the waiting path only.
	waits  uint64
	waited int64

	clock    Clock
	maxQueue int   // < 0: no bound
	maxWait  int64 // ns; InfDuration: no bound
}

// pacerWaiter is a caller in the queue. Only the head waits on a timer;
// the others wait for the head to hand them the turn.
type pacerWaiter struct {
	prev, next *pacerWaiter
	turn       chan struct{} // closed when the waiter becomes the head
	isHead     bool
	gone       bool  // left the queue
	at         int64 // when it came, on the time line of the pacer's Clock
}

// PacerConfig configures a Pacer. The zero PacerConfig gives the
// defaults: the system clock, no bound on the queue, no bound on the wait.
type PacerConfig struct {
	// Options: the Clock is the clock of the pacer's waits and of the
	// instants Take returns (nil: SystemClock). A Pacer makes no decisions
	// to name and calls no Observer: a Name or an Observer is an error
	// wrapping ErrInvalidConfig.
	Options

	// MaxQueue bounds the number of callers waiting in the queue; a caller
	// that would be one more is refused at once with an error wrapping
	// ErrQueueFull. 0 means no bound; a negative MaxQueue means that no
	// caller ever waits: Take and Wait succeed only when the caller's slot
	// is now.
	MaxQueue int

	// MaxWait bounds how long a caller may wait for its slot; a caller
	// whose slot is further away is refused at once with an error wrapping
	// ErrWaitTooLong. 0 means no bound (the context's deadline still
	// applies); a negative MaxWait means that no caller ever waits: Take
	// and Wait succeed only when the caller's slot is now.
	MaxWait time.Duration
}

// NewPacer returns a Pacer releasing events at l's rate (Rate per Period; the
// burst is ignored), configured by c (at most one; see PacerConfig). The
// error wraps ErrInvalidLimit for an invalid l and ErrInvalidConfig for an
// invalid PacerConfig.
func NewPacer(l Limit, c ...PacerConfig) (*Pacer, error) {
	p, err := algo.Compile(l.Rate, int64(l.Period), 1)
	if l.Rate == 0 {
		p, err = algo.Compile(0, 0, 0)
	}
	if err != nil {
		return nil, wrapLimit(l, err)
	}
	if err := checkOptions("NewPacer", len(c)); err != nil {
		return nil, err
	}
	var cfg PacerConfig
	if len(c) == 1 {
		cfg = c[0]
	}
	if cfg.Name != "" || cfg.Observer != nil {
		return nil, fmt.Errorf("%w: NewPacer: a Pacer makes no decisions: it takes no Options.Name or Options.Observer, only a Clock", ErrInvalidConfig)
	}
	pc := &Pacer{p: p, clock: cfg.Clock, maxQueue: -1, maxWait: int64(InfDuration)}
	if pc.clock == nil {
		pc.clock = SystemClock
	}
	switch {
	case cfg.MaxQueue > 0:
		pc.maxQueue = cfg.MaxQueue
	case cfg.MaxQueue < 0:
		pc.maxQueue = 0
	}
	switch {
	case cfg.MaxWait > 0:
		pc.maxWait = int64(cfg.MaxWait)
	case cfg.MaxWait < 0:
		pc.maxWait = 0
	}
	l.Burst = 1
	if l.Rate == Inf || l.Rate == 0 {
		l.Burst = 0
	}
	pc.limit = l
	return pc, nil
}

// Limit returns the pacer's limit (Burst 1).
func (p *Pacer) Limit() Limit { return p.limit }

// Len returns the number of callers waiting for their slot.
func (p *Pacer) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// PacerStats describes a Pacer at one instant, for metrics and tests.
type PacerStats struct {
	// Waiting is the number of callers waiting for their slot (Len).
	Waiting int
	// Waits is the number of callers that waited since NewPacer and are
	// done waiting: released at their slot, or gone when their context
	// ended. A caller released at once, or refused at once, did not wait.
	Waits uint64
	// Waited is the time those callers waited in all, measured by the
	// pacer's Clock from their arrival to their release or departure:
	// Waited / Waits is their mean wait.
	Waited time.Duration
}

// Stats returns the pacer's state and counts.
func (p *Pacer) Stats() PacerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PacerStats{Waiting: p.n, Waits: p.waits, Waited: time.Duration(p.waited)}
}

// Take waits for the caller's slot and returns the instant it was released
// at, read from the pacer's Clock. It is Wait without a context, for code
// written against uber-go/ratelimit; the queue and wait bounds still apply.
func (p *Pacer) Take() (time.Time, error) {
	return p.take(context.Background())
}

// Wait waits for the caller's slot, or until ctx is done. It returns nil
// once the caller may proceed; ctx.Err() if ctx ended while it waited (its
// slot goes to the callers behind it); and at once, without waiting, an
// error wrapping ErrDeadline, ErrWaitTooLong, ErrQueueFull or
// ErrExceedsBurst if the slot cannot be had within the bounds.
func (p *Pacer) Wait(ctx context.Context) error {
	_, err := p.take(ctx)
	return err
}

// now reads the clock: the instant as a time.Time (left zero for the
// system clock, whose cheaper reading is only on the time line) and on the
// time line.
func (p *Pacer) now() (time.Time, int64) {
	if isSystem(p.clock) {
		return time.Time{}, timeline.Now()
	}
	now := p.clock.Now()
	return now, nanos(now)
}

// instant returns the instant now() read.
func (p *Pacer) instant(now time.Time, t int64) time.Time {
	if isSystem(p.clock) {
		return fromNanos(t)
	}
	return now
}

func (p *Pacer) take(ctx context.Context) (time.Time, error) {
	switch p.p.Mode {
	case algo.Unlimited:
		return p.clock.Now(), ctx.Err()
	case algo.Closed:
		return time.Time{}, fmt.Errorf("%w: a pacer with a zero limit never releases", ErrExceedsBurst)
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	now, t := p.now()
	p.mu.Lock()
	if p.head == nil && algo.PacerReady(p.next, t) {
		p.next = algo.PacerNext(p.next, &p.p, t)
		p.mu.Unlock()
		return p.instant(now, t), nil
	}
	w, err := p.enqueue(ctx, t)
	p.mu.Unlock()
	if err != nil {
		return time.Time{}, err
	}
	return p.await(ctx, w)
}

// enqueue checks the bounds for a caller arriving at t and queues it. It
// requires p.mu.
func (p *Pacer) enqueue(ctx context.Context, t int64) (*pacerWaiter, error) {
	if p.maxQueue >= 0 && p.n >= p.maxQueue {
		return nil, fmt.Errorf("admit: Pacer: %d callers waiting, the maximum: %w", p.n, ErrQueueFull)
	}
	wait := algo.PacerWait(p.next, &p.p, t, int64(p.n))
	if wait > p.maxWait {
		return nil, fmt.Errorf("admit: Pacer: the slot is %v away, the maximum is %v: %w", time.Duration(wait), time.Duration(p.maxWait), ErrWaitTooLong)
	}
	if dl, ok := ctx.Deadline(); ok && wait > nanos(dl)-t {
		return nil, fmt.Errorf("admit: Pacer: the slot is %v away: %w", time.Duration(wait), ErrDeadline)
	}
	w := &pacerWaiter{turn: make(chan struct{}), at: t}
	if p.tail == nil {
		p.head, p.tail = w, w
		w.isHead = true
		close(w.turn)
	} else {
		w.prev = p.tail
		p.tail.next = w
		p.tail = w
	}
	p.n++
	return w, nil
}

// await waits for w's turn, then for its slot, and releases it.
func (p *Pacer) await(ctx context.Context, w *pacerWaiter) (time.Time, error) {
	select {
	case <-w.turn:
	case <-ctx.Done():
		p.leave(w)
		return time.Time{}, ctx.Err()
	}
	for {
		p.mu.Lock()
		now := p.clock.Now()
		t := nanos(now)
		if algo.PacerReady(p.next, t) {
			p.next = algo.PacerNext(p.next, &p.p, t)
			p.remove(w, t)
			p.mu.Unlock()
			return now, nil
		}
		d := algo.PacerWait(p.next, &p.p, t, 0)
		p.mu.Unlock()
		timer := p.clock.NewTimer(time.Duration(d))
		select {
		case <-timer.C():
			// The slot has come; loop to take it (a clock that ran slow
			// sends us round again).
		case <-ctx.Done():
			timer.Stop()
			p.leave(w)
			return time.Time{}, ctx.Err()
		}
	}
}

// leave takes a cancelled waiter out of the queue.
func (p *Pacer) leave(w *pacerWaiter) {
	_, t := p.now()
	p.mu.Lock()
	p.remove(w, t)
	p.mu.Unlock()
}

// remove unlinks w, which leaves at instant t, and, if it was the head,
// hands the turn to the next waiter. It requires p.mu.
func (p *Pacer) remove(w *pacerWaiter, t int64) {
	if w.gone {
		return
	}
	w.gone = true
	p.waits++
	p.waited += max(t-w.at, 0)
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		p.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		p.tail = w.prev
	}
	p.n--
	if h := p.head; h != nil && !h.isHead {
		h.isHead = true
		close(h.turn)
	}
	w.prev, w.next = nil, nil
}
