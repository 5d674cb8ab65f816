package admit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseLimit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Limit
	}{
		{"100/s", Limit{100, time.Second, 100}},
		{"10/min", Limit{10, time.Minute, 10}},
		{"10/m", Limit{10, time.Minute, 10}},
		{"5000/1h burst 50", Limit{5000, time.Hour, 50}},
		{"5000/h burst=50", Limit{5000, time.Hour, 50}},
		{"1/500ms", Limit{1, 500 * time.Millisecond, 1}},
		{"100 per 5m", Limit{100, 5 * time.Minute, 100}},
		{"100 per second", Limit{100, time.Second, 100}},
		{"  20/S BURST 40 ", Limit{20, time.Second, 40}},
		{"7/2d", Limit{7, 48 * time.Hour, 7}},
		{"7/1d12h", Limit{7, 36 * time.Hour, 7}},
		{"3/1m30s", Limit{3, 90 * time.Second, 3}},
		{"1000/day", Limit{1000, 24 * time.Hour, 1000}},
		{"0/s", Limit{0, time.Second, 0}},
		{"unlimited", Unlimited},
		{"inf", Unlimited},
	} {
		got, err := ParseLimit(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseLimit(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestParseLimitErrors(t *testing.T) {
	for _, in := range []string{
		"", "100", "/s", "100/", "abc/s", "-5/s", "1.5/s", "100/s burst", "100/s burst -1",
		"100/fortnight", "100/-1s", "100/0s", "0/s burst 5", "99999999999999999999/s",
		"1/s burst 99999999999999999999", "1/99999999999999d", "1/s burst 1099511627776",
		strings.Repeat("9", 1<<20) + "/s",
	} {
		l, err := ParseLimit(in)
		if err == nil {
			t.Errorf("ParseLimit(%.40q) = %+v, want error", in, l)
			continue
		}
		if !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("ParseLimit(%.40q) error %v does not wrap ErrInvalidLimit", in, err)
		}
		if len(err.Error()) > 300 {
			t.Errorf("ParseLimit(%.40q) error is %d bytes long", in, len(err.Error()))
		}
	}
}

func TestLimitString(t *testing.T) {
	for _, c := range []struct {
		l    Limit
		want string
	}{
		{PerSecond(100), "100/s"},
		{PerMinute(10), "10/min"},
		{PerHour(5000).WithBurst(50), "5000/h burst 50"},
		{PerDay(3), "3/d"},
		{Every(500 * time.Millisecond), "1/500ms"},
		{Limit{Rate: 7, Period: 90 * time.Second}, "7/1m30s"},
		{Limit{Rate: 7, Period: 1500 * time.Microsecond}, "7/1ms500us"},
		{Limit{Rate: 2, Period: 14 * 24 * time.Hour}, "2/14d"},
		{Limit{}, "0/s"},
		{Unlimited, "unlimited"},
		{Every(0), "unlimited"},
		{Limit{Rate: -1, Period: time.Second}, "{Rate:-1 Period:1s Burst:0}"},
	} {
		if got := c.l.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.l, got, c.want)
		}
	}
}

// FuzzParseLimit: no input panics; whatever parses is valid and round-trips
// through String.
func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"100/s", "5000/1h burst 50", "1/500ms", "100 per 5m", "7/1d12h", "unlimited", "0/s", "1/1ns burst 9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLimit(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidLimit) {
				t.Fatalf("error %v does not wrap ErrInvalidLimit", err)
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("ParseLimit(%q) = %+v, invalid: %v", s, l, err)
		}
		back, err := ParseLimit(l.String())
		if err != nil || back.normal() != l.normal() {
			t.Fatalf("round trip %q -> %+v -> %q -> %+v, %v", s, l, l.String(), back, err)
		}
	})
}

func TestLimitValidate(t *testing.T) {
	for _, c := range []struct {
		l  Limit
		ok bool
	}{
		{Limit{}, true},
		{PerSecond(1), true},
		{Unlimited, true},
		{Limit{Rate: 1}, false},
		{Limit{Rate: 0, Period: time.Second, Burst: 5}, false},
		{Limit{Rate: -1, Period: time.Second}, false},
		{Limit{Rate: 1, Period: time.Second, Burst: -1}, false},
		{Limit{Rate: 1, Period: 100 * 365 * 24 * time.Hour}, false},
		{Limit{Rate: 1e9, Period: 1}, true},
		{Limit{Rate: 1 << 62, Period: time.Second, Burst: 1}, true},
	} {
		err := c.l.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidLimit)) {
			t.Errorf("%+v.Validate() = %v, want ok=%v", c.l, err, c.ok)
		}
	}
}

// TestEmissionInterval checks the emission interval T = Period/Rate that
// Limit's documentation states (Limit.Interval was removed): after a burst
// of one, the next event waits T rounded up to a whole nanosecond; an
// unlimited limit never waits, and the zero Limit waits forever.
func TestEmissionInterval(t *testing.T) {
	for _, c := range []struct {
		l    Limit
		want time.Duration
	}{
		{PerSecond(100).WithBurst(1), 10 * time.Millisecond},
		{PerSecond(3).WithBurst(1), 333333334},
		{Unlimited, 0},
		{Limit{}, InfDuration},
	} {
		g, err := NewGCRA(c.l)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Unix(0, 0)
		g.AllowN(t0, 1)
		if got := g.DecideN(t0, 1).RetryAfter; got != c.want {
			t.Errorf("%v: the next event waits %v, want %v", c.l, got, c.want)
		}
	}
}

func TestParseAlgorithm(t *testing.T) {
	for _, a := range Algorithms() {
		got, err := ParseAlgorithm(strings.ToUpper(strings.ReplaceAll(a.String(), "_", "-")))
		if err != nil || got != a {
			t.Errorf("ParseAlgorithm(%v) = %v, %v", a, got, err)
		}
	}
	if _, err := ParseAlgorithm("leaky"); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `unknown algorithm "leaky"`) {
		t.Errorf("ParseAlgorithm(leaky) = %v", err)
	}
	if _, err := New(Algorithm(99), PerSecond(1)); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "unknown algorithm Algorithm(99)") {
		t.Errorf("New(99) = %v", err)
	}
	if s := Algorithm(99).String(); s != "Algorithm(99)" {
		t.Errorf("String = %q", s)
	}
	for _, a := range Algorithms() {
		if lim, err := New(a, Limit{Rate: -1}); lim != nil || !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("New(%v, invalid) = %v, %v", a, lim, err)
		}
	}
}
