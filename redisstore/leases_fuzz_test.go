package redisstore

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// FuzzParseRecord: a lease record read from Redis, whatever its bytes,
// parses into Leases of this Store's concurrency keys or is an error, never
// a panic; what parses encodes back (saveLeases' encoding) into a record
// that parses into the same Leases.
func FuzzParseRecord(f *testing.F) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	s, err := New(client, Config{Prefix: "p:"})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	l, err := s.Concurrency(ConcurrencyConfig{Max: 3})
	if err != nil {
		f.Fatal(err)
	}
	zk, hk := l.keys("user\x00{x}")
	good := encodeRecord([]Lease{{l: l, zkey: zk, hkey: hk, id: "abc.1"}, {l: l, zkey: zk, hkey: hk, id: "abc.2"}})
	f.Add(good)
	f.Add("")
	f.Add("\x01")
	f.Add("\x01\x01\x05ab")
	f.Add("\x02" + good[1:])
	f.Add(good + "x")
	f.Add(strings.Replace(good, ":conc:", ":cone:", 1))
	f.Fuzz(func(t *testing.T, v string) {
		leases, err := s.parseRecord(v)
		if err != nil {
			return
		}
		if len(leases) == 0 || len(leases) > maxRecordLeases {
			t.Fatalf("%d leases", len(leases))
		}
		for _, p := range leases {
			if !s.concurrencyKeys(p.zkey, p.hkey) || p.id == "" || p.l == nil || p.l.s != s {
				t.Fatalf("a lease outside the store: %+v", p)
			}
			if _, err := leaseMillis(p.l.lease); err != nil {
				t.Fatalf("lease of %v: %v", p.l.lease, err)
			}
		}
		again, err := s.parseRecord(encodeRecord(leases))
		if err != nil || len(again) != len(leases) {
			t.Fatalf("re-encoded: %d leases, %v", len(again), err)
		}
		for i := range leases {
			a, b := leases[i], again[i]
			if a.zkey != b.zkey || a.hkey != b.hkey || a.id != b.id || a.l.leaseMS != b.l.leaseMS {
				t.Fatalf("lease %d: %+v, re-encoded %+v", i, a, b)
			}
		}
	})
}
