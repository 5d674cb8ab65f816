package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The defaults NewRedisClient gives the connection settings a Redis URL
// leaves out. go-redis's own (5 s dial timeout, 5 dial attempts, 3
// retries with backoff) make every check wait seconds on a Redis that is
// down, before the rule's failure policy can decide; a rate limiter must
// fail fast instead.
const (
	// DefaultRedisDialTimeout bounds one connection attempt
	// (dial_timeout).
	DefaultRedisDialTimeout = time.Second
	// DefaultRedisDialerRetries is the number of attempts to connect
	// (dialer_retries).
	DefaultRedisDialerRetries = 1
	// DefaultRedisMaxRetries is go-redis's max_retries: -1, no retry of a
	// failed command (the failure policy decides instead).
	DefaultRedisMaxRetries = -1
)

// RedisKind is the kind of Redis deployment a URL names.
type RedisKind uint8

const (
	// RedisStandalone is one Redis server (redis://, rediss://, unix://).
	RedisStandalone RedisKind = iota + 1
	// RedisSentinel is a master found through Redis Sentinel
	// (redis+sentinel://, rediss+sentinel://).
	RedisSentinel
	// RedisCluster is a Redis Cluster (redis+cluster://,
	// rediss+cluster://).
	RedisCluster
)

// String returns "standalone", "sentinel" or "cluster".
func (k RedisKind) String() string {
	switch k {
	case RedisStandalone:
		return "standalone"
	case RedisSentinel:
		return "sentinel"
	case RedisCluster:
		return "cluster"
	}
	return fmt.Sprintf("RedisKind(%d)", uint8(k))
}

// NewRedisClient returns a go-redis client for the Redis deployment that
// rawURL names. The forms are:
//
//	redis://[user:password@]host[:port][/db][?option=value&...]
//	rediss://...                  the same over TLS
//	unix://[user:password@]/path/to/redis.sock[?db=N&...]
//	redis+sentinel://[user:password@]sentinel[:port][/db]?master_name=NAME[&addr=sentinel2:port...]
//	rediss+sentinel://...         the same over TLS
//	redis+cluster://[user:password@]node[:port][?addr=node2:port&addr=node3:port...]
//	rediss+cluster://...          the same over TLS
//
// The port defaults to 6379 (give Sentinel's, usually 26379). The options
// are go-redis's URL options (dial_timeout, read_timeout, pool_size,
// max_retries, ... see redis.ParseURL, redis.ParseFailoverURL and
// redis.ParseClusterURL); an unknown option is an error. In the Sentinel
// form the URL's user and password are the Sentinels' and the query's
// password is the master's; master_name is required. The options a URL
// does not set default to DefaultRedisDialTimeout, DefaultRedisDialerRetries
// and DefaultRedisMaxRetries, so that checks fail fast while Redis is down.
//
// NewRedisClient does not connect: the first command does. The error
// wraps ErrInvalidRedisURL; it never quotes the URL's password.
func NewRedisClient(rawURL string, opts ...RedisOption) (redis.UniversalClient, RedisKind, error) {
	var ro redisOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyRedis(&ro)
		}
	}
	return newRedisClient(rawURL, &ro)
}

// RedisOption configures NewRedisClient beyond its URL.
type RedisOption interface {
	applyRedis(*redisOptions)
}

type redisOptions struct {
	ca, cert, key string
	log           *slog.Logger
}

type redisOptionFunc func(*redisOptions)

func (f redisOptionFunc) applyRedis(o *redisOptions) { f(o) }

// WithRedisTLS sets the files of a TLS connection to Redis (a URL of
// rediss://, rediss+sentinel:// or rediss+cluster://): the server's
// certificate is verified against the certificate authorities of the PEM
// file caFile instead of the system's, and the client presents the
// certificate and key of the PEM files certFile and keyFile, for a Redis
// that requires one (tls-auth-clients). Either part may be left empty.
// Each file may hold at most 1 MiB (a larger one, or one that never ends,
// is read no further and is an error). The client certificate is re-read
// when its files change, at the next connection; the CAs are read once.
// log, or slog.Default if nil, records a change that does not load. With a
// URL that is not TLS, NewRedisClient fails.
func WithRedisTLS(caFile, certFile, keyFile string, log *slog.Logger) RedisOption {
	return redisOptionFunc(func(o *redisOptions) { o.ca, o.cert, o.key, o.log = caFile, certFile, keyFile, log })
}

// tlsConfig completes go-redis's TLS config with the files of o.
func (o *redisOptions) tlsConfig(c *tls.Config, scheme string) error {
	if o.ca == "" && o.cert == "" && o.key == "" {
		return nil
	}
	if c == nil {
		return fmt.Errorf("%w: TLS files for a URL of %s://, which is not TLS: use rediss://", ErrInvalidRedisURL, scheme)
	}
	if o.ca != "" {
		pool, err := loadCAs(o.ca)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidRedisURL, err)
		}
		c.RootCAs = pool
	}
	if (o.cert == "") != (o.key == "") {
		return fmt.Errorf("%w: TLS client certificate %q and key %q: %v", ErrInvalidRedisURL, o.cert, o.key, errTLSIncomplete)
	}
	if o.cert != "" {
		log := o.log
		if log == nil {
			log = slog.Default()
		}
		f, err := newTLSFiles(o.cert, o.key, "", log)
		if err != nil {
			return fmt.Errorf("%w: TLS client %v", ErrInvalidRedisURL, err)
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			pair, _ := f.current()
			return pair, nil
		}
	}
	return nil
}

