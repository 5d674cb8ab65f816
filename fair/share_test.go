package fair

import (
	"context"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/internal/sharetest"
)

func mustShare(t testing.TB, cfg ShareConfig) *Share {
	t.Helper()
	s, err := NewShare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestShareWeighted: three tenants of weights 1, 2 and 3 at ten times the
// budget get it in the proportions 1:2:3; when one goes idle, the other
// two take its share within a second (see sharetest.Run).
func TestShareWeighted(t *testing.T) {
	s := mustShare(t, ShareConfig{Budget: sharetest.Budget, Weight: sharetest.Weight})
	sharetest.Run(t, func(ctx context.Context, tenant string, at time.Duration) (bool, error) {
		d, err := s.Allow(ctx, admit.Request{Key: tenant, N: 1, At: admittest.At(at)})
		return d.Allowed, err
	})
}
