package httplimit

import (
	"net/http"
	"time"
)

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
