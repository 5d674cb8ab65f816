// Package lanekey splits the keys of the policy engine's layers whose key
// names a lane or a tenant within a budget (fair.RateLanes, fair.SlotLanes,
// fair.Share, and redisstore's share behind policy/backends): the lane or
// tenant, length-prefixed as "<length in decimal>:<lane>", then the key of
// the budget.
package lanekey

import "strconv"

// Split splits key into the lane (or tenant) and the key of the budget. A
// key without a valid length prefix is a lane of its own in the budget "".
func Split(key string) (lane, budget string) {
	i := 0
	for i < len(key) && key[i] != ':' {
		i++
	}
	if i == len(key) {
		return key, ""
	}
	n, err := strconv.Atoi(key[:i])
	if err != nil || n < 0 || n > len(key)-i-1 {
		return key, ""
	}
	return key[i+1 : i+1+n], key[i+1+n:]
}
