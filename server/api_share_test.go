package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/sharetest"
)

// TestAPIShare: admit serve's /v1/check enforces a rule whose rate its
// tenants share by weight (share:): tenants of weights 1, 2 and 3 at ten
// times the rate get 1:2:3 of it, and one gone idle leaves its part to
// the others within a second (sharetest.Run), on the server's clock.
func TestAPIShare(t *testing.T) {
	h := newAPIHarness(t, `
domain: api
rules:
  - name: shared-backend
    match: tenant
    rate: 100/s
    share: {weights: {b: 2, c: 3}}
`)
	sharetest.Run(t, func(_ context.Context, tenant string, at time.Duration) (bool, error) {
		h.clock.Set(admittest.At(at))
		w := h.post("/v1/check", apiCheckBody("api", "tenant="+tenant))
		if w.Code != http.StatusOK && w.Code != http.StatusTooManyRequests {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		r := apiDecode(t, w)
		if r.Decision.Rule != "shared-backend" || r.Decision.Limit.Rate != 100 {
			t.Fatalf("decision %+v", r.Decision)
		}
		return r.Allowed, nil
	})
}
