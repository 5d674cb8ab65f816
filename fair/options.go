package fair

import (
	"fmt"
	"time"

	"github.com/admit-go/admit"
)

// RateLanesConfig configures a RateLanes (NewRateLanes). Set Budget and
// Lanes; every other field's zero value is its default. A field outside
// its domain is an error wrapping admit.ErrInvalidConfig that names it.
type RateLanesConfig struct {
	// Options are the clock and name (see admit.Options). The clock is
	// read by Allow and Refund for a Request whose At is zero. A lane's
	// decisions carry the Rule "name/lane" (just "lane" without a name).
	// The Observer is not called: lanes report nothing.
	admit.Options

	// Budget is the rate limit the lanes share. Required: an invalid,
	// unlimited or zero Budget is an error wrapping admit.ErrInvalidLimit.
	Budget admit.Limit

	// Lanes are the lanes, in priority order, the first the highest (see
	// Lane): 1 to 64 of them. Required: lanes NewRateLanes cannot use are
	// an error wrapping admit.ErrInvalidConfig ("fair: invalid lanes").
	Lanes []Lane

	// Borrowing says which lanes may use the unused capacity of which.
	// The zero value is BorrowUp: a lane may borrow from the lanes after
	// it (of lower priority) only. A value that is not a Borrowing is an
	// error.
	Borrowing Borrowing

	// Reserve is the fraction f of its own burst that a lane keeps for
	// itself: other lanes may borrow from it only while it has more than
	// ⌈f × burst⌉ events available, so a lane whose traffic arrives finds
	// at least that much at once. 0 means one half; any other value must
	// lie in (0, 1]; with 1 a lane lends nothing.
	Reserve float64

	// DefaultLane, if not empty, is the lane of the keys that name none;
	// it must be one of the Lanes. Empty means none: such keys fail with
	// ErrUnknownLane.
	DefaultLane string
}

// SlotLanesConfig configures a SlotLanes (NewSlotLanes). Set Max and
// Lanes; every other field's zero value is its default. A field outside
// its domain is an error wrapping admit.ErrInvalidConfig that names it.
type SlotLanesConfig struct {
	// Options are the name (see admit.Options): a lane's decisions carry
	// the Rule "name/lane" (just "lane" without a name). SlotLanes do not
	// read the time (Clock is not used) and report nothing (Observer is
	// not called).
	admit.Options

	// Max is the number of slots the lanes share. Required: a Max below 1
	// is an error wrapping admit.ErrInvalidLimit.
	Max int64

	// Lanes are the lanes, in priority order, the first the highest (see
	// Lane): 1 to 64 of them. Required: lanes NewSlotLanes cannot use are
	// an error wrapping admit.ErrInvalidConfig ("fair: invalid lanes").
	Lanes []Lane

	// Borrowing says which lanes may use the unused slots of which. The
	// zero value is BorrowUp: a lane may borrow from the lanes after it
	// (of lower priority) only. A value that is not a Borrowing is an
	// error.
	Borrowing Borrowing

	// Reserve is the fraction f of its own slots that a lane keeps for
	// itself: other lanes may borrow from it only while it has more than
	// ⌈f × slots⌉ free, so a lane whose traffic arrives finds at least
	// that many at once. 0 means one half; any other value must lie in
	// (0, 1]; with 1 a lane lends nothing.
	Reserve float64

	// DefaultLane, if not empty, is the lane of the keys that name none;
	// it must be one of the Lanes. Empty means none: such keys fail with
	// ErrUnknownLane.
	DefaultLane string
}

