package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit/internal/leases"
	"github.com/redis/go-redis/v9"
)

// Lease records: a group of Leases stored in Redis under a name, so that
// any process on the same Redis can renew or release them. admit serve's
// lease table keeps there the leases whose every slot is kept in Redis, so
// that a client may release or extend its lease through any instance, and
// a lease outlives the restart of the instance that granted it. They are
// no part of the package's surface: the table reaches them through the
// method LeaseRecords of a ConcurrencyLimiter's Slots, whose signature
// names a type internal to the module (see internal/leases).

// LeaseRecords returns the lease records of the Store of s's limiter.
func (s slots) LeaseRecords() leases.Records[Lease] { return records{s.l.s} }

// records are a Store's lease records (see leases.Records).
type records struct{ s *Store }

func (r records) Save(ctx context.Context, name string, ttl time.Duration, ls ...Lease) error {
	return r.s.saveLeases(ctx, name, ttl, ls...)
}

func (r records) Load(ctx context.Context, name string) ([]Lease, bool, error) {
	return r.s.loadLeases(ctx, name, false)
}

func (r records) Take(ctx context.Context, name string) ([]Lease, bool, error) {
	return r.s.loadLeases(ctx, name, true)
}

func (r records) Renew(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	return r.s.renewLeases(ctx, name, ttl)
}

