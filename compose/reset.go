package compose

import (
	"context"
	"errors"
	"fmt"

	"github.com/admit-go/admit"
)

// Reset forgets key's state in the primary, within the Guard's timeout,
// and under Fallback in the local limiter too (if it is an
// admit.Resetter), whatever the primary's health. The error joins the
// primary's and the local limiter's: with the store down, the local
// limiter is reset all the same and the error says the store was not. A
// primary that is not an admit.Resetter is an error wrapping
// errors.ErrUnsupported ("compose: the limiter cannot reset a key").
func (g *Guard) Reset(ctx context.Context, key string) error {
	var lerr error
	if r, ok := g.local.(admit.Resetter); ok && g.kind == fallback {
		lerr = r.Reset(ctx, key)
	}
	r, ok := g.primary.(admit.Resetter)
	if !ok {
		return errors.Join(fmt.Errorf("%w: %T", errNotResetter, g.primary), lerr)
	}
	tctx, cancel := g.bound(ctx)
	err := r.Reset(tctx, key)
	cancel()
	return errors.Join(err, lerr)
}
