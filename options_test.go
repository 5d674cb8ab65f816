package admit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestOptions checks the settings of the single-key limiters: the Clock
// reads the shorthands' instant, the Name is the Rule, and what they
// cannot honour is refused.
func TestOptions(t *testing.T) {
	for _, a := range Algorithms() {
		clk := &stepClock{now: epoch}
		lim, err := New(a, Every(500*time.Millisecond), Options{Clock: clk, Name: "api"})
		if err != nil {
			t.Fatalf("%v: %v", a, err)
		}
		if d := lim.Decide(); !d.Allowed || d.Rule != "api" {
			t.Errorf("%v: first Decide = %+v, want allowed by rule api", a, d)
		}
		// The step clock moves one second per reading: the limit of one
		// per 500ms admits each Allow only on that clock.
		for i := range 3 {
			if !lim.Allow() {
				t.Errorf("%v: Allow %d on the step clock refused", a, i)
			}
		}

		for name, o := range map[string][]Options{
			"observer": {{Observer: NopObserver{}}},
			"two":      {{}, {}},
		} {
			lim, err := New(a, Every(time.Second), o...)
			want := map[string]string{"observer": "call no Observer", "two": "2 settings values"}[name]
			if lim != nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
				t.Errorf("%v with %s Options = %v, %v; want ErrInvalidConfig saying %q", a, name, lim, err, want)
			}
		}
	}
}

func TestPacerConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		c    []PacerConfig
		want string
	}{
		"two":      {[]PacerConfig{{}, {}}, "NewPacer: 2 settings values"},
		"name":     {[]PacerConfig{{Options: Options{Name: "p"}}}, "NewPacer: a Pacer makes no decisions"},
		"observer": {[]PacerConfig{{Options: Options{Observer: NopObserver{}}}}, "NewPacer: a Pacer makes no decisions"},
	} {
		p, err := NewPacer(PerSecond(1), tc.c...)
		if p != nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewPacer = %v, %v; want ErrInvalidConfig saying %q", name, p, err, tc.want)
		}
	}
}
