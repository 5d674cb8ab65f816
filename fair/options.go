package fair

import (
	"fmt"

	"github.com/admit-go/admit"
)

// LanesOption configures a RateLanes or a SlotLanes. The zero set of
// options gives the defaults documented on each option.
type LanesOption interface {
	applyLanes(*lanesConfig)
}

// QueueOption configures a Queue. The zero set of options gives the
// defaults documented on each option.
type QueueOption interface {
	applyQueue(*queueConfig)
}

// Option configures any of this package's limiters: it is a LanesOption
// and a QueueOption.
type Option interface {
	LanesOption
	QueueOption
}

type lanesConfig struct {
	name    string
	clock   admit.Clock
	borrow  Borrowing
	reserve float64
	def     string
	hasDef  bool
	err     error
}

type queueConfig struct {
	name       string
	weight     func(flow string) float64
	maxWaiters int
	err        error
}

func failf(err *error, format string, args ...any) {
	if *err == nil {
		*err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

type nameOption string

func (o nameOption) applyLanes(c *lanesConfig) { c.name = string(o) }
func (o nameOption) applyQueue(c *queueConfig) { c.name = string(o) }

type lanesOption func(*lanesConfig)

func (f lanesOption) applyLanes(c *lanesConfig) { f(c) }

type queueOption func(*queueConfig)

func (f queueOption) applyQueue(c *queueConfig) { f(c) }

// WithName names the limiter. A lane's decisions carry the Rule
// "name/lane" (just "lane" without a name); a Queue's carry the name. The
// default is no name.
func WithName(name string) Option { return nameOption(name) }

// WithClock sets the clock RateLanes.Allow and Refund read. The default is
// admit.SystemClock; a nil c keeps it. SlotLanes do not read the time.
func WithClock(c admit.Clock) LanesOption {
	return lanesOption(func(o *lanesConfig) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithBorrowing sets which lanes may use the unused capacity of which. The
// default is BorrowUp: a lane may borrow from the lanes after it (of lower
// priority) only.
func WithBorrowing(b Borrowing) LanesOption {
	return lanesOption(func(o *lanesConfig) {
		if b > BorrowNone {
			failf(&o.err, "WithBorrowing(%d): not a Borrowing", b)
			return
		}
		o.borrow = b
	})
}

// WithReserve sets the fraction f of its own capacity (a rate lane's
// burst, a slot lane's slots) that a lane keeps for itself: other lanes
// may borrow from it only while it has more than ⌈f × capacity⌉ events
// (or slots) available, so a lane whose traffic arrives finds at least
// that much at once. The default is DefaultReserve (one half); f must lie
// in (0, 1]; with 1 a lane lends nothing.
func WithReserve(f float64) LanesOption {
	return lanesOption(func(o *lanesConfig) {
		if !(f > 0 && f <= 1) { // also refuses NaN
			failf(&o.err, "WithReserve(%v): want 0 < f <= 1", f)
			return
		}
		o.reserve = f
	})
}

// DefaultReserve is the fraction of its capacity a lane keeps for itself
// unless WithReserve says otherwise.
const DefaultReserve = 0.5

// WithDefaultLane sends keys that name no lane to the lane named name,
// which must be one of the lanes. The default is none: such keys fail
// with ErrUnknownLane.
func WithDefaultLane(name string) LanesOption {
	return lanesOption(func(o *lanesConfig) { o.def, o.hasDef = name, true })
}

// WithWeight sets the weight of each flow of a Queue: flows that wait are
// served in proportion to their weights (a flow of weight 3 gets three
// slots for each one a flow of weight 1 gets). weight is called without
// the Queue's lock held, once per call of Acquire with n > 0 (a flow that
// is already waiting keeps the weight it came with), and must return a
// positive finite number, or the request fails with ErrInvalidWeight. The default gives every flow weight 1; a nil weight
// keeps it.
func WithWeight(weight func(flow string) float64) QueueOption {
	return queueOption(func(o *queueConfig) {
		if weight != nil {
			o.weight = weight
		}
	})
}

// DefaultMaxWaiters is the number of callers a Queue lets wait unless
// WithMaxWaiters says otherwise.
const DefaultMaxWaiters = 1024

// WithMaxWaiters bounds the number of callers waiting in a Queue, all
// flows together (see Queue for who gives way when it is full). With n = 0
// no caller ever waits. The default is DefaultMaxWaiters; n must not be
// negative.
func WithMaxWaiters(n int) QueueOption {
	return queueOption(func(o *queueConfig) {
		if n < 0 {
			failf(&o.err, "WithMaxWaiters(%d): want n >= 0", n)
			return
		}
		o.maxWaiters = n
	})
}
