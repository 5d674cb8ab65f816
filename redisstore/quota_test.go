package redisstore

// The tests of Quota are internal: one of them sets the local clock a
// Quota guesses periods from (Quota.guess) off Redis's.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/quota"
	"github.com/redis/go-redis/v9"
)

// qStore returns a Store on client under a fresh prefix, closed with the
// test, and the prefix. Keys live a day at least, so that explicit
// instants never race Redis's clock.
func qStore(t testing.TB, client redis.UniversalClient, cfg Config) (*Store, string) {
	t.Helper()
	prefix := redistest.Prefix(t)
	cfg.Prefix, cfg.MinTTL = prefix, 24*time.Hour
	s, err := New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, prefix
}

func qQuota(t testing.TB, s *Store, cfg QuotaConfig) *Quota {
	t.Helper()
	q, err := s.Quota(cfg)
	if err != nil {
		t.Fatalf("Quota(%+v): %v", cfg, err)
	}
	return q
}

var qClients = []struct {
	name   string
	client func(testing.TB) redis.UniversalClient
}{
	{"standalone", func(t testing.TB) redis.UniversalClient { return redistest.Standalone(t).Client(t) }},
	{"cluster", func(t testing.TB) redis.UniversalClient { return redistest.SharedCluster(t).Client(t) }},
}

func paris(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// Goroutines checking one key admit exactly N between them, at an
// explicit instant and on Redis's clock.
func TestQuotaExactUnderConcurrency(t *testing.T) {
	for _, c := range qClients {
		t.Run(c.name, func(t *testing.T) {
			s, _ := qStore(t, c.client(t), Config{})
			ctx := t.Context()
			now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
			for _, explicit := range []bool{true, false} {
				q := qQuota(t, s, QuotaConfig{Options: admit.Options{Name: fmt.Sprint("explicit-", explicit)}, Limit: 100, Period: quota.Year})
				var admitted atomic.Int64
				var wg sync.WaitGroup
				for range 16 {
					wg.Go(func() {
						for range 20 {
							var d admit.Decision
							var err error
							if explicit {
								d, err = q.Allow(ctx, admit.Request{Key: "hot", N: 1, At: now})
							} else {
								d, err = q.Allow(ctx, admit.Request{Key: "hot", N: 1})
							}
							if err != nil {
								t.Error(err)
								return
							}
							if d.Allowed {
								admitted.Add(1)
							}
						}
					})
				}
				wg.Wait()
				if n := admitted.Load(); n != 100 {
					t.Errorf("explicit=%v: admitted %d, want exactly 100", explicit, n)
				}
			}
		})
	}
}

// The fields of decisions, peeks, n > N, per-call sizes and refunds.
func TestQuotaDecisions(t *testing.T) {
	s, _ := qStore(t, redistest.Standalone(t).Client(t), Config{})
	q := qQuota(t, s, QuotaConfig{Options: admit.Options{Name: "plan"}, Limit: 10, Period: quota.Month})
	ctx := t.Context()
	feb := time.Date(2025, 2, 10, 0, 0, 0, 0, time.UTC)
	end := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	month := end.Sub(time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC))

	d, err := q.Allow(ctx, admit.Request{Key: "k", N: 0, At: feb})
	want := admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 10, Period: month, Burst: 10}, Remaining: 10, Rule: "plan", Kind: admit.KindQuota}
	if err != nil || d != want {
		t.Errorf("a peek of a new key: %+v, %v; want %+v", d, err, want)
	}
	d, _ = q.Allow(ctx, admit.Request{Key: "k", N: 7, At: feb})
	want.Remaining, want.ResetAfter = 3, end.Sub(feb)
	if d != want {
		t.Errorf("7 of 10: %+v; want %+v", d, want)
	}
	d, _ = q.Allow(ctx, admit.Request{Key: "k", N: 4, At: feb})
	want.Allowed, want.RetryAfter = false, end.Sub(feb)
	if d != want {
		t.Errorf("4 more: %+v; want %+v", d, want)
	}
	d, _ = q.Allow(ctx, admit.Request{Key: "k", N: 11, At: feb})
	want.RetryAfter = admit.InfDuration
	if d != want {
		t.Errorf("11 of 10: %+v; want %+v", d, want)
	}
	// A smaller per-call size: the count carries over.
	d, err = q.Allow(ctx, admit.Request{Key: "k", N: 0, Limit: admit.Limit{Rate: 5}, At: feb})
	if err != nil || !d.Allowed || d.Remaining != 0 || d.Limit.Rate != 5 {
		t.Errorf("a peek under a size of 5 with 7 used: %+v, %v", d, err)
	}
	d, _ = q.Allow(ctx, admit.Request{Key: "k", N: 13, Limit: admit.Limit{Rate: 20}, At: feb})
	if !d.Allowed || d.Remaining != 0 {
		t.Errorf("13 under a size of 20 with 7 used: %+v", d)
	}
	// Refunds give back what was counted, never below zero.
	if err := q.Refund(ctx, admit.Request{Key: "k", N: 15, At: feb}); err != nil {
		t.Fatal(err)
	}
	if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 0, At: feb}); d.Remaining != 5 {
		t.Errorf("after a refund of 15 of 20: Remaining %d, want 5", d.Remaining)
	}
	if err := q.Refund(ctx, admit.Request{Key: "k", N: 1000, At: feb}); err != nil {
		t.Fatal(err)
	}
	if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 0, At: feb}); d.Remaining != 10 || d.ResetAfter != 0 {
		t.Errorf("after refunding more than used: %+v; want Remaining 10, ResetAfter 0", d)
	}
	// The next month starts over; a refund there leaves February alone.
	q.Allow(ctx, admit.Request{Key: "k", N: 10, At: feb})
	d, _ = q.Allow(ctx, admit.Request{Key: "k", N: 1, At: end})
	mar := time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC).Sub(end)
	if !d.Allowed || d.Remaining != 9 || d.Limit.Period != mar || d.ResetAfter != mar {
		t.Errorf("1 March: %+v", d)
	}
	// Going back in time decides in the latest period, as package quota
	// does: February's count is not seen again.
	d, _ = q.Allow(ctx, admit.Request{Key: "k", N: 0, At: feb})
	if d.Remaining != 9 || d.ResetAfter != time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC).Sub(feb) {
		t.Errorf("back in February: %+v; want March's count, measured from the instant given", d)
	}
	// Keys are independent.
	if d, _ := q.Allow(ctx, admit.Request{Key: "other", N: 10, At: end}); !d.Allowed {
		t.Errorf("another key: %+v", d)
	}
}

