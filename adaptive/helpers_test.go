package adaptive

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

var t0 = admittest.Epoch

// at returns the instant ms milliseconds after t0.
func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

// errBounds stands, in the tables of bad configs, for an error wrapping
// admit.ErrInvalidConfig whose message names the bounds.
var errBounds = errors.New("adaptive: invalid bounds")

// matches reports whether err is the error that want stands for: one
// wrapping want, or for errBounds, one wrapping admit.ErrInvalidConfig
// whose message says "adaptive: invalid bounds" (and another config error
// must not say so).
func matches(err, want error) bool {
	bounds := err != nil && strings.Contains(err.Error(), errBounds.Error())
	if want == errBounds {
		return errors.Is(err, admit.ErrInvalidConfig) && bounds
	}
	return errors.Is(err, want) && !bounds
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// checkGoroutines fails t if more goroutines run at its end than at its
// start (after letting exiting ones finish).
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		for range 100 {
			if runtime.NumGoroutine() <= before {
				return
			}
			runtime.Gosched()
			time.Sleep(time.Millisecond)
		}
		t.Errorf("goroutines: %d at start, %d at end", before, runtime.NumGoroutine())
	})
}
