package quota

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"

	// The zone database, embedded in the test binary only, so the tests
	// run where /usr/share/zoneinfo is missing; the library does not
	// import it.
	_ "time/tzdata"
)

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("time.LoadLocation(%q): %v", name, err)
	}
	return loc
}

// utc is an instant written in UTC, to state expected boundaries without
// relying on time.Date in a zone.
func utc(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, time.UTC)
}

func TestPeriodBounds(t *testing.T) {
	paris := mustLoad(t, "Europe/Paris")
	ny := mustLoad(t, "America/New_York")
	saoPaulo := mustLoad(t, "America/Sao_Paulo")
	havana := mustLoad(t, "America/Havana")
	santiago := mustLoad(t, "America/Santiago")
	apia := mustLoad(t, "Pacific/Apia")
	kiritimati := mustLoad(t, "Pacific/Kiritimati")
	pagoPago := mustLoad(t, "Pacific/Pago_Pago")
	kolkata := mustLoad(t, "Asia/Kolkata")
	lordHowe := mustLoad(t, "Australia/Lord_Howe")
	troll := mustLoad(t, "Antarctica/Troll")

	tests := []struct {
		name       string
		p          Period
		loc        *time.Location
		week       time.Weekday
		start, end time.Time // in UTC
	}{
		{"hour UTC", Hour, time.UTC, time.Monday, utc(2025, 1, 1, 10, 0), utc(2025, 1, 1, 11, 0)},
		{"day UTC", Day, time.UTC, time.Monday, utc(2025, 1, 1, 0, 0), utc(2025, 1, 2, 0, 0)},
		{"week Monday", Week, time.UTC, time.Monday, utc(2024, 12, 30, 0, 0), utc(2025, 1, 6, 0, 0)},
		{"week Sunday", Week, time.UTC, time.Sunday, utc(2024, 12, 29, 0, 0), utc(2025, 1, 5, 0, 0)},
		{"week Saturday", Week, time.UTC, time.Saturday, utc(2024, 12, 28, 0, 0), utc(2025, 1, 4, 0, 0)},
		{"month January", Month, time.UTC, time.Monday, utc(2025, 1, 1, 0, 0), utc(2025, 2, 1, 0, 0)},
		{"month February", Month, time.UTC, time.Monday, utc(2025, 2, 1, 0, 0), utc(2025, 3, 1, 0, 0)},
		{"month February leap", Month, time.UTC, time.Monday, utc(2024, 2, 1, 0, 0), utc(2024, 3, 1, 0, 0)},
		{"month December", Month, time.UTC, time.Monday, utc(2025, 12, 1, 0, 0), utc(2026, 1, 1, 0, 0)},
		{"year", Year, time.UTC, time.Monday, utc(2025, 1, 1, 0, 0), utc(2026, 1, 1, 0, 0)},
		{"year leap", Year, time.UTC, time.Monday, utc(2024, 1, 1, 0, 0), utc(2025, 1, 1, 0, 0)},
		{"leap day", Day, time.UTC, time.Monday, utc(2024, 2, 29, 0, 0), utc(2024, 3, 1, 0, 0)},

		// Europe/Paris: CET (+1) and CEST (+2); clocks go forward at 01:00
		// UTC on the last Sunday of March, back at 01:00 UTC on the last
		// Sunday of October.
		{"Paris day", Day, paris, time.Monday, utc(2025, 1, 14, 23, 0), utc(2025, 1, 15, 23, 0)},
		{"Paris spring day 23h", Day, paris, time.Monday, utc(2025, 3, 29, 23, 0), utc(2025, 3, 30, 22, 0)},
		{"Paris autumn day 25h", Day, paris, time.Monday, utc(2025, 10, 25, 22, 0), utc(2025, 10, 26, 23, 0)},
		{"Paris spring hour before", Hour, paris, time.Monday, utc(2025, 3, 30, 0, 0), utc(2025, 3, 30, 1, 0)},
		{"Paris spring hour after", Hour, paris, time.Monday, utc(2025, 3, 30, 1, 0), utc(2025, 3, 30, 2, 0)},
		{"Paris autumn hour 2h", Hour, paris, time.Monday, utc(2025, 10, 26, 0, 0), utc(2025, 10, 26, 2, 0)},
		{"Paris March", Month, paris, time.Monday, utc(2025, 2, 28, 23, 0), utc(2025, 3, 31, 22, 0)},
		{"Paris October", Month, paris, time.Monday, utc(2025, 9, 30, 22, 0), utc(2025, 10, 31, 23, 0)},
		{"Paris spring week", Week, paris, time.Monday, utc(2025, 3, 23, 23, 0), utc(2025, 3, 30, 22, 0)},
		{"Paris year", Year, paris, time.Monday, utc(2024, 12, 31, 23, 0), utc(2025, 12, 31, 23, 0)},

		// America/New_York: EST (-5), EDT (-4); changes at 02:00 local.
		{"New York spring day 23h", Day, ny, time.Monday, utc(2025, 3, 9, 5, 0), utc(2025, 3, 10, 4, 0)},
		{"New York autumn day 25h", Day, ny, time.Monday, utc(2025, 11, 2, 4, 0), utc(2025, 11, 3, 5, 0)},
		{"New York spring hour", Hour, ny, time.Monday, utc(2025, 3, 9, 6, 0), utc(2025, 3, 9, 7, 0)},
		{"New York autumn hour 2h", Hour, ny, time.Monday, utc(2025, 11, 2, 5, 0), utc(2025, 11, 2, 7, 0)},

		// America/Sao_Paulo, 2018-11-04: at 00:00 (-03) the clocks went
		// to 01:00 (-02): that midnight never was, and the day started at
		// 01:00. time.Date returns 23:00 of the 3rd for it.
		{"Sao Paulo day before the gap", Day, saoPaulo, time.Monday, utc(2018, 11, 3, 3, 0), utc(2018, 11, 4, 3, 0)},
		{"Sao Paulo day without midnight", Day, saoPaulo, time.Monday, utc(2018, 11, 4, 3, 0), utc(2018, 11, 5, 2, 0)},
		{"Sao Paulo November 2018", Month, saoPaulo, time.Monday, utc(2018, 11, 1, 3, 0), utc(2018, 12, 1, 2, 0)},
		// 2019-02-17 00:00 (-02) became 2019-02-16 23:00 (-03): the 16th
		// lasted 25 hours.
		{"Sao Paulo day back across midnight", Day, saoPaulo, time.Monday, utc(2019, 2, 16, 2, 0), utc(2019, 2, 17, 3, 0)},

		// America/Santiago changes at 24:00 on Saturday.
		{"Santiago day without midnight", Day, santiago, time.Monday, utc(2024, 9, 8, 4, 0), utc(2024, 9, 9, 3, 0)},
		{"Santiago day back across midnight", Day, santiago, time.Monday, utc(2024, 4, 6, 3, 0), utc(2024, 4, 7, 4, 0)},

		// America/Havana: forward at 00:00 (-05 to -04), back at 01:00
		// (-04 to -05), so the hour after midnight happens twice.
		{"Havana day without midnight", Day, havana, time.Monday, utc(2025, 3, 9, 5, 0), utc(2025, 3, 10, 4, 0)},
		{"Havana day with two midnight hours", Day, havana, time.Monday, utc(2025, 11, 2, 4, 0), utc(2025, 11, 3, 5, 0)},
		{"Havana week without midnight", Week, havana, time.Sunday, utc(2025, 3, 9, 5, 0), utc(2025, 3, 16, 4, 0)},

		// Pacific/Apia skipped 30 December 2011 (-10 to +14).
		{"Apia day before the skipped day", Day, apia, time.Monday, utc(2011, 12, 29, 10, 0), utc(2011, 12, 30, 10, 0)},
		{"Apia day after the skipped day", Day, apia, time.Monday, utc(2011, 12, 30, 10, 0), utc(2011, 12, 31, 10, 0)},
		{"Apia December 2011", Month, apia, time.Monday, utc(2011, 12, 1, 10, 0), utc(2011, 12, 31, 10, 0)},

		// Far from UTC.
		{"Kiritimati day (+14)", Day, kiritimati, time.Monday, utc(2024, 12, 31, 10, 0), utc(2025, 1, 1, 10, 0)},
		{"Kiritimati month", Month, kiritimati, time.Monday, utc(2024, 12, 31, 10, 0), utc(2025, 1, 31, 10, 0)},
		{"Pago Pago day (-11)", Day, pagoPago, time.Monday, utc(2025, 1, 1, 11, 0), utc(2025, 1, 2, 11, 0)},
		{"Pago Pago year", Year, pagoPago, time.Monday, utc(2025, 1, 1, 11, 0), utc(2026, 1, 1, 11, 0)},
		{"Kolkata hour (+5:30)", Hour, kolkata, time.Monday, utc(2025, 1, 1, 4, 30), utc(2025, 1, 1, 5, 30)},
		// Lord Howe moves its clocks by 30 minutes: 02:00 (+10:30) became
		// 02:30 (+11) on 2024-10-06, so that clock hour lasted 30 minutes.
		{"Lord Howe short hour", Hour, lordHowe, time.Monday, utc(2024, 10, 5, 15, 30), utc(2024, 10, 5, 16, 0)},
		// Antarctica/Troll goes back two hours (03:00 +02 to 01:00 +00 at
		// 01:00 UTC): the 02:00 hour holds the hours read twice.
		{"Troll long hour", Hour, troll, time.Monday, utc(2025, 10, 26, 0, 0), utc(2025, 10, 26, 3, 0)},
		{"Troll long day", Day, troll, time.Monday, utc(2025, 10, 25, 22, 0), utc(2025, 10, 27, 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, at := range []time.Time{tt.start, tt.start.Add(1), tt.start.Add(tt.end.Sub(tt.start) / 2), tt.end.Add(-1)} {
				start, end := tt.p.Bounds(at, tt.loc, tt.week)
				if !start.Equal(tt.start) || !end.Equal(tt.end) {
					t.Errorf("Bounds(%v) = [%v, %v), want [%v, %v)", at, start.UTC(), end.UTC(), tt.start, tt.end)
				}
				if start.Location() != tt.loc {
					t.Errorf("Bounds(%v) start in %v, want %v", at, start.Location(), tt.loc)
				}
			}
			// One nanosecond outside, either side, is the next period.
			if _, end := tt.p.Bounds(tt.start.Add(-1), tt.loc, tt.week); !end.Equal(tt.start) {
				t.Errorf("Bounds(start-1ns) ends at %v, want %v", end.UTC(), tt.start)
			}
			if start, _ := tt.p.Bounds(tt.end, tt.loc, tt.week); !start.Equal(tt.end) {
				t.Errorf("Bounds(end) starts at %v, want %v", start.UTC(), tt.end)
			}
		})
	}
}

