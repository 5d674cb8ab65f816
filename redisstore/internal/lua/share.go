package lua

import (
	"strconv"

	"github.com/admit-go/admit/internal/algo"
)

// The Share script (Share) decides a request of one tenant of a budget
// shared by weights, as algo.ShareStep does, or gives events back as
// algo.ShareUndo does, in one call:
//
//	KEYS[1]     the budget's state: "w<At>:<Frac>:<Win>:<Cur>:<Prev>:<New>"
//	KEYS[2]     the tenant's state: "t<At>:<Frac>:<Seen>" (decimal int64s;
//	            a missing key is the zero state). Both in one slot.
//	ARGV[1]     "a" (decide n events) or "r" (give n events back; the
//	            reply is then a peek's, n = 0, on the states left).
//	ARGV[2]     the instant (decimal ns), or RedisTime ("") for Redis TIME;
//	            clamped to [0, algo.MaxTime].
//	ARGV[3]     the minimum TTL of written keys in ms.
//	ARGV[4..8]  the budget compiled by algo.Compile: Mode (0), Burst, Tn,
//	            Td, CapN.
//	ARGV[9]     LendN, ARGV[10] Window (ns), of algo.ShareParams.
//	ARGV[11]    n >= 0, ARGV[12] the tenant's weight w (1 to 2^20).
//
// The reply is Decide's for one key, [now, allowed, remaining, retryAfter,
// resetAfter] (ParseReply(reply, 1) reads it). A state is written only
// when it changed, with PX = max(⌈ttl/1ms⌉+1, minimum TTL), ttl being the
// time until the state decides as a missing key would: its GCRA full, and
// the window it last counted in neither the current one nor the one
// before. Errors are replies starting with "admit: ", for malformed
// arguments or a key holding a value the script did not write; nothing is
// written then.

// The values of the Share script's ARGV[1].
const (
	ShareAllow  = "a"
	ShareRefund = "r"
)

// ShareArgs returns the arguments of the Share script but the first
// three and the last two (the mode, instant, minimum TTL, n and weight):
// the budget's compiled limit, LendN and Window, formatted once per share.
func ShareArgs(sp *algo.ShareParams) []any {
	p := &sp.P
	return []any{
		strconv.Itoa(int(p.Mode)),
		strconv.FormatInt(p.Burst, 10),
		strconv.FormatInt(p.Tn, 10),
		strconv.FormatInt(p.Td, 10),
		strconv.FormatInt(p.CapN, 10),
		strconv.FormatInt(sp.LendN, 10),
		strconv.FormatInt(sp.Window, 10),
	}
}