// Days with a daylight-saving change last 23 and 25 hours, and the count
// starts over at midnight in the quota's location, to the nanosecond.
func TestQuotaDaylightSaving(t *testing.T) {
	loc := paris(t)
	s, _ := qStore(t, redistest.Standalone(t).Client(t), Config{})
	ctx := t.Context()
	for _, c := range []struct {
		day  time.Time
		hour time.Duration
	}{
		{time.Date(2025, 3, 30, 0, 0, 0, 0, loc), 23 * time.Hour},
		{time.Date(2025, 10, 26, 0, 0, 0, 0, loc), 25 * time.Hour},
		{time.Date(2025, 10, 27, 0, 0, 0, 0, loc), 24 * time.Hour},
	} {
		q := qQuota(t, s, QuotaConfig{Options: admit.Options{Name: c.day.Format("20060102")}, Limit: 2, Period: quota.Day, Location: loc})
		before := c.day.Add(-time.Nanosecond)
		if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 2, At: before}); !d.Allowed || d.ResetAfter != time.Nanosecond {
			t.Errorf("%v: the last ns of the day before: %+v", c.day, d)
		}
		if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 1, At: before}); d.Allowed || d.RetryAfter != time.Nanosecond {
			t.Errorf("%v: one more the last ns of the day before: %+v; want a retry in 1ns", c.day, d)
		}
		d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 2, At: c.day})
		if !d.Allowed || d.Remaining != 0 || d.Limit.Period != c.hour || d.ResetAfter != c.hour {
			t.Errorf("%v: at midnight: %+v; want a day of %v", c.day, d, c.hour)
		}
		noon := c.day.Add(12 * time.Hour)
		if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 1, At: noon}); d.Allowed || d.RetryAfter != c.hour-12*time.Hour {
			t.Errorf("%v: at noon: %+v", c.day, d)
		}
	}
}