// QueueConfig configures a Queue (NewQueue). Set Max; every other field's
// zero value is its default. A field outside its domain is an error
// wrapping admit.ErrInvalidConfig that names it.
type QueueConfig struct {
	// Options are the name and clock (see admit.Options): the Rule of
	// the Queue's decisions, and the clock that measures how long callers
	// waited (QueueStats.Waited; read only by callers that wait). A Queue
	// reports nothing (Observer is not called).
	admit.Options

	// Max is the number of slots. Required: a Max below 1 is an error
	// wrapping admit.ErrInvalidLimit.
	Max int64

	// Weight, if not nil, gives the weight of each flow: flows that wait
	// are served in proportion to their weights (a flow of weight 3 gets
	// three slots for each one a flow of weight 1 gets). It is called
	// without the Queue's lock held, once per call of Acquire with n > 0
	// (a flow that is already waiting keeps the weight it came with), and
	// must return a positive finite number, or the request fails with an
	// error wrapping admit.ErrInvalidConfig ("fair: invalid weight"). Nil
	// gives every flow weight 1.
	Weight func(flow string) float64

	// MaxWaiters bounds the number of callers waiting in the Queue, all
	// flows together (see Queue for who gives way when it is full). 0
	// means 1024; a negative value means that no caller ever waits.
	MaxWaiters int
}

// ShareConfig configures a Share (NewShare). Set Budget; every other
// field's zero value is its default. A field outside its domain is an
// error wrapping admit.ErrInvalidConfig that names it.
type ShareConfig struct {
	// Options are the clock and name (see admit.Options). The clock is
	// read by Allow and Refund for a Request whose At is zero; the name is
	// the Rule of the decisions. The Observer is not called.
	admit.Options

	// Budget is the rate limit the tenants share. Required: an invalid,
	// unlimited or zero Budget is an error wrapping admit.ErrInvalidLimit.
	Budget admit.Limit

	// Weight, if not nil, gives the weight of each tenant: tenants
	// contending for the budget get it in proportion to their weights. It
	// is called without the Share's lock held, once per call of Allow and
	// Refund, and must return a weight from 1 to 2^20 (1048576), or the
	// request fails with an error wrapping admit.ErrInvalidConfig ("fair:
	// invalid weight"). Nil gives every tenant weight 1.
	Weight func(tenant string) int64

	// Idle is how long a tenant that stops asking stays active, at most:
	// it leaves the active set (and its weight the sum the shares are
	// divided by) between Idle/2 and Idle after its last request. 0 means
	// a second; otherwise from 2ns to an hour.
	Idle time.Duration

	// MaxTenants bounds the tenants a Share holds: those active, or whose
	// share is not full (the others are forgotten, which changes no
	// decision). A new tenant beyond it is refused with an error wrapping
	// admit.ErrTooManyKeys. 0 means 100,000; a negative value is an error.
	// (A Share kept in Redis holds its tenants there and has no bound.)
	MaxTenants int
}

// Defaults of the Configs' fields.
const (
	defaultReserve    = 0.5
	defaultMaxWaiters = 1024
)

// lanesConfig is the part of a RateLanesConfig or a SlotLanesConfig
// common to both, checked, with its defaults filled in.
type lanesConfig struct {
	name    string
	borrow  Borrowing
	reserve float64
	def     int // -1: none
}

// checkConfig checks the fields of a lanes Config but the budget and the
// lanes (see checkLanes), given the index of each lane's name.
func checkConfig(o admit.Options, borrow Borrowing, reserve float64, def string, byName map[string]int) (lanesConfig, error) {
	c := lanesConfig{name: o.Name, borrow: borrow, reserve: reserve, def: -1}
	switch {
	case borrow > BorrowNone:
		return c, fmt.Errorf("%w: fair: Borrowing %d: not a Borrowing", admit.ErrInvalidConfig, borrow)
	case reserve != 0 && !(reserve > 0 && reserve <= 1): // also refuses NaN
		return c, fmt.Errorf("%w: fair: Reserve %v: want 0 < Reserve <= 1 (or 0 for 0.5)", admit.ErrInvalidConfig, reserve)
	}
	if c.reserve == 0 {
		c.reserve = defaultReserve
	}
	if def != "" {
		i, ok := byName[def]
		if !ok {
			return c, fmt.Errorf("%w: fair: DefaultLane %q names no lane", admit.ErrInvalidConfig, def)
		}
		c.def = i
	}
	return c, nil
}
