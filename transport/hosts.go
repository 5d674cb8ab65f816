package transport

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admit-go/admit"
)

// host is what a Transport knows of one host: until when it asked to be
// left alone, and its limit (Config.HostLimit).
type host struct {
	until atomic.Int64 // end of the pause, on the Transport's time line; 0 for none
	lim   *admit.GCRA  // nil without a host limit
}

// hostTable holds the hosts a Transport knows, at most max of them.
type hostTable struct {
	mu    sync.RWMutex
	m     map[string]*host
	max   int
	limit *admit.Limit // the limit of new hosts, or nil
	clock admit.Clock
}

// get returns the host named key, creating it (with its limit) if create
// is true, at instant now (ns on the time line). It returns nil, nil for
// an unknown host when create is false, and an error wrapping
// admit.ErrTooManyKeys when the table is full of hosts it cannot forget.
func (t *hostTable) get(key string, create bool, now time.Time, ns int64) (*host, error) {
	t.mu.RLock()
	h := t.m[key]
	t.mu.RUnlock()
	if h != nil || !create {
		return h, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.m[key]; h != nil {
		return h, nil
	}
	if !t.room(now, ns) {
		return nil, fmt.Errorf("too many hosts, the maximum is %d: %w", t.max, admit.ErrTooManyKeys)
	}
	h = &host{}
	if t.limit != nil {
		lim, err := admit.NewGCRA(*t.limit, admit.Options{Clock: t.clock})
		if err != nil {
			// New validated the limit.
			return nil, err
		}
		h.lim = lim
	}
	t.m[key] = h
	return h, nil
}

// pause makes host key paused until the instant until (ns on the time
// line), unless it is paused longer already. A pause of a new host is not
// recorded when the table is full.
func (t *hostTable) pause(key string, now time.Time, ns, until int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.m[key]
	if h == nil {
		if !t.room(now, ns) {
			return
		}
		h = &host{}
		if t.limit != nil {
			if lim, err := admit.NewGCRA(*t.limit, admit.Options{Clock: t.clock}); err == nil {
				h.lim = lim
			}
		}
		t.m[key] = h
	}
	for {
		old := h.until.Load()
		if old >= until || h.until.CompareAndSwap(old, until) {
			return
		}
	}
}

// room reports whether the table can take one more host, forgetting the
// hosts it can if it is full. t.mu is held.
func (t *hostTable) room(now time.Time, ns int64) bool {
	if len(t.m) < t.max {
		return true
	}
	for k, h := range t.m {
		// A host that is not paused and whose limit is full (no tokens
		// taken, no reservation pending) is as good as a new one.
		if h.until.Load() <= ns && (h.lim == nil || h.lim.TokensAt(now) >= float64(h.lim.Burst())) {
			delete(t.m, k)
		}
	}
	return len(t.m) < t.max
}

// len returns the number of hosts held.
func (t *hostTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}

// hostKey returns the host of u as a Transport keys it: lower-cased,
// without the scheme's default port.
func hostKey(u *url.URL) string {
	h := u.Host
	switch {
	case u.Scheme == "https" && strings.HasSuffix(h, ":443"):
		h = h[:len(h)-4]
	case u.Scheme == "http" && strings.HasSuffix(h, ":80"):
		h = h[:len(h)-3]
	}
	for i := 0; i < len(h); i++ {
		if 'A' <= h[i] && h[i] <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}