// A Redis Quota decides as package quota's Quota, at random instants in
// several zones and periods, with per-call sizes, refunds, partial grants
// and time going back.
func TestQuotaMatchesMemory(t *testing.T) {
	s, _ := qStore(t, redistest.Standalone(t).Client(t), Config{})
	ctx := t.Context()
	zones := []string{"UTC", "Europe/Paris", "America/Sao_Paulo", "Australia/Lord_Howe", "Pacific/Apia"}
	periods := []quota.Period{quota.Hour, quota.Day, quota.Week, quota.Month, quota.Year}
	scale := map[quota.Period]time.Duration{quota.Hour: time.Hour, quota.Day: 24 * time.Hour, quota.Week: 7 * 24 * time.Hour, quota.Month: 30 * 24 * time.Hour, quota.Year: 365 * 24 * time.Hour}
	r := rand.New(rand.NewPCG(1, 2))
	var outcomes [2]int // admitted with something counted, denied until the period ends
	for i, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range periods {
			name := fmt.Sprintf("m%d%v", i, p)
			week := time.Weekday(r.IntN(7))
			mem, err := quota.New(quota.Config{Options: admit.Options{Name: name}, Limit: 5, Period: p, Location: loc, WeekStart: new(week)})
			if err != nil {
				t.Fatal(err)
			}
			red := qQuota(t, s, QuotaConfig{Options: admit.Options{Name: name}, Limit: 5, Period: p, Location: loc, WeekStart: new(week)})
			now := time.Date(2011, 3, 20, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(scale[p]))))
			for step := range 150 {
				switch x := r.IntN(10); {
				case x < 6:
					now = now.Add(time.Duration(r.Int64N(int64(scale[p] / 4))))
				case x < 7:
					now = now.Add(-time.Duration(r.Int64N(int64(scale[p]))))
				case x < 8:
					now = now.Add(time.Duration(r.IntN(3)) * time.Second)
				}
				key := fmt.Sprint("k", r.IntN(3))
				n := int64(r.IntN(7))
				var dm, dr admit.Decision
				var em, er error
				var gm, gr int64
				switch x := r.IntN(10); {
				case x < 2:
					em = mem.Refund(ctx, admit.Request{Key: key, N: n, At: now})
					er = red.Refund(ctx, admit.Request{Key: key, N: n, At: now})
				case x < 4:
					limit := int64(1 + r.IntN(8))
					dm, em = mem.Allow(ctx, admit.Request{Key: key, N: n, Limit: admit.Limit{Rate: limit}, At: now})
					dr, er = red.Allow(ctx, admit.Request{Key: key, N: n, Limit: admit.Limit{Rate: limit}, At: now})
				case step%3 == 2: // a partial grant, in place of every third Allow
					gm, dm, em = mem.AllowAtMost(ctx, admit.Request{Key: key, N: n, At: now})
					gr, dr, er = red.AllowAtMost(ctx, admit.Request{Key: key, N: n, At: now})
				default:
					dm, em = mem.Allow(ctx, admit.Request{Key: key, N: n, At: now})
					dr, er = red.Allow(ctx, admit.Request{Key: key, N: n, At: now})
				}
				switch {
				case dm.Allowed && dm.Remaining < 5:
					outcomes[0]++
				case !dm.Allowed && dm.RetryAfter != admit.InfDuration:
					outcomes[1]++
				}
				if em != nil || er != nil || dm != dr || gm != gr {
					t.Fatalf("%s %v, step %d at %v, key %s, n %d:\nmemory %d, %+v, %v\nredis  %d, %+v, %v", zone, p, step, now.In(loc), key, n, gm, dm, em, gr, dr, er)
				}
			}
		}
	}
	if outcomes[0] < 500 || outcomes[1] < 200 {
		t.Errorf("outcomes %v: the random steps test too little", outcomes)
	}
}

