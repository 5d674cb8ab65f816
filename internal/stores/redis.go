package stores

import (
	"strconv"
	"strings"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/redisstore"
)

// Redis builds limiters in the Redis of Store, deciding at Clock.Now()
// when Clock is not nil (see policy/backends.Redis).
type Redis struct {
	Store *redisstore.Store
	Clock admit.Clock
}

// name escapes ':', '{', '}' and '%' in a limiter's name.
func name(n string) string {
	if !strings.ContainsAny(n, ":{}%") {
		return n
	}
	var sb strings.Builder
	for i := 0; i < len(n); i++ {
		switch c := n[i]; c {
		case ':', '{', '}', '%':
			sb.WriteByte('%')
			sb.WriteString(strings.ToUpper(strconv.FormatUint(uint64(c), 16)))
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func (r *Redis) Rate(s Spec) (admit.KeyedLimiter, error) {
	lim, err := r.Store.Limiter(s.Algorithm, s.Limit, redisstore.WithName(name(s.Name)), redisstore.WithObserver(s.Observer))
	if err != nil {
		return nil, err
	}
	a := AdaptRate(lim)
	a.Clock = r.Clock
	return a, nil
}

func (r *Redis) Quota(s Spec) (admit.KeyedLimiter, error) {
	q, err := r.Store.Quota(s.Limit.Rate, s.Period, redisstore.WithName(name(s.Name)), redisstore.WithObserver(s.Observer),
		redisstore.WithLocation(s.Location), redisstore.WithWeekStart(s.WeekStart))
	if err != nil {
		return nil, err
	}
	a := AdaptQuota(q)
	a.Clock = r.Clock
	return a, nil
}

func (r *Redis) Slots(s Spec) (admit.Slots, error) {
	opts := []redisstore.Option{redisstore.WithName(name(s.Name)), redisstore.WithObserver(s.Observer)}
	if s.Lease > 0 {
		opts = append(opts, redisstore.WithLease(s.Lease))
	}
	c, err := r.Store.Concurrency(s.Limit.Rate, opts...)
	if err != nil {
		return nil, err
	}
	return AdaptSlots(c.Slots()), nil
}
