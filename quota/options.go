package quota

import (
	"fmt"
	"time"

	"github.com/admit-go/admit"
)

// Config configures a Quota. Every field's zero value is its default, but
// for Limit and Period, which New requires.
type Config struct {
	// Options are the clock, name and observer (see admit.Options). The
	// clock is read by Allow and Refund for a Request whose At is zero.
	// The observer is told of every decision, of keys evicted and of the
	// number of keys held (Tracked): 0 by New, then whenever keys are
	// evicted or a new key is refused at the cap, and as their number
	// grows, so that it lags by an eighth of it at most.
	admit.Options

	// Limit is the quota's size: events per key per period, for the calls
	// that do not give one (Request.Limit.Rate). Required: it must be at
	// least 1 (an error wrapping admit.ErrInvalidConfig that says
	// "invalid quota size").
	Limit int64

	// Period is the calendar period the quota counts in: Hour, Day, Week,
	// Month or Year. Required: the zero Period is an error wrapping
	// admit.ErrInvalidConfig.
	Period Period

	// Location is the time zone whose calendar the periods follow, as
	// returned by time.LoadLocation("Europe/Paris"). Nil means time.UTC.
	Location *time.Location

	// WeekStart is the first day of a week, for Week quotas. Nil means
	// time.Monday (ISO 8601); new(time.Sunday) is the other usual choice.
	// (A pointer, because the zero Weekday is Sunday: a plain field would
	// make time.Sunday mean Monday.)
	WeekStart *time.Weekday

	// MaxKeys caps the number of keys the quota holds, exactly. A new key
	// beyond the cap is refused with an error wrapping admit.ErrTooManyKeys (see
	// Quota). 0 means 1<<20; a negative value is an error.
	MaxKeys int

	// MaxKeyLength is the longest key, in bytes, the quota accepts; a
	// longer key is an error wrapping admit.ErrKeyTooLong. 0 means 4096; a
	// negative value is an error.
	MaxKeyLength int
}

// The defaults of Config's fields.
const (
	defaultMaxKeys      = 1 << 20
	defaultMaxKeyLength = 4096
)

// settings are a Config checked, with its defaults filled in.
type settings struct {
	loc       *time.Location
	weekStart time.Weekday
	maxKeys   int
	maxKeyLen int
}

// settings checks cfg and fills in its defaults. The error wraps
// admit.ErrInvalidConfig and names the field.
func (cfg *Config) settings() (settings, error) {
	s := settings{loc: cfg.Location, weekStart: time.Monday, maxKeys: cfg.MaxKeys, maxKeyLen: cfg.MaxKeyLength}
	switch {
	case cfg.Limit < 1:
		return s, fmt.Errorf("%w: quota: Limit %d: invalid quota size: a quota admits at least 1 event per period", admit.ErrInvalidConfig, cfg.Limit)
	case !validPeriod(cfg.Period):
		return s, fmt.Errorf("%w: quota: Period %v: invalid period: want Hour, Day, Week, Month or Year", admit.ErrInvalidConfig, cfg.Period)
	case cfg.WeekStart != nil && (*cfg.WeekStart < time.Sunday || *cfg.WeekStart > time.Saturday):
		return s, fmt.Errorf("%w: quota: WeekStart %d: want time.Sunday to time.Saturday", admit.ErrInvalidConfig, int(*cfg.WeekStart))
	case cfg.MaxKeys < 0:
		return s, fmt.Errorf("%w: quota: MaxKeys %d: want >= 0", admit.ErrInvalidConfig, cfg.MaxKeys)
	case cfg.MaxKeyLength < 0:
		return s, fmt.Errorf("%w: quota: MaxKeyLength %d: want >= 0", admit.ErrInvalidConfig, cfg.MaxKeyLength)
	}
	if s.loc == nil {
		s.loc = time.UTC
	}
	if cfg.WeekStart != nil {
		s.weekStart = *cfg.WeekStart
	}
	if s.maxKeys == 0 {
		s.maxKeys = defaultMaxKeys
	}
	if s.maxKeyLen == 0 {
		s.maxKeyLen = defaultMaxKeyLength
	}
	return s, nil
}