// Counts live in Redis: a new Store (a restarted service) sees them.
func TestQuotaDurable(t *testing.T) {
	srv := redistest.NewStandalone(t)
	prefix := redistest.Prefix(t)
	ctx := t.Context()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for i, want := range []int64{7, 4, 1} {
		client := redis.NewClient(srv.Options())
		s, err := New(client, Config{Prefix: prefix, MinTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		q, err := s.Quota(QuotaConfig{Options: admit.Options{Name: "exports"}, Limit: 10, Period: quota.Day})
		if err != nil {
			t.Fatal(err)
		}
		d, err := q.Allow(ctx, admit.Request{Key: "acme", N: 3, At: now})
		if err != nil || !d.Allowed || d.Remaining != want {
			t.Errorf("store %d: %+v, %v; want Remaining %d", i, d, err, want)
		}
		d, err = q.Allow(ctx, admit.Request{Key: "acme", N: 2})
		if err != nil || !d.Allowed || d.Remaining != 10-2*int64(i+1) {
			t.Errorf("store %d on Redis's clock: %+v, %v", i, d, err)
		}
		s.Close()
		client.Close()
	}
}

// A count expires at its period's end plus quotaGrace, on Redis's clock,
// or Config.MinTTL after its last write if that is later.
func TestQuotaExpiry(t *testing.T) {
	client := redistest.Standalone(t).Client(t)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	s, err := New(client, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := qQuota(t, s, QuotaConfig{Options: admit.Options{Name: "api"}, Limit: 10, Period: quota.Hour})
	d, err := q.Allow(ctx, admit.Request{Key: "a}{b", N: 1})
	if err != nil || !d.Allowed || d.ResetAfter <= 0 || d.ResetAfter > time.Hour || d.Limit.Period != time.Hour {
		t.Fatalf("%+v, %v", d, err)
	}
	keys, _ := client.Keys(ctx, prefix+"*").Result()
	if len(keys) != 1 {
		t.Fatalf("keys %q", keys)
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `\{[0-9a-f]{16}\}:quota:api:hour@([0-9]+):a\}\{b$`)
	m := re.FindStringSubmatch(keys[0])
	if m == nil {
		t.Fatalf("key %q: want %s{<16 hex>}:quota:api:hour@<start>:a}{b", keys[0], prefix)
	}
	pttl, _ := client.PTTL(ctx, keys[0]).Result()
	if want := d.ResetAfter + quotaGrace; pttl < want-time.Second || pttl > want+time.Millisecond {
		t.Errorf("PTTL %v, want about %v (ResetAfter and the grace)", pttl, want)
	}
	// The key names its period's start, which holds Redis's instant.
	var start int64
	fmt.Sscan(m[1], &start)
	tm, _ := client.Time(ctx).Result()
	if st, end := q.PeriodAt(tm); st.Unix() != start || !tm.Before(end) {
		t.Errorf("the key's period starts at %d; Redis's instant %v is in [%v, %v)", start, tm, st, end)
	}
	if err := q.Reset(ctx, "a}{b"); err != nil {
		t.Fatal(err)
	}
	if n, _ := client.Exists(ctx, keys[0]).Result(); n != 0 {
		t.Error("Reset left the key")
	}

	// At an instant whose period has ended on Redis's clock, the count
	// expires at once, unless Config.MinTTL keeps it.
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if d, _ := q.Allow(ctx, admit.Request{Key: "old", N: 1, At: past}); !d.Allowed {
		t.Fatalf("%+v", d)
	}
	if keys, _ := client.Keys(ctx, prefix+"*old").Result(); len(keys) != 0 {
		t.Errorf("a count of 2020 without a minimum TTL: %q", keys)
	}
	s2, prefix2 := qStore(t, client, Config{})
	q2 := qQuota(t, s2, QuotaConfig{Limit: 10, Period: quota.Hour})
	q2.Allow(ctx, admit.Request{Key: "old", N: 1, At: past})
	keys, _ = client.Keys(ctx, prefix2+"*old").Result()
	if len(keys) != 1 {
		t.Fatalf("keys %q", keys)
	}
	if pttl, _ := client.PTTL(ctx, keys[0]).Result(); pttl < 24*time.Hour-time.Second || pttl > 24*time.Hour {
		t.Errorf("PTTL %v with a minimum TTL of a day", pttl)
	}
}

// When the local clock guesses another period than Redis's clock holds,
// Redis's clock decides.
func TestQuotaRedisClockDecides(t *testing.T) {
	client := redistest.Standalone(t).Client(t)
	ctx := t.Context()
	obs := &quotaObserver{}
	s, prefix := qStore(t, client, Config{Options: admit.Options{Observer: obs}})
	for _, off := range []time.Duration{-3 * time.Hour, 2 * time.Hour, 0} {
		q := qQuota(t, s, QuotaConfig{Options: admit.Options{Name: fmt.Sprint("off", int64(off/time.Hour))}, Limit: 3, Period: quota.Hour})
		q.guess = func() time.Time { return time.Now().Add(off) }
		obs.calls.Store(0)
		d, err := q.Allow(ctx, admit.Request{Key: "k", N: 2})
		if err != nil || !d.Allowed || d.Remaining != 1 || d.ResetAfter > time.Hour || d.ResetAfter <= 0 {
			t.Fatalf("clock off by %v: %+v, %v", off, d, err)
		}
		wantCalls := int64(2)
		if off == 0 {
			wantCalls = 1 // unless the hour ended meanwhile
		}
		if n := obs.calls.Load(); n != wantCalls && !(off == 0 && n == 2) {
			t.Errorf("clock off by %v: %d calls to Redis, want %d", off, n, wantCalls)
		}
		tm, _ := client.Time(ctx).Result()
		st, _ := q.PeriodAt(tm)
		keys, _ := client.Keys(ctx, prefix+"*:"+q.head[1:]+"*").Result()
		if len(keys) != 1 || !strings.Contains(keys[0], fmt.Sprintf("@%d:", st.Unix())) {
			t.Errorf("clock off by %v: keys %q, want the hour of Redis's instant, starting at %d", off, keys, st.Unix())
		}
		if err := q.Refund(ctx, admit.Request{Key: "k", N: 1}); err != nil {
			t.Fatal(err)
		}
		if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 0}); d.Remaining != 2 {
			t.Errorf("clock off by %v: after a refund of 1: %+v", off, d)
		}
	}
}

type quotaObserver struct {
	admit.NopObserver
	calls atomic.Int64
}

func (o *quotaObserver) StoreCalled(e admit.StoreEvent) {
	if e.Op == "quota" {
		o.calls.Add(1)
	}
}

func TestQuotaBadInput(t *testing.T) {
	client := redistest.Standalone(t).Client(t)
	s, _ := qStore(t, client, Config{MaxKeyLength: 8})
	ctx := t.Context()
	for _, n := range []int64{0, -1, 1<<53 + 1} {
		if _, err := s.Quota(QuotaConfig{Limit: n, Period: quota.Day}); !strings.Contains(err.Error(), "invalid quota size") || !errors.Is(err, admit.ErrInvalidConfig) {
			t.Errorf("Quota(%d): %v, want admit.ErrInvalidConfig, an invalid quota size", n, err)
		}
	}
	for _, p := range []quota.Period{0, quota.Year + 1} {
		if _, err := s.Quota(QuotaConfig{Limit: 1, Period: p}); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "Period "+p.String()+": invalid period") {
			t.Errorf("Quota of period %v: %v, want admit.ErrInvalidConfig, an invalid period", p, err)
		}
	}
	weekday := func(d time.Weekday) *time.Weekday { return &d }
	for _, cfg := range []QuotaConfig{
		{Limit: 1, Period: quota.Week, WeekStart: weekday(-1)},
		{Limit: 1, Period: quota.Week, WeekStart: weekday(7)},
		{Options: admit.Options{Name: "a:b"}, Limit: 1, Period: quota.Day},
	} {
		if _, err := s.Quota(cfg); !errors.Is(err, admit.ErrInvalidConfig) {
			t.Errorf("a bad config %+v: %v, want admit.ErrInvalidConfig", cfg, err)
		}
	}
	q := qQuota(t, s, QuotaConfig{Limit: 5, Period: quota.Day})
	if d, err := q.Allow(ctx, admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) || d.Allowed || d.RetryAfter != admit.InfDuration || d.Kind != admit.KindQuota {
		t.Errorf("n = -1: %+v, %v", d, err)
	}
	if d, err := q.Allow(ctx, admit.Request{Key: "k", N: 1, Limit: admit.Limit{Rate: 0, Period: time.Hour}}); !errors.Is(err, admit.ErrInvalidLimit) || !strings.Contains(err.Error(), "invalid quota size 0") || d.Allowed {
		t.Errorf("a size of 0: %+v, %v", d, err)
	}
	if _, err := q.Allow(ctx, admit.Request{Key: "too-long-key", N: 1, At: time.Now()}); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("a long key: %v", err)
	}
	if err := q.Refund(ctx, admit.Request{Key: "k", N: -1}); !errors.Is(err, admit.ErrInvalidCost) {
		t.Errorf("a refund of -1: %v", err)
	}
	if err := q.Reset(ctx, "too-long-key"); !errors.Is(err, admit.ErrKeyTooLong) {
		t.Errorf("Reset of a long key: %v", err)
	}
	// Any bytes in a key, braces included.
	for _, key := range []string{"", "{", "}", "{a}", "a}{b", "\x00\xff"} {
		if d, err := q.Allow(ctx, admit.Request{Key: key, N: 5}); err != nil || !d.Allowed {
			t.Errorf("key %q: %+v, %v", key, d, err)
		}
	}
	s.Close()
	if _, err := q.Allow(ctx, admit.Request{Key: "k", N: 1}); !errors.Is(err, admit.ErrClosed) {
		t.Errorf("after Close: %v, want admit.ErrClosed", err)
	}
}

