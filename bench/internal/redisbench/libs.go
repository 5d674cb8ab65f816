package redisbench

import (
	"context"
	"slices"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/prefetch"
	"github.com/admit-go/admit/redisstore"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// Check decides one event for key: whether it is admitted.
type Check func(ctx context.Context, key string) (bool, error)

// Lib is one library's Redis rate limiter, called the way its README
// shows.
type Lib struct {
	// Name names the entry in benchmark names and in cmd/hotkey's -limiter.
	Name string

	// GCRA is true when the limiter promises the bound of a GCRA of the
	// limit: at most Burst + t×Rate/Period events over any interval of
	// length t, summed over every process sharing the Redis. A fixed
	// window does not (it admits up to twice its limit around a window's
	// edge), so cmd/hotkey refuses it.
	GCRA bool

	// New builds the limiter on c as s says, and returns its check and
	// what releases it.
	New func(c redis.UniversalClient, s Setup) (Check, func(), error)
}

// Setup is what a Lib's New builds.
type Setup struct {
	// Prefix begins every key the limiter writes, so that runs and
	// libraries never share state.
	Prefix string

	// Limit is the limit of every key.
	Limit admit.Limit

	// Instances is how many processes share the limit (cmd/hotkey's
	// -procs; 1 in the benchmarks), for a limiter that sizes what it
	// holds by it.
	Instances int
}

// Libs are the limiters compared, in the order the benchmarks run them.
//
//   - admit: redisstore's GCRA, strict (every check that its deny cache
//     does not answer goes to Redis), with the Store's defaults.
//   - admit-prefetch: the same Limiter spent in blocks taken by partial
//     grants (package prefetch, its defaults for Setup.Instances).
//   - redis_rate: go-redis/redis_rate v10's GCRA, one EVALSHA per check.
//   - ulule: ulule/limiter v3's Redis store, a fixed window of Rate events
//     per Period (it has no burst).
var Libs = []Lib{
	{Name: "admit", GCRA: true, New: newAdmit},
	{Name: "admit-prefetch", GCRA: true, New: newAdmitPrefetch},
	{Name: "redis_rate", GCRA: true, New: newRedisRate},
	{Name: "ulule", GCRA: false, New: newUlule},
}

// Lookup returns the element of Libs named name.
func Lookup(name string) (Lib, bool) {
	i := slices.IndexFunc(Libs, func(l Lib) bool { return l.Name == name })
	if i < 0 {
		return Lib{}, false
	}
	return Libs[i], true
}

// Names returns the names of Libs, for a usage message.
func Names() []string {
	names := make([]string, len(Libs))
	for i, l := range Libs {
		names[i] = l.Name
	}
	return names
}

// admitLimiter builds redisstore's Store and GCRA Limiter for set.
func admitLimiter(c redis.UniversalClient, set Setup) (*redisstore.Store, *redisstore.Limiter, error) {
	s, err := redisstore.New(c, redisstore.Config{Prefix: set.Prefix})
	if err != nil {
		return nil, nil, err
	}
	lim, err := s.Limiter(redisstore.LimiterConfig{Limit: set.Limit})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, lim, nil
}

// checkOf is the Check of a keyed limiter: one event per key.
func checkOf(lim admit.KeyedLimiter) Check {
	return func(ctx context.Context, key string) (bool, error) {
		d, err := lim.Allow(ctx, admit.Request{Key: key, N: 1})
		return d.Allowed, err
	}
}

func newAdmit(c redis.UniversalClient, set Setup) (Check, func(), error) {
	s, lim, err := admitLimiter(c, set)
	if err != nil {
		return nil, nil, err
	}
	return checkOf(lim), func() { s.Close() }, nil
}

// newAdmitPrefetch is newAdmit's Limiter spent in blocks (package
// prefetch), with the block size prefetch chooses for Setup.Instances.
func newAdmitPrefetch(c redis.UniversalClient, set Setup) (Check, func(), error) {
	s, rl, err := admitLimiter(c, set)
	if err != nil {
		return nil, nil, err
	}
	lim, err := prefetch.New(prefetch.Config{Store: rl, Instances: set.Instances})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return checkOf(lim), func() { lim.Close(context.Background()); s.Close() }, nil
}

func newRedisRate(c redis.UniversalClient, set Setup) (Check, func(), error) {
	l := redis_rate.NewLimiter(c)
	lim := redis_rate.Limit{Rate: int(set.Limit.Rate), Period: set.Limit.Period, Burst: int(set.Limit.Burst)}
	check := func(ctx context.Context, key string) (bool, error) {
		r, err := l.Allow(ctx, set.Prefix+key, lim)
		return err == nil && r.Allowed > 0, err
	}
	return check, func() {}, nil
}

func newUlule(c redis.UniversalClient, set Setup) (Check, func(), error) {
	st, err := ulredis.NewStoreWithOptions(c, limiter.StoreOptions{Prefix: set.Prefix})
	if err != nil {
		return nil, nil, err
	}
	l := limiter.New(st, limiter.Rate{Period: set.Limit.Period, Limit: set.Limit.Rate})
	check := func(ctx context.Context, key string) (bool, error) {
		lc, err := l.Get(ctx, key)
		return err == nil && !lc.Reached, err
	}
	return check, func() {}, nil
}
