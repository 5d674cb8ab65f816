package fair

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/admit-go/admit/internal/lanelimits"
)

// Lane is one lane of a shared budget: a name, the key that selects it,
// and a share. Lanes are given in priority order, the first the highest.
type Lane struct {
	// Name selects the lane: it is the key of Allow and TryAcquire. It
	// must not be empty, and no two lanes may share it.
	Name string
	// Share is the lane's weight: its reserved part of the budget is
	// Share divided by the sum of the lanes' shares (with shares 50, 30
	// and 20, half, three tenths and a fifth). It must lie in
	// [1, 2^20] (1048576).
	Share int64
}

// Borrowing says which lanes may use capacity another lane leaves unused.
type Borrowing uint8

const (
	// BorrowUp lets a lane borrow from the lanes after it only: capacity
	// flows from lower priority to higher, never the other way, so a
	// lane's traffic never uses what a lane of higher priority reserved.
	// The last lane gets its own share and no more.
	BorrowUp Borrowing = iota
	// BorrowAny lets any lane borrow from any other. Capacity unused by a
	// lane of high priority may then serve a lane of lower priority, until
	// the high-priority traffic comes back (see RateLanes for how it gets
	// its share back).
	BorrowAny
	// BorrowNone forbids borrowing: each lane is a limit of its own share,
	// the budget split into fixed parts.
	BorrowNone
)

var borrowNames = [...]string{BorrowUp: "up", BorrowAny: "any", BorrowNone: "none"}

// String returns "up", "any" or "none".
func (b Borrowing) String() string {
	if int(b) < len(borrowNames) {
		return borrowNames[b]
	}
	return "Borrowing(" + strconv.Itoa(int(b)) + ")"
}

// may reports whether lane i may borrow from lane j under b.
func (b Borrowing) may(i, j int) bool {
	switch b {
	case BorrowUp:
		return j > i
	case BorrowAny:
		return j != i
	}
	return false
}

// lenders returns the lanes lane i may borrow from, in the order it asks
// them: the lowest priority first, so that the reserves of the lanes that
// matter most are spent last.
func (b Borrowing) lenders(i, m int) []int {
	var l []int
	for j := m - 1; j >= 0; j-- {
		if b.may(i, j) {
			l = append(l, j)
		}
	}
	return l
}

// checkLanes validates lanes and returns the sum of their shares and the
// index of each name.
func checkLanes(lanes []Lane) (int64, map[string]int, error) {
	if len(lanes) == 0 || len(lanes) > lanelimits.MaxLanes {
		return 0, nil, badLanes("%d lanes, want 1 to %d", len(lanes), lanelimits.MaxLanes)
	}
	byName := make(map[string]int, len(lanes))
	var sum int64
	for i, l := range lanes {
		if l.Name == "" {
			return 0, nil, badLanes("lane %d has no name", i)
		}
		if _, dup := byName[l.Name]; dup {
			return 0, nil, badLanes("two lanes named %q", l.Name)
		}
		if l.Share < 1 || l.Share > lanelimits.MaxShare {
			return 0, nil, badLanes("lane %q has share %d, want 1 to %d", l.Name, l.Share, lanelimits.MaxShare)
		}
		byName[l.Name] = i
		sum += l.Share
	}
	return sum, byName, nil
}

// split divides total among lanes in proportion to their shares: each
// lane gets ⌊total × share / sum⌋, and what the rounding leaves (fewer
// than len(lanes)) goes one each to the first lanes, so that the parts
// add up to total exactly. Every part must be at least 1.
func split(total int64, lanes []Lane, sum int64, what string) ([]int64, error) {
	parts := make([]int64, len(lanes))
	left := total
	for i, l := range lanes {
		hi, lo := bits.Mul64(uint64(total), uint64(l.Share))
		q, _ := bits.Div64(hi, lo, uint64(sum)) // share <= sum: no overflow
		parts[i] = int64(q)
		left -= parts[i]
	}
	for i := 0; left > 0; i++ {
		parts[i]++
		left--
	}
	for i, p := range parts {
		if p < 1 {
			return nil, badLanes("%s %d is too small to give lane %q (share %d of %d) one of its own", what, total, lanes[i].Name, lanes[i].Share, sum)
		}
	}
	return parts, nil
}

// reserveOf returns how much of capacity c a lane keeps for itself at
// reserve fraction f: ⌈f × c⌉, at least 1 and at most c.
func reserveOf(c int64, f float64) int64 {
	r := int64(math.Ceil(f * float64(c)))
	return min(max(r, 1), c)
}

// rule returns the Rule of a lane's decisions.
func rule(name, lane string) string {
	if name == "" {
		return lane
	}
	return name + "/" + lane
}
