package envoyunit

import (
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

func TestUnits(t *testing.T) {
	for u := Second; u <= Week; u++ {
		got, err := Parse(strings.ToUpper(u.String()))
		if err != nil || got != u {
			t.Errorf("Parse(%q) = %v, %v", strings.ToUpper(u.String()), got, err)
		}
		if back, ok := Of(u.Duration()); !ok || back != u {
			t.Errorf("Of(%v) = %v, %v; want %v", u.Duration(), back, ok, u)
		}
		l, err := Limit(7, u)
		if err != nil || l != (admit.Limit{Rate: 7, Period: u.Duration(), Burst: 7}) || l.Validate() != nil {
			t.Errorf("Limit(7, %v) = %+v, %v", u, l, err)
		}
	}
	if Month.Duration() != 30*24*time.Hour || Year.Duration() != 365*24*time.Hour {
		t.Errorf("month %v, year %v: want envoyproxy/ratelimit's 30 and 365 days", Month.Duration(), Year.Duration())
	}
	for _, s := range []string{"", "unknown", "fortnight", "seconds"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) succeeded", s)
		}
	}
	if _, err := Limit(1, Unknown); err == nil {
		t.Error("Limit(1, Unknown) succeeded")
	}
	if _, ok := Of(3 * time.Second); ok {
		t.Error("Of(3s) found a unit")
	}
	if l, _ := Limit(0, Second); l.Validate() != nil || l.Rate != 0 {
		t.Errorf("Limit(0, second) = %+v: want the zero rate, which refuses everything", l)
	}
	if Unit(99).String() != "Unit(99)" {
		t.Error(Unit(99).String())
	}
}
