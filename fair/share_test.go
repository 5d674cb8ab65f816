package fair

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

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

// TestShareKeepsItsKeys: a tenant given as a string over a buffer the
// caller reuses (as the policy engine's scratch keys are) is kept under a
// copy: changing the buffer changes no tenant.
func TestShareKeepsItsKeys(t *testing.T) {
	s := mustShare(t, ShareConfig{Budget: admit.PerSecond(10)})
	buf := []byte("a")
	key := unsafe.String(&buf[0], len(buf))
	for i := range 3 {
		if _, err := s.Allow(context.Background(), admit.Request{Key: key, N: 1, At: admittest.At(time.Duration(i))}); err != nil {
			t.Fatal(err)
		}
	}
	buf[0] = 'b'
	if p := s.tenants["a"]; p == nil || p.Seen == 0 || len(s.tenants) != 1 {
		t.Errorf("tenant a lost when its caller's buffer changed: %v", s.tenants)
	}
}

// TestShareForgets: tenants idle and full are forgotten as new ones come,
// which changes no decision; a Share at MaxTenants active ones refuses a
// new tenant with admit.ErrTooManyKeys.
func TestShareForgets(t *testing.T) {
	s := mustShare(t, ShareConfig{Budget: admit.PerSecond(1000), MaxTenants: 100})
	ctx := context.Background()
	for i := range 1000 {
		at := admittest.At(time.Duration(i) * 10 * time.Millisecond)
		if _, err := s.Allow(ctx, admit.Request{Key: fmt.Sprint("t", i), N: 1, At: at}); err != nil {
			t.Fatalf("tenant %d: %v", i, err)
		}
	}
	if n := len(s.tenants); n > 200 {
		t.Errorf("%d tenants held, want those of the last second or so", n)
	}
	full := mustShare(t, ShareConfig{Budget: admit.PerSecond(1000), MaxTenants: 100})
	var err error
	for i := 0; err == nil && i < 200; i++ {
		_, err = full.Allow(ctx, admit.Request{Key: fmt.Sprint("t", i), N: 1, At: admittest.Epoch})
	}
	if !errors.Is(err, admit.ErrTooManyKeys) {
		t.Errorf("200 active tenants at MaxTenants 100: %v", err)
	}
}

// TestShareAllocs: the decision of a tenant the Share holds allocates
// nothing.
func TestShareAllocs(t *testing.T) {
	s := mustShare(t, ShareConfig{Budget: admit.PerSecond(1e9), Weight: sharetest.Weight})
	ctx := context.Background()
	at := admittest.Epoch
	s.Allow(ctx, admit.Request{Key: "c", N: 1, At: at})
	if n := testing.AllocsPerRun(100, func() {
		at = at.Add(time.Nanosecond)
		s.Allow(ctx, admit.Request{Key: "c", N: 1, At: at})
	}); n != 0 {
		t.Errorf("%v allocations per decision, want 0", n)
	}
}
