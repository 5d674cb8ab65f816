package httplimit

import (
	"net/http"
	"time"

	"github.com/admit-go/admit"
)

// allowKeyed asks m.lim about n events for key, and in delay mode
// (Config.MaxDelay, not in shadow mode) waits for a delayed slot
// (admit.Wait); gone reports that the client went away meanwhile (its
// slot was then given back if the limiter could).
func (m *Middleware) allowKeyed(r *http.Request, key string, n int64) (d admit.Decision, gone bool, err error) {
	req := admit.Request{Key: key, N: n, MaxDelay: m.maxDelay}
	if m.maxDelay <= 0 || m.shadow {
		d, err = m.lim.Allow(r.Context(), req)
		return d, false, err
	}
	d, err = admit.Wait(r.Context(), m.lim, req, nil)
	return d, err != nil && d.Allowed, err
}

// sleep waits d, or until r's context ends (its client went away, or its
// deadline passed); it reports whether d passed. A delayed request
// (Decision.Delay) waits here, on its own goroutine, before its handler.
func sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
