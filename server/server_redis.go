package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/redisstore"
	"github.com/redis/go-redis/v9"
)

// The settings a Redis URL leaves out default to these. go-redis's own
// (5 s dial timeout, 5 dial attempts, 3 retries with backoff) make every
// check wait seconds on a Redis that is down, before the rule's failure
// policy can decide; a rate limiter must fail fast instead.
const (
	redisDialTimeout   = time.Second // dial_timeout: one connection attempt
	redisDialerRetries = 1           // dialer_retries: attempts to connect
	redisMaxRetries    = -1          // max_retries: no retry of a failed command
)

// redisKind is the kind of Redis deployment a URL names.
type redisKind uint8

const (
	redisStandalone redisKind = iota + 1 // redis://, rediss://, unix://
	redisSentinel                        // redis+sentinel://, rediss+sentinel://
	redisCluster                         // redis+cluster://, rediss+cluster://
)

// String returns "standalone", "sentinel" or "cluster".
func (k redisKind) String() string {
	switch k {
	case redisStandalone:
		return "standalone"
	case redisSentinel:
		return "sentinel"
	case redisCluster:
		return "cluster"
	}
	return fmt.Sprintf("redisKind(%d)", uint8(k))
}

// openStore turns the Config's store settings into the Redis store the
// engines keep the rules of store: redis in, or nil for the embedded
// in-memory store (no Redis and no RedisClient): the one place a
// Server's backend is chosen. It returns the client the Server made from
// the URL, which the Server closes, or nil.
func openStore(c *Config, obs admit.Observer) (*redisstore.Store, redis.UniversalClient, error) {
	client, owned := c.RedisClient, redis.UniversalClient(nil)
	if c.Redis != "" {
		var err error
		if client, err = newRedisClient(c); err != nil {
			return nil, nil, &ConfigError{Field: "Redis", Err: err}
		}
		owned = client
	}
	if client == nil {
		return nil, nil, nil
	}
	store, err := redisstore.New(client, redisstore.Config{Options: admit.Options{Name: "redis", Observer: obs}})
	if err != nil {
		if owned != nil {
			_ = owned.Close()
		}
		return nil, nil, err
	}
	return store, owned, nil
}

// redisOptions are the TLS files of a Redis URL (Config.RedisTLSCA,
// RedisTLSCert, RedisTLSKey) and the logger told of a change of the
// client certificate that does not load.
type redisOptions struct {
	ca, cert, key string
	log           *slog.Logger
}

// tlsConfig completes go-redis's TLS config with the files of o.
func (o *redisOptions) tlsConfig(c *tls.Config, scheme string) error {
	if o.ca == "" && o.cert == "" && o.key == "" {
		return nil
	}
	if c == nil {
		return fmt.Errorf("%w: TLS files for a URL of %s://, which is not TLS: use rediss://", errInvalidRedisURL, scheme)
	}
	if o.ca != "" {
		pool, err := loadCAs(o.ca)
		if err != nil {
			return fmt.Errorf("%w: %v", errInvalidRedisURL, err)
		}
		c.RootCAs = pool
	}
	if (o.cert == "") != (o.key == "") {
		return fmt.Errorf("%w: TLS client certificate %q and key %q: %v", errInvalidRedisURL, o.cert, o.key, errTLSIncomplete)
	}
	if o.cert != "" {
		log := o.log
		if log == nil {
			log = slog.Default()
		}
		f, err := newTLSFiles(o.cert, o.key, "", log)
		if err != nil {
			return fmt.Errorf("%w: TLS client %v", errInvalidRedisURL, err)
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			pair, _ := f.current()
			return pair, nil
		}
	}
	return nil
}

// newRedisClient returns a go-redis client for the deployment the URL
// c.Redis names, with the TLS files of c (see Config.Redis). It does not
// connect: the first command does. The error never quotes the URL's
// password.
func newRedisClient(c *Config) (redis.UniversalClient, error) {
	ro := &redisOptions{ca: c.RedisTLSCA, cert: c.RedisTLSCert, key: c.RedisTLSKey, log: c.Logger}
	client, _, err := redisClient(c.Redis, ro)
	return client, err
}

