package algo

// SlidingLog is the state of a sliding log: the instants of the events
// admitted in the last window, W = B×T rounded up to whole nanoseconds. A
// request of n at now is admitted iff the events logged in (now-W, now] plus
// n are at most B, so every interval of length W holds at most B admitted
// events, exactly. Events admitted at the same instant share one entry, so
// the log holds at most B entries (16 bytes each); it grows as needed and
// never beyond. The zero value is empty.
type SlidingLog struct {
	buf  []LogEntry // ring buffer
	head int        // index of the oldest entry
	size int        // entries in use
	sum  int64      // events logged
}

// LogEntry is n events admitted at instant At.
type LogEntry struct{ At, N int64 }

// Sum returns the number of events in the log (expired ones included until
// the next step drops them).
func (l *SlidingLog) Sum() int64 { return l.sum }

// Len returns the number of entries.
func (l *SlidingLog) Len() int { return l.size }

func (l *SlidingLog) at(i int) *LogEntry { return &l.buf[(l.head+i)%len(l.buf)] }

// expire drops the entries that are W or more before now.
func (l *SlidingLog) expire(w, now int64) {
	for l.size > 0 {
		e := l.at(0)
		if now-e.At < w {
			return
		}
		l.sum -= e.N
		*e = LogEntry{}
		l.head = (l.head + 1) % len(l.buf)
		l.size--
	}
	l.head = 0
}

func (l *SlidingLog) push(now, n, limit int64) {
	if l.size > 0 {
		if last := l.at(l.size - 1); last.At == now {
			last.N += n
			l.sum += n
			return
		}
	}
	if l.size == len(l.buf) {
		c := 2 * len(l.buf)
		if c < 4 {
			c = 4
		}
		if int64(c) > limit {
			c = int(limit)
		}
		buf := make([]LogEntry, c)
		for i := 0; i < l.size; i++ {
			buf[i] = *l.at(i)
		}
		l.buf, l.head = buf, 0
	}
	*l.at(l.size) = LogEntry{At: now, N: n}
	l.size++
	l.sum += n
}

// SlidingLogStep admits n events at now if they fit. An instant before the
// latest logged event counts as that event's instant.
func (l *SlidingLog) SlidingLogStep(p *Params, now, n int64) Result {
	switch p.Mode {
	case Unlimited:
		return unlimited()
	case Closed:
		return closed(n)
	}
	if l.size > 0 {
		if newest := l.at(l.size - 1).At; newest > now {
			return l.SlidingLogStep(p, newest, n).shift(newest - now)
		}
	}
	w := p.Window()
	l.expire(w, now)
	r := Result{Allowed: true}
	switch {
	case n > p.Burst:
		r = Result{RetryAfter: Never}
	case n > p.Burst-l.sum:
		// Wait until the oldest events holding sum+n-B leave the window.
		excess, acc := l.sum+n-p.Burst, int64(0)
		for i := 0; i < l.size; i++ {
			e := l.at(i)
			if acc += e.N; acc >= excess {
				r = Result{RetryAfter: e.At + w - now}
				break
			}
		}
	case n > 0:
		l.push(now, n, p.Burst)
	}
	r.Remaining = max(p.Burst-l.sum, 0)
	if l.size > 0 {
		r.ResetAfter = l.at(l.size-1).At + w - now
	}
	return r
}

// SlidingLogUndo gives back n events admitted at now: it removes them from
// the newest entries, those SlidingLogStep logs at (now, or the latest
// logged instant if that is later), newest first, dropping the entries it
// empties. Entries W or more before that instant are left alone: they no
// longer count, so a refund in a later window gives back nothing; and
// nothing is given back beyond the events logged. n <= 0 and the degenerate
// modes change nothing.
func (l *SlidingLog) SlidingLogUndo(p *Params, now, n int64) {
	if p.Mode != Normal || n <= 0 || l.size == 0 {
		return
	}
	t := max(now, l.at(l.size-1).At)
	w := p.Window()
	for n > 0 && l.size > 0 {
		e := l.at(l.size - 1)
		if t-e.At >= w {
			return
		}
		take := min(n, e.N)
		e.N -= take
		l.sum -= take
		n -= take
		if e.N == 0 {
			*e = LogEntry{}
			l.size--
		}
	}
	if l.size == 0 {
		l.head = 0
	}
}

// Reset empties the log, keeping its buffer.
func (l *SlidingLog) Reset() {
	clear(l.buf)
	l.head, l.size, l.sum = 0, 0, 0
}

// Clone returns a deep copy of the log.
func (l *SlidingLog) Clone() *SlidingLog {
	c := *l
	c.buf = append([]LogEntry(nil), l.buf...)
	return &c
}
