package defaults

import (
	"testing"
	"time"

	"github.com/admit-go/admit"
)

type fixedClock struct{ admit.Clock }

func (fixedClock) Now() time.Time { return time.Unix(7, 0) }

func TestClock(t *testing.T) {
	if got := Clock(admit.Options{}); got != admit.SystemClock {
		t.Errorf("Clock of the zero Options = %v, want admit.SystemClock", got)
	}
	c := fixedClock{admit.SystemClock}
	if got := Clock(admit.Options{Clock: c}); got.Now() != time.Unix(7, 0) {
		t.Errorf("Clock kept the given clock? Now() = %v", got.Now())
	}
}
