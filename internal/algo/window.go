package algo

// windowOf returns the index k of the window holding now and the time
// elapsed in it, in units of 1/Td ns: now×Td = k×CapN + elapsed. Windows are
// aligned on the Unix epoch. It requires CheckWindow to have passed and
// now >= 0.
func windowOf(p *Params, now int64) (k, elapsed int64) {
	q, r, ok := mul64(uint64(now), uint64(p.Td)).divmod(uint64(p.CapN))
	if !ok { // impossible when CapN >= Td; stay safe
		return now, 0
	}
	return int64(q), int64(r)
}

// untilWindow returns the ns from now until window k starts, rounded up, or
// 0 if it has started.
func untilWindow(p *Params, now, k int64) int64 {
	start := mul64(uint64(k), uint64(p.CapN))
	at := mul64(uint64(now), uint64(p.Td))
	if !at.less(start) {
		return 0
	}
	return start.sub(at).ceil63(uint64(p.Td))
}
