package calendar

import "sync/atomic"

// Window is a calendar period [Start, End), in ns since the Unix epoch.
type Window struct {
	Start, End int64
}

// Latest is the latest calendar period a quota has decided in. A quota
// decides an instant before the end of that period in it, so time going
// back never reopens a period that has ended, and an instant after it in
// the period holding the instant, which becomes the latest. quota.Quota
// uses one, and so does the Redis quota of package redisstore for the
// instants its callers give. The zero value holds no period; a Latest is safe for
// concurrent use.
type Latest struct {
	cur atomic.Pointer[Window]
}

// Window returns the period to decide instant now in: the latest period
// if now is in it or earlier, else the period holding now, which bounds
// returns and which becomes the latest (unless another call moved further
// meanwhile, whose period is returned).
func (l *Latest) Window(now int64, bounds func(now int64) Window) Window {
	if p := l.cur.Load(); p != nil && now < p.End {
		return *p
	}
	w := new(Window)
	*w = bounds(now)
	for {
		p := l.cur.Load()
		if p != nil && p.Start >= w.Start {
			return *p // another call moved on meanwhile
		}
		if l.cur.CompareAndSwap(p, w) {
			return *w
		}
	}
}

// Get returns the latest period, and false if there is none yet.
func (l *Latest) Get() (Window, bool) {
	if p := l.cur.Load(); p != nil {
		return *p, true
	}
	return Window{}, false
}

// Newer returns w, or the latest period if it has moved past w since w
// was read.
func (l *Latest) Newer(w Window) Window {
	if p := l.cur.Load(); p != nil && p.Start > w.Start {
		return *p
	}
	return w
}