func redisClient(rawURL string, ro *redisOptions) (redis.UniversalClient, redisKind, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s", errInvalidRedisURL, redactURLError(err))
	}
	q := u.Query()
	base, kind, err := redisScheme(u.Scheme)
	if err != nil {
		return nil, 0, err
	}
	if u.Opaque != "" {
		return nil, 0, fmt.Errorf("%w: want %s://host[:port]", errInvalidRedisURL, u.Scheme)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, 0, fmt.Errorf("%w: port %q: want 1 to 65535", errInvalidRedisURL, truncateString(p, 16))
		}
	}
	plain := *u
	plain.Scheme = base
	s := plain.String()
	switch kind {
	case redisSentinel:
		o, err := redis.ParseFailoverURL(s)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s", errInvalidRedisURL, redact(err, u))
		}
		if o.MasterName == "" {
			return nil, 0, fmt.Errorf("%w: %s:// needs master_name=NAME", errInvalidRedisURL, u.Scheme)
		}
		o.DialTimeout = orDefault(q, "dial_timeout", o.DialTimeout, redisDialTimeout)
		o.DialerRetries = orDefault(q, "dialer_retries", o.DialerRetries, redisDialerRetries)
		o.MaxRetries = orDefault(q, "max_retries", o.MaxRetries, redisMaxRetries)
		if err := ro.tlsConfig(o.TLSConfig, u.Scheme); err != nil {
			return nil, 0, err
		}
		return redis.NewFailoverClient(o), kind, nil
	case redisCluster:
		o, err := redis.ParseClusterURL(s)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s", errInvalidRedisURL, redact(err, u))
		}
		o.DialTimeout = orDefault(q, "dial_timeout", o.DialTimeout, redisDialTimeout)
		o.DialerRetries = orDefault(q, "dialer_retries", o.DialerRetries, redisDialerRetries)
		o.MaxRetries = orDefault(q, "max_retries", o.MaxRetries, redisMaxRetries)
		if err := ro.tlsConfig(o.TLSConfig, u.Scheme); err != nil {
			return nil, 0, err
		}
		return redis.NewClusterClient(o), kind, nil
	}
	o, err := redis.ParseURL(s)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s", errInvalidRedisURL, redact(err, u))
	}
	o.DialTimeout = orDefault(q, "dial_timeout", o.DialTimeout, redisDialTimeout)
	o.DialerRetries = orDefault(q, "dialer_retries", o.DialerRetries, redisDialerRetries)
	o.MaxRetries = orDefault(q, "max_retries", o.MaxRetries, redisMaxRetries)
	if err := ro.tlsConfig(o.TLSConfig, u.Scheme); err != nil {
		return nil, 0, err
	}
	return redis.NewClient(o), kind, nil
}

// redisScheme maps a URL scheme to the scheme go-redis parses and the
// deployment's kind.
func redisScheme(scheme string) (base string, kind redisKind, err error) {
	switch strings.ToLower(scheme) {
	case "redis":
		return "redis", redisStandalone, nil
	case "rediss":
		return "rediss", redisStandalone, nil
	case "unix":
		return "unix", redisStandalone, nil
	case "redis+sentinel":
		return "redis", redisSentinel, nil
	case "rediss+sentinel":
		return "rediss", redisSentinel, nil
	case "redis+cluster":
		return "redis", redisCluster, nil
	case "rediss+cluster":
		return "rediss", redisCluster, nil
	case "":
		return "", 0, fmt.Errorf("%w: no scheme: want redis://host:port (or rediss://, unix://, redis+sentinel://, redis+cluster://)", errInvalidRedisURL)
	}
	return "", 0, fmt.Errorf("%w: unknown scheme %q: want redis, rediss, unix, redis+sentinel, rediss+sentinel, redis+cluster or rediss+cluster",
		errInvalidRedisURL, truncateString(scheme, 32))
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