// takeScript returns a lease record and deletes it (nil if there is none).
var takeScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  redis.call('DEL', KEYS[1])
end
return v
`)

// maxLeaseName bounds the name of a lease record, which is part of its
// key; maxRecordLeases bounds the Leases of one record.
const (
	maxLeaseName    = 256
	maxRecordLeases = 1024
	recordVersion   = 1
)

// recordKey returns the Redis key of the lease record name.
func (s *Store) recordKey(name string) (string, error) {
	if name == "" || len(name) > maxLeaseName {
		return "", fmt.Errorf("%w: lease record name of %d bytes, want 1 to %d", errInvalidArgument, len(name), maxLeaseName)
	}
	return s.prefix + "leases:" + name, nil
}

// saveLeases stores ls in Redis under name for ttl (rounded up to a
// millisecond, 1 ms to a year), for loadLeases. It does not change the
// Leases themselves: renew them for ttl too (Lease.ExtendFor) so that both
// end together. A name that is already taken is an error wrapping
// errInvalidArgument, as are an empty name, one over 256 bytes, a zero
// Lease, a Lease of another Store, more than 1024 Leases or none; nothing
// is written then. A failure of Redis wraps ErrStore.
func (s *Store) saveLeases(ctx context.Context, name string, ttl time.Duration, ls ...Lease) error {
	key, err := s.recordKey(name)
	if err != nil {
		return err
	}
	if _, err := leaseMillis(ttl); err != nil {
		return err
	}
	if len(ls) == 0 || len(ls) > maxRecordLeases {
		return fmt.Errorf("%w: %d leases in a record, want 1 to %d", errInvalidArgument, len(ls), maxRecordLeases)
	}
	for i, p := range ls {
		if p.l == nil || p.l.s != s {
			return fmt.Errorf("%w: lease %d is the zero Lease or another Store's", errInvalidArgument, i)
		}
	}
	b := encodeRecord(ls)
	ok, err := s.record(ctx, "save", func(ctx context.Context) (bool, error) {
		return s.client.SetNX(ctx, key, b, ttl).Result()
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: lease record %q exists", errInvalidArgument, name)
	}
	return nil
}

// renewLeases sets the record name to expire ttl from now, and reports
// false if there is no such record. It does not renew the Leases
// themselves (see saveLeases).
func (s *Store) renewLeases(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	key, err := s.recordKey(name)
	if err != nil {
		return false, err
	}
	if _, err := leaseMillis(ttl); err != nil {
		return false, err
	}
	return s.record(ctx, "renew", func(ctx context.Context) (bool, error) {
		return s.client.PExpire(ctx, key, ttl).Result()
	})
}

// loadLeases returns the Leases saved under name, and false if there is no
// such record (never saved, taken, or expired); with take, it removes the
// record too (of several processes taking one record, one gets it; the
// caller releases the Leases). A record that does not parse as one of this
// Store's is an error wrapping ErrStore.
func (s *Store) loadLeases(ctx context.Context, name string, take bool) ([]Lease, bool, error) {
	key, err := s.recordKey(name)
	if err != nil {
		return nil, false, err
	}
	var v string
	op := "load"
	if take {
		op = "take"
	}
	found, err := s.record(ctx, op, func(ctx context.Context) (bool, error) {
		var err error
		if take {
			// GET and DEL in one script rather than GETDEL, which only
			// Redis 6.2 and later know.
			var r any
			r, err = takeScript.Run(ctx, s.client, []string{key}).Result()
			if err == nil {
				var ok bool
				if v, ok = r.(string); !ok {
					err = fmt.Errorf("lease record: unexpected reply %T", r)
				}
			}
		} else {
			v, err = s.client.Get(ctx, key).Result()
		}
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil || !found {
		return nil, false, err
	}
	ls, err := s.parseRecord(v)
	if err != nil {
		return nil, false, storeError(fmt.Errorf("lease record %q: %w", name, err))
	}
	return ls, true, nil
}

// record runs one command on a lease record (see call).
func (s *Store) record(ctx context.Context, op string, f func(context.Context) (bool, error)) (bool, error) {
	var ok bool
	err := s.call(ctx, "leases-"+op, 1, func(ctx context.Context) error {
		var err error
		ok, err = f(ctx)
		return err
	})
	return ok, err
}

// encodeRecord encodes ls as a lease record: a version byte, the
// count, then the keys, id and lease (ms) of each Lease, each as a
// uvarint length and its bytes.
func encodeRecord(ls []Lease) string {
	b := []byte{recordVersion}
	b = binary.AppendUvarint(b, uint64(len(ls)))
	for _, p := range ls {
		b = appendField(b, p.zkey)
		b = appendField(b, p.hkey)
		b = appendField(b, p.id)
		b = appendField(b, p.l.leaseMS)
	}
	return string(b)
}

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// parseRecord decodes a lease record, checking that each Lease names keys
// of this Store's concurrency limits.
func (s *Store) parseRecord(v string) ([]Lease, error) {
	if len(v) == 0 || v[0] != recordVersion {
		return nil, errors.New("not a lease record of this version")
	}
	rest := v[1:]
	count, n := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
	if n <= 0 || count == 0 || count > maxRecordLeases {
		return nil, errors.New("bad lease count")
	}
	rest = rest[n:]
	field := func() (string, error) {
		l, n := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
		if n <= 0 || l > uint64(len(rest)-n) {
			return "", errors.New("truncated")
		}
		f := rest[n : n+int(l)]
		rest = rest[n+int(l):]
		return f, nil
	}
	out := make([]Lease, 0, count)
	for range count {
		var fs [4]string
		for i := range fs {
			f, err := field()
			if err != nil {
				return nil, err
			}
			fs[i] = f
		}
		zkey, hkey, id, ms := fs[0], fs[1], fs[2], fs[3]
		if !s.concurrencyKeys(zkey, hkey) || id == "" {
			return nil, errors.New("a lease of another store")
		}
		m, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || m < 1 || m > int64(365*24*time.Hour/time.Millisecond) {
			return nil, errors.New("bad lease duration")
		}
		l := &ConcurrencyLimiter{s: s, lease: time.Duration(m) * time.Millisecond, leaseMS: ms}
		out = append(out, Lease{l: l, zkey: zkey, hkey: hkey, id: id})
	}
	if rest != "" {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

// concurrencyKeys reports whether zkey and hkey are the keys of one key of
// a concurrency limit of s: the prefix, one hash tag, ":conc:" and
// ":concw:".
func (s *Store) concurrencyKeys(zkey, hkey string) bool {
	z, ok1 := strings.CutPrefix(zkey, s.prefix+"{")
	h, ok2 := strings.CutPrefix(hkey, s.prefix+"{")
	if !ok1 || !ok2 {
		return false
	}
	zt, zr, ok1 := strings.Cut(z, "}")
	ht, hr, ok2 := strings.Cut(h, "}")
	return ok1 && ok2 && zt == ht && strings.HasPrefix(zr, ":conc:") && strings.HasPrefix(hr, ":concw:")
}
