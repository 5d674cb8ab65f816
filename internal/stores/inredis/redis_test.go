package inredis

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

// TestRedisNames: the characters Redis names do not take are escaped,
// injectively (so is '%').
func TestRedisNames(t *testing.T) {
	for in, want := range map[string]string{
		"d.k":          "d.k",
		"envoy:d.k":    "envoy%3Ad.k",
		"{a}%b":        "%7Ba%7D%25b",
		"api/per-user": "api/per-user",
	} {
		if got := name(in); got != want {
			t.Errorf("name(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLeaseRecords: a Store's lease records are reached through its
// concurrency limits' Slots (without a word to Redis: the client here
// never dials); a nil Store has none. They are exercised on Redis by
// redisstore's TestLeaseRecords and server's lease tests.
func TestLeaseRecords(t *testing.T) {
	if r := LeaseRecords(nil); r != nil {
		t.Errorf("LeaseRecords(nil) = %v", r)
	}
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	s, err := redisstore.New(client, redisstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := LeaseRecords(s)
	if r == nil {
		t.Fatal("no records")
	}
	// Bad arguments are refused before Redis is asked.
	if err := r.Save(t.Context(), "", time.Minute); !errors.Is(err, admit.ErrInvalidConfig) || !strings.Contains(err.Error(), "lease record name of 0 bytes") {
		t.Errorf("Save with an empty name: %v", err)
	}
}