// A key holding something else than a count is an error, and the value is
// left alone.
func TestQuotaWrongTypeKey(t *testing.T) {
	client := redistest.Standalone(t).Client(t)
	s, _ := qStore(t, client, Config{})
	q := qQuota(t, s, QuotaConfig{Limit: 5, Period: quota.Day})
	ctx := t.Context()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	start, _ := q.PeriodAt(now)
	key := q.redisKey(start.UnixNano(), "k")
	client.HSet(ctx, key, "f", "v")
	if _, err := q.Allow(ctx, admit.Request{Key: "k", N: 1, At: now}); !errors.Is(err, ErrStore) {
		t.Errorf("a hash at the key: %v, want ErrStore", err)
	}
	if v, _ := client.HGet(ctx, key, "f").Result(); v != "v" {
		t.Errorf("the hash was changed: %q", v)
	}
	for _, garbage := range []string{"garbage", "-3", "1.5"} {
		client.Del(ctx, key)
		client.Set(ctx, key, garbage, time.Hour)
		if _, err := q.Allow(ctx, admit.Request{Key: "k", N: 1, At: now}); !errors.Is(err, ErrStore) {
			t.Errorf("%q at the key: %v, want ErrStore", garbage, err)
		}
		if err := q.Refund(ctx, admit.Request{Key: "k", N: 1, At: now}); !errors.Is(err, ErrStore) {
			t.Errorf("a refund of %q: %v, want ErrStore", garbage, err)
		}
	}
	client.Del(ctx, key)
}

// Weeks start on the day WithWeekStart says.
func TestQuotaWeekStart(t *testing.T) {
	s, _ := qStore(t, redistest.Standalone(t).Client(t), Config{})
	ctx := t.Context()
	sat := time.Date(2025, 6, 7, 12, 0, 0, 0, time.UTC) // a Saturday
	for _, c := range []struct {
		start time.Weekday
		reset time.Duration
	}{{time.Monday, 36 * time.Hour}, {time.Sunday, 12 * time.Hour}, {time.Saturday, 6*24*time.Hour + 12*time.Hour}} {
		q := qQuota(t, s, QuotaConfig{Options: admit.Options{Name: c.start.String()}, Limit: 1, Period: quota.Week, WeekStart: new(c.start)})
		if d, _ := q.Allow(ctx, admit.Request{Key: "k", N: 1, At: sat}); !d.Allowed || d.ResetAfter != c.reset || d.Limit.Period != 7*24*time.Hour {
			t.Errorf("weeks from %v: %+v; want a reset in %v", c.start, d, c.reset)
		}
	}
}
