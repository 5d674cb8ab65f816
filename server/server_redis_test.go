package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/internal/testpki"
	"github.com/redis/go-redis/v9"
)

func TestNewRedisClient(t *testing.T) {
	for _, tc := range []struct {
		url   string
		kind  redisKind
		check func(t *testing.T, c redis.UniversalClient)
	}{
		{"redis://localhost:6380/2", redisStandalone, func(t *testing.T, c redis.UniversalClient) {
			o := c.(*redis.Client).Options()
			if o.Addr != "localhost:6380" || o.DB != 2 || o.TLSConfig != nil {
				t.Errorf("options %+v", o)
			}
			if o.DialTimeout != redisDialTimeout || o.DialerRetries != redisDialerRetries || o.MaxRetries > 0 {
				t.Errorf("defaults not applied: dial %v, dialer retries %d, retries %d", o.DialTimeout, o.DialerRetries, o.MaxRetries)
			}
		}},
		{"redis://h?dial_timeout=3s&max_retries=2", redisStandalone, func(t *testing.T, c redis.UniversalClient) {
			o := c.(*redis.Client).Options()
			if o.Addr != "h:6379" || o.DialTimeout != 3*time.Second || o.MaxRetries != 2 {
				t.Errorf("the URL's options were not kept: %+v", o)
			}
		}},
		{"rediss://u:p@h:6390", redisStandalone, func(t *testing.T, c redis.UniversalClient) {
			o := c.(*redis.Client).Options()
			if o.TLSConfig == nil || o.Username != "u" || o.Password != "p" {
				t.Errorf("options %+v", o)
			}
		}},
		{"unix:///run/redis.sock?db=3", redisStandalone, func(t *testing.T, c redis.UniversalClient) {
			o := c.(*redis.Client).Options()
			if o.Network != "unix" || o.Addr != "/run/redis.sock" || o.DB != 3 {
				t.Errorf("options %+v", o)
			}
		}},
		{"REDIS+CLUSTER://n1:7000?addr=n2:7001&addr=n3:7002", redisCluster, func(t *testing.T, c redis.UniversalClient) {
			o := c.(*redis.ClusterClient).Options()
			if strings.Join(o.Addrs, ",") != "n1:7000,n2:7001,n3:7002" || o.MaxRetries > 0 {
				t.Errorf("options %+v", o)
			}
		}},
		{"rediss+cluster://n1", redisCluster, func(t *testing.T, c redis.UniversalClient) {
			if c.(*redis.ClusterClient).Options().TLSConfig == nil {
				t.Error("no TLS")
			}
		}},
		{"redis+sentinel://s1:26379/1?master_name=mymaster&addr=s2:26379", redisSentinel, nil},
		{"rediss+sentinel://s1?master_name=m", redisSentinel, nil},
	} {
		t.Run(tc.url, func(t *testing.T) {
			c, kind, err := testRedisClient(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if kind != tc.kind {
				t.Errorf("kind %v, want %v", kind, tc.kind)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func TestNewRedisClientErrors(t *testing.T) {
	for _, u := range []string{
		"", "localhost:6379", "http://h", "redis:h", "redis://h/notadb", "redis://h/1/2",
		"redis://h?bogus=1", "redis://h?dial_timeout=forever", "redis+sentinel://s1", "redis+sentinel://s1?addr=bad",
		"redis+cluster://n1?db=1&bogus=2", "unix://", "redis://h:99999999999999999999", "redis://h:0", "redis://h:x1", "redis://%zz",
		"redis+sentinel://:secret@s1?master_name=m&bogus=1",
	} {
		c, _, err := testRedisClient(u)
		if !errors.Is(err, errInvalidRedisURL) || c != nil {
			t.Errorf("testRedisClient(%q) = %v, %v; want errInvalidRedisURL", u, c, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error quotes the password: %v", err)
		}
	}
	if _, _, err := testRedisClient("redis://user:hunter2@h/x"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v quotes the password", err)
	}
	if s := redisKind(9).String(); s != "redisKind(9)" {
		t.Errorf("redisKind(9) = %q", s)
	}
}

// TestNewRedisClientConnects: each form reaches a real deployment.
func TestNewRedisClientConnects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ping := func(t *testing.T, u string) {
		t.Helper()
		c, _, err := testRedisClient(u)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING through %s: %v", u, err)
		}
	}
	t.Run("standalone", func(t *testing.T) {
		ping(t, "redis://"+redistest.Standalone(t).Addr()+"/0?protocol=2")
	})
	t.Run("sentinel", func(t *testing.T) {
		s := redistest.NewSentinel(t)
		if err := s.WaitMasterUp(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		ping(t, "redis+sentinel://"+s.Addr()+"?master_name="+s.MasterName())
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.SharedCluster(t)
		addrs := c.Addrs()
		u := "redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
		ping(t, u)
	})
}

// FuzzNewRedisClient: any URL gives a client or an error wrapping
// errInvalidRedisURL, never a panic, and no error quotes a password.
func FuzzNewRedisClient(f *testing.F) {
	for _, s := range []string{
		"redis://localhost:6379/0", "rediss://u:p@h:1/2?dial_timeout=1s", "unix:///tmp/r.sock",
		"redis+sentinel://s:26379?master_name=m&addr=s2:26379", "redis+cluster://a:1?addr=b:2",
		"redis://h?x=1", "redis://[::1]:6379", "%", "redis://h/a/b", "redis+cluster://:pw@h?bogus",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		c, _, err := testRedisClient(u)
		if err != nil {
			if !errors.Is(err, errInvalidRedisURL) || c != nil {
				t.Fatalf("%v, %v", c, err)
			}
			return
		}
		_ = c.Close()
	})
}

// TestNewRedisClientTLS: rediss:// to a Redis requiring client
// certificates, with WithRedisTLS's CA and client certificate; without
// them the handshake fails; TLS files for a plain URL are an error.
func TestNewRedisClientTLS(t *testing.T) {
	p := testpki.New(t)
	rs := redistest.NewTLS(t, p.CertFile, p.KeyFile, p.CAFile)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ping := func(u string, opts ...redisOption) error {
		c, _, err := testRedisClient(u, opts...)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Ping(ctx).Err()
	}
	u := "rediss://" + rs.TLSAddr()
	if err := ping(u, withRedisTLS(p.CAFile, p.ClientCertFile, p.ClientKeyFile, quietLogger(t))); err != nil {
		t.Fatalf("PING over mutual TLS: %v", err)
	}
	if err := ping(u); err == nil {
		t.Error("PING with the system's CAs and no client certificate succeeded")
	}
	if err := ping(u, withRedisTLS(p.CAFile, "", "", nil)); err == nil {
		t.Error("PING without a client certificate succeeded")
	}
	for name, c := range map[string]struct {
		url  string
		opts []redisOption
		want string
	}{
		"plain URL":    {"redis://" + rs.Addr(), []redisOption{withRedisTLS(p.CAFile, "", "", nil)}, "not TLS"},
		"missing CA":   {u, []redisOption{withRedisTLS(p.Dir+"/none.pem", "", "", nil)}, "none.pem"},
		"key only":     {u, []redisOption{withRedisTLS("", "", p.ClientKeyFile, nil)}, "certificate"},
		"wrong key":    {u, []redisOption{withRedisTLS("", p.ClientCertFile, p.KeyFile, nil)}, p.KeyFile},
		"cluster form": {"redis+cluster://" + rs.Addr(), []redisOption{withRedisTLS("", p.ClientCertFile, p.ClientKeyFile, nil)}, "not TLS"},
	} {
		if _, _, err := testRedisClient(c.url, c.opts...); !errors.Is(err, errInvalidRedisURL) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want errInvalidRedisURL naming %q", name, err, c.want)
		}
	}
}
