package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/quota"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want admit.Limit
	}{
		{"100/s", admit.Limit{Rate: 100, Period: time.Second, Burst: 100}},
		{"5000/1h burst 50", admit.Limit{Rate: 5000, Period: time.Hour, Burst: 50}},
		{"100 per 5m", admit.Limit{Rate: 100, Period: 5 * time.Minute, Burst: 100}},
		{"100 per 5 minutes", admit.Limit{Rate: 100, Period: 5 * time.Minute, Burst: 100}},
		{"10/2 hours burst=3", admit.Limit{Rate: 10, Period: 2 * time.Hour, Burst: 3}},
		{"7/week", admit.Limit{Rate: 7, Period: 7 * day, Burst: 7}},
		{"3/2w", admit.Limit{Rate: 3, Period: 14 * day, Burst: 3}},
		{"10_000/day", admit.Limit{Rate: 10000, Period: day, Burst: 10000}},
		{"1 per second", admit.Limit{Rate: 1, Period: time.Second, Burst: 1}},
		{"20 PER MIN BURST 40", admit.Limit{Rate: 20, Period: time.Minute, Burst: 40}},
		{"1/1d12h", admit.Limit{Rate: 1, Period: 36 * time.Hour, Burst: 1}},
		{"1/500ms", admit.Limit{Rate: 1, Period: 500 * time.Millisecond, Burst: 1}},
		{"0/s", admit.Limit{Rate: 0, Period: time.Second, Burst: 0}},
		{"unlimited", admit.Unlimited},
	} {
		got, err := ParseRate(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseRateBad(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"100", `want RATE/PERIOD`},
		{"-5/s", `rate "-5" is negative`},
		{"5/-1s", `period "-1s"`},
		{"x/s", `rate "x" is not a whole number`},
		{"99999999999999999999/s", `rate "99999999999999999999" is too large`},
		{"1/0s", `period "0s" must be positive`},
		{"1/0 minutes", `period "0 minutes" must be positive`},
		{"1/fortnight", `period "fortnight"`},
		{"1/month", `not a fixed duration`},
		{"1/year", `not a fixed duration`},
		{"0/s burst 5", `burst`},
		{"10/s burst", `burst without a value`},
		{"10/s burst -1", `burst "-1" is negative`},
		{"1/100000000000d", `too long`},
		{"1/99999999999999 weeks", `too long`},
		{"1/40000d", `invalid limit "1/40000d"`},
	} {
		_, err := ParseRate(tc.in)
		if err == nil || !errors.Is(err, admit.ErrInvalidLimit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRate(%q) = %v; want an ErrInvalidLimit saying %q", tc.in, err, tc.want)
		}
	}
}

func TestParseQuota(t *testing.T) {
	for _, tc := range []struct {
		in     string
		n      int64
		period quota.Period
	}{
		{"1000/day", 1000, quota.Day},
		{"100_000 per month", 100000, quota.Month},
		{"5/h", 5, quota.Hour},
		{"1 per Year", 1, quota.Year},
		{"7/weekly", 7, quota.Week},
		{"9007199254740992/d", 1 << 53, quota.Day},
	} {
		n, p, err := parseQuota(tc.in)
		if err != nil || n != tc.n || p != tc.period {
			t.Errorf("parseQuota(%q) = %d, %v, %v; want %d, %v", tc.in, n, p, err, tc.n, tc.period)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"1000", "want N/PERIOD"},
		{"0/day", "admits nothing"},
		{"-1/day", "negative"},
		{"9007199254740993/day", "too large"},
		{"1/fortnight", `period "fortnight"`},
		{"1/24h", `period "24h"`},
	} {
		_, _, err := parseQuota(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseQuota(%q) = %v; want an error saying %q", tc.in, err, tc.want)
		}
	}
}

// TestQuotaText: a quota's text, as the status page shows it, is how a
// policy file writes it (parseQuota reads its start back), with the time
// zone and the first day of the week where they are not the defaults.
func TestQuotaText(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	for _, tc := range []struct {
		q    Quota
		want string
	}{
		{Quota{Limit: 1000, Period: quota.Day, WeekStart: time.Monday}, "1000/day"},
		{Quota{Limit: 1000, Period: quota.Day, Location: time.UTC}, "1000/day"},
		{Quota{Limit: 1000, Period: quota.Day, Location: paris}, "1000/day (Europe/Paris)"},
		{Quota{Limit: 100000, Period: quota.Month, Location: paris, WeekStart: time.Sunday}, "100000/month (Europe/Paris)"},
		{Quota{Limit: 7, Period: quota.Week, WeekStart: time.Monday}, "7/week"},
		{Quota{Limit: 7, Period: quota.Week, WeekStart: time.Sunday}, "7/week (UTC, week_start: sunday)"},
		{Quota{Limit: 1 << 53, Period: quota.Week, Location: paris, WeekStart: time.Saturday}, "9007199254740992/week (Europe/Paris, week_start: saturday)"},
	} {
		got := quotaText(&tc.q)
		if got != tc.want {
			t.Errorf("quotaText(%+v) = %q, want %q", tc.q, got, tc.want)
		}
		start, _, _ := strings.Cut(got, " ")
		if n, p, err := parseQuota(start); err != nil || n != tc.q.Limit || p != tc.q.Period {
			t.Errorf("parseQuota(%q) = %d, %v, %v; want %d, %v", start, n, p, err, tc.q.Limit, tc.q.Period)
		}
	}
}

// FuzzParseRate checks that ParseRate never panics, agrees with
// admit.ParseLimit wherever that accepts, returns only valid limits, and
// that a limit's String parses back to it.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100/s", "5000/1h burst 50", "100 per 5 minutes", "7/week", "10_000/day",
		"0/s", "0/s burst 1", "-1/s", "1/month", "99999999999999999999/s", "1/1d12h", "unlimited", "1 per 3 ns", "3/2w burst=4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseRate(s)
		if ref, rerr := admit.ParseLimit(s); rerr == nil && (err != nil || l != ref) {
			t.Fatalf("ParseRate(%q) = %+v, %v; admit.ParseLimit = %+v", s, l, err, ref)
		}
		if err != nil {
			if !errors.Is(err, admit.ErrInvalidLimit) {
				t.Fatalf("ParseRate(%q): error %v does not wrap ErrInvalidLimit", s, err)
			}
			return
		}
		if verr := l.Validate(); verr != nil {
			t.Fatalf("ParseRate(%q) = %+v, invalid: %v", s, l, verr)
		}
		back, err := ParseRate(l.String())
		if err != nil || normal(back) != normal(l) {
			t.Fatalf("ParseRate(%q) = %+v; its String %q parses to %+v, %v", s, l, l.String(), back, err)
		}
	})
}

// normal fills in a burst of 0, which means the rate.
func normal(l admit.Limit) admit.Limit {
	if l.Burst == 0 && l.Rate != admit.Inf {
		l.Burst = l.Rate
	}
	return l
}

// FuzzParseQuota checks that parseQuota never panics and returns quotas
// in their domain.
func FuzzParseQuota(f *testing.F) {
	for _, s := range []string{"1000/day", "100_000 per month", "0/day", "9007199254740993/d", "1/y", "x/day"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, p, err := parseQuota(s)
		if err != nil {
			return
		}
		if n < 1 || n > maxExact || p < quota.Hour || p > quota.Year {
			t.Fatalf("parseQuota(%q) = %d, %v: outside the domain", s, n, p)
		}
	})
}