func newRedisClient(rawURL string, ro *redisOptions) (redis.UniversalClient, RedisKind, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s", ErrInvalidRedisURL, redactURLError(err))
	}
	q := u.Query()
	base, kind, err := redisScheme(u.Scheme)
	if err != nil {
		return nil, 0, err
	}
	if u.Opaque != "" {
		return nil, 0, fmt.Errorf("%w: want %s://host[:port]", ErrInvalidRedisURL, u.Scheme)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, 0, fmt.Errorf("%w: port %q: want 1 to 65535", ErrInvalidRedisURL, truncateString(p, 16))
		}
	}
	plain := *u
	plain.Scheme = base
	s := plain.String()
	switch kind {
	case RedisSentinel:
		o, err := redis.ParseFailoverURL(s)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s", ErrInvalidRedisURL, redact(err, u))
		}
		if o.MasterName == "" {
			return nil, 0, fmt.Errorf("%w: %s:// needs master_name=NAME", ErrInvalidRedisURL, u.Scheme)
		}
		o.DialTimeout = orDefault(q, "dial_timeout", o.DialTimeout, DefaultRedisDialTimeout)
		o.DialerRetries = orDefault(q, "dialer_retries", o.DialerRetries, DefaultRedisDialerRetries)
		o.MaxRetries = orDefault(q, "max_retries", o.MaxRetries, DefaultRedisMaxRetries)
		if err := ro.tlsConfig(o.TLSConfig, u.Scheme); err != nil {
			return nil, 0, err
		}
		return redis.NewFailoverClient(o), kind, nil
	case RedisCluster:
		o, err := redis.ParseClusterURL(s)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s", ErrInvalidRedisURL, redact(err, u))
		}
		o.DialTimeout = orDefault(q, "dial_timeout", o.DialTimeout, DefaultRedisDialTimeout)
		o.DialerRetries = orDefault(q, "dialer_retries", o.DialerRetries, DefaultRedisDialerRetries)
		o.MaxRetries = orDefault(q, "max_retries", o.MaxRetries, DefaultRedisMaxRetries)
		if err := ro.tlsConfig(o.TLSConfig, u.Scheme); err != nil {
			return nil, 0, err
		}
		return redis.NewClusterClient(o), kind, nil
	}
	o, err := redis.ParseURL(s)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s", ErrInvalidRedisURL, redact(err, u))
	}
	o.DialTimeout = orDefault(q, "dial_timeout", o.DialTimeout, DefaultRedisDialTimeout)
	o.DialerRetries = orDefault(q, "dialer_retries", o.DialerRetries, DefaultRedisDialerRetries)
	o.MaxRetries = orDefault(q, "max_retries", o.MaxRetries, DefaultRedisMaxRetries)
	if err := ro.tlsConfig(o.TLSConfig, u.Scheme); err != nil {
		return nil, 0, err
	}
	return redis.NewClient(o), kind, nil
}

// redisScheme maps a URL scheme to the scheme go-redis parses and the
// deployment's kind.
func redisScheme(scheme string) (base string, kind RedisKind, err error) {
	switch strings.ToLower(scheme) {
	case "redis":
		return "redis", RedisStandalone, nil
	case "rediss":
		return "rediss", RedisStandalone, nil
	case "unix":
		return "unix", RedisStandalone, nil
	case "redis+sentinel":
		return "redis", RedisSentinel, nil
	case "rediss+sentinel":
		return "rediss", RedisSentinel, nil
	case "redis+cluster":
		return "redis", RedisCluster, nil
	case "rediss+cluster":
		return "rediss", RedisCluster, nil
	case "":
		return "", 0, fmt.Errorf("%w: no scheme: want redis://host:port (or rediss://, unix://, redis+sentinel://, redis+cluster://)", ErrInvalidRedisURL)
	}
	return "", 0, fmt.Errorf("%w: unknown scheme %q: want redis, rediss, unix, redis+sentinel, rediss+sentinel, redis+cluster or rediss+cluster",
		ErrInvalidRedisURL, truncateString(scheme, 32))
}

// orDefault returns def when the query does not set name, else v (what
// go-redis parsed from it).
func orDefault[T any](q url.Values, name string, v, def T) T {
	if _, ok := q[name]; ok {
		return v
	}
	return def
}

// redact returns err's text with u's password (if any) replaced.
func redact(err error, u *url.URL) string {
	msg := err.Error()
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	if pw := u.Query().Get("password"); pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}

// redactURLError returns the text of url.Parse's error without the URL it
// quotes (which may hold a password).
func redactURLError(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return "malformed URL"
}

// truncateString cuts s to at most n bytes, marking the cut.
func truncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
