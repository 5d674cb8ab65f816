package redisstore_test

import (
	"strings"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

// FuzzKeyLayout: whatever bytes a key holds, its Redis key sits in the slot
// of its hash tag alone, keeps the key at its end, and two different
// (name, key) pairs never share a Redis key.
func FuzzKeyLayout(f *testing.F) {
	f.Add("api", "client-1", "web", "client-1")
	f.Add("", "{a}", "", "}{")
	f.Add("a", "b:c", "a:b", "c")
	f.Add("x", "\x00{}\xff", "x", "{}")
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	s, err := redisstore.New(client, redisstore.Config{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, name1, key1, name2, key2 string) {
		lim1, err1 := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: name1}, Limit: admit.PerSecond(1)})
		lim2, err2 := s.Limiter(redisstore.LimiterConfig{Options: admit.Options{Name: name2}, Limit: admit.PerSecond(1)})
		if err1 != nil || err2 != nil {
			if strings.ContainsAny(name1+name2, ":{}") || len(name1) > 128 || len(name2) > 128 {
				return // refused names
			}
			t.Fatalf("names %q, %q: %v, %v", name1, name2, err1, err2)
		}
		r1, r2 := redisstore.RedisKey(lim1, key1), redisstore.RedisKey(lim2, key2)
		for _, c := range []struct{ rkey, key string }{{r1, key1}, {r2, key2}} {
			tag := "{" + redisstore.TagOf(c.key) + "}"
			if redistest.Slot(c.rkey) != redistest.Slot(tag) {
				t.Errorf("key %q: Redis key %q is in slot %d, its tag's is %d", c.key, c.rkey, redistest.Slot(c.rkey), redistest.Slot(tag))
			}
			if !strings.HasPrefix(c.rkey, "admit:v1:"+tag) || !strings.HasSuffix(c.rkey, c.key) {
				t.Errorf("key %q: Redis key %q", c.key, c.rkey)
			}
		}
		if (r1 == r2) != (name1 == name2 && key1 == key2) {
			t.Errorf("(%q, %q) and (%q, %q): Redis keys %q and %q", name1, key1, name2, key2, r1, r2)
		}
	})
}