func TestPeriodBoundsNilLocationAndInvalid(t *testing.T) {
	at := utc(2025, 6, 15, 12, 0)
	s, e := Day.Bounds(at, nil, time.Monday)
	if !s.Equal(utc(2025, 6, 15, 0, 0)) || !e.Equal(utc(2025, 6, 16, 0, 0)) {
		t.Errorf("nil location: [%v, %v)", s, e)
	}
	for _, p := range []Period{0, Year + 1, 255} {
		if s, e := p.Bounds(at, time.UTC, time.Monday); !s.Equal(at) || !e.Equal(at) {
			t.Errorf("%v.Bounds = [%v, %v), want [at, at)", p, s, e)
		}
	}
}

// TestPeriodBoundsTile checks, at random instants in zones with every kind
// of transition, that the period holding t holds t, that periods meet
// without gap or overlap, that their lengths are sensible, and that where
// a period's first moment exists once on the wall clock, the period starts
// where time.Date puts it.
func TestPeriodBoundsTile(t *testing.T) {
	zones := []string{"UTC", "Europe/Paris", "America/New_York", "America/Sao_Paulo", "America/Havana",
		"America/Santiago", "Pacific/Apia", "Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Kolkata",
		"Asia/Kathmandu", "Australia/Lord_Howe", "Africa/Casablanca", "Europe/Dublin", "Antarctica/Troll",
		"America/St_Johns", "Asia/Tehran"}
	lengths := map[Period][2]time.Duration{
		Hour:  {30 * time.Minute, 3 * time.Hour},
		Day:   {22 * time.Hour, 26 * time.Hour},
		Week:  {7*24*time.Hour - 2*time.Hour, 8 * 24 * time.Hour},
		Month: {27 * 24 * time.Hour, 32 * 24 * time.Hour},
		Year:  {364 * 24 * time.Hour, 367 * 24 * time.Hour},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	lo, hi := utc(1990, 1, 1, 0, 0).UnixNano(), utc(2040, 1, 1, 0, 0).UnixNano()
	for _, z := range zones {
		loc := mustLoad(t, z)
		for range 3000 {
			at := time.Unix(0, lo+rng.Int64N(hi-lo))
			p := Period(1 + rng.IntN(5))
			week := time.Weekday(rng.IntN(7))
			start, end := p.Bounds(at, loc, week)
			if at.Before(start) || !at.Before(end) {
				t.Fatalf("%s %v.Bounds(%v) = [%v, %v) does not hold it", z, p, at, start, end)
			}
			if s2, e2 := p.Bounds(start, loc, week); !s2.Equal(start) || !e2.Equal(end) {
				t.Fatalf("%s %v: Bounds(start %v) = [%v, %v), want the same period [%v, %v)", z, p, start, s2, e2, start, end)
			}
			if _, e0 := p.Bounds(start.Add(-1), loc, week); !e0.Equal(start) {
				t.Fatalf("%s %v: the period before %v ends at %v", z, p, start, e0)
			}
			if s3, _ := p.Bounds(end, loc, week); !s3.Equal(end) {
				t.Fatalf("%s %v: the period after [%v, %v) starts at %v", z, p, start, end, s3)
			}
			if l, want := end.Sub(start), lengths[p]; (l < want[0] || l > want[1]) && !(z == "Pacific/Apia" && at.Year() < 2012) {
				t.Fatalf("%s %v: [%v, %v) lasts %v", z, p, start, end, l)
			}
			// Where the period's first moment is on the wall clock once
			// and the clock reads it at start, time.Date agrees.
			ls := start.In(loc)
			if ls.Minute() == 0 && ls.Second() == 0 && ls.Nanosecond() == 0 {
				if _, off := start.Add(-time.Hour).Zone(); off == func() int { _, o := ls.Zone(); return o }() {
					want := time.Date(ls.Year(), ls.Month(), ls.Day(), ls.Hour(), 0, 0, 0, loc)
					if !want.Equal(start) {
						t.Fatalf("%s %v: start %v, time.Date says %v", z, p, start, want)
					}
				}
			}
			if p == Week && ls.Weekday() != week && z != "Pacific/Apia" {
				t.Fatalf("%s: week starting %v is a %v, want %v", z, start, ls.Weekday(), week)
			}
		}
	}
}

func TestParsePeriod(t *testing.T) {
	for s, want := range map[string]Period{"hour": Hour, "Day": Day, " weekly ": Week, "MONTH": Month, "yearly": Year} {
		if got, err := ParsePeriod(s); got != want || err != nil {
			t.Errorf("ParsePeriod(%q) = %v, %v, want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "minute", "days", "1d"} {
		if _, err := ParsePeriod(s); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "quota: invalid period") {
			t.Errorf("ParsePeriod(%q) error = %v, want admit.ErrInvalidConfig, an invalid period", s, err)
		}
	}
	for p, want := range map[Period]string{Hour: "hour", Day: "day", Week: "week", Month: "month", Year: "year", 0: "Period(0)", 9: "Period(9)"} {
		if got := p.String(); got != want {
			t.Errorf("Period(%d).String() = %q, want %q", p, got, want)
		}
	}
}
