package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/endless"
	"github.com/admit-go/admit/internal/policyfmt"
	"github.com/admit-go/admit/internal/testpki"
	"github.com/admit-go/admit/policy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

// The policy files, at start and on a reload, are read through
// policyfmt.MaxFileSize: one that never ends stops there.
func TestPolicyFilesEndless(t *testing.T) {
	const bound = 2 * policyfmt.MaxFileSize
	tooLarge := func(t *testing.T, err error, path string, written func() int64) {
		t.Helper()
		if !errors.Is(err, policy.ErrInvalidPolicy) || !strings.HasPrefix(err.Error(), path+":") || !strings.Contains(err.Error(), "larger than the maximum") {
			t.Errorf("an endless policy file: %v", err)
		}
		if w := written(); w >= bound {
			t.Errorf("read all %d bytes the FIFO's writer wrote: no limit", w)
		}
	}
	t.Run("start", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "policy.yaml")
		written := endless.FIFO(t, fifo, bound)
		_, err := newWith(withPolicyFiles(fifo), withLogger(quietLogger(t)))
		tooLarge(t, err, fifo, written)
	})
	t.Run("reload", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		writeFile(t, path, reloadPolicy)
		s := startServer(t, withPolicyFiles(path), withReloadInterval(0))
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		written := endless.FIFO(t, path, bound)
		tooLarge(t, s.Reload(), path, written)
	})
}

// The certificate, key and CA files of TLS, for the listeners and for
// Redis, at start and on a change, are read through maxTLSFileSize: one
// that never ends stops there, and is an error naming it and the limit.
func TestTLSFilesEndless(t *testing.T) {
	const bound = 2 * maxTLSFileSize
	p := testpki.New(t)
	tooLarge := fmt.Sprintf("larger than the limit of %d bytes", maxTLSFileSize)
	stopped := func(t *testing.T, written func() int64) {
		t.Helper()
		if w := written(); w >= bound {
			t.Errorf("read all %d bytes the FIFO's writer wrote: no limit", w)
		}
	}
	for _, tc := range []struct {
		name string
		opts func(fifo string) []option
	}{
		{"certificate", func(fifo string) []option { return []option{withTLS(fifo, p.KeyFile)} }},
		{"key", func(fifo string) []option { return []option{withTLS(p.CertFile, fifo)} }},
		{"client CA", func(fifo string) []option { return []option{withTLS(p.CertFile, p.KeyFile), withClientCA(fifo)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "file.pem")
			written := endless.FIFO(t, fifo, bound)
			_, err := newWith(append([]option{withHTTPAddr("127.0.0.1:0"), withLogger(quietLogger(t))}, tc.opts(fifo)...)...)
			if !errors.Is(err, errInvalidConfig) || !strings.Contains(err.Error(), fifo+": "+tooLarge) {
				t.Errorf("New: %v", err)
			}
			stopped(t, written)
		})
	}
	for _, tc := range []struct {
		name string
		opt  func(fifo string) *redisOptions
	}{
		{"Redis CA", func(fifo string) *redisOptions { return &redisOptions{ca: fifo, log: quietLogger(t)} }},
		{"Redis certificate", func(fifo string) *redisOptions { return &redisOptions{cert: fifo, key: p.KeyFile, log: quietLogger(t)} }},
		{"Redis key", func(fifo string) *redisOptions {
			return &redisOptions{cert: p.CertFile, key: fifo, log: quietLogger(t)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "file.pem")
			written := endless.FIFO(t, fifo, bound)
			_, _, err := testRedisClient("rediss://127.0.0.1:1", tc.opt(fifo))
			if !errors.Is(err, errInvalidRedisURL) || !strings.Contains(err.Error(), fifo+": "+tooLarge) {
				t.Errorf("NewRedisClient: %v", err)
			}
			stopped(t, written)
		})
	}
	ok := t.Run("rotation", func(t *testing.T) {
		dir := t.TempDir()
		cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		p.Issue(t, "server", cert, key)
		var logs lockedBuffer
		f, err := newTLSFiles(cert, key, "", slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		before, _ := f.current()
		if err := os.Remove(cert); err != nil {
			t.Fatal(err)
		}
		written := endless.FIFO(t, cert, bound)
		f.now = func() time.Time { return time.Now().Add(time.Hour) }
		if after, _ := f.current(); after != before || !strings.Contains(logs.String(), tooLarge) {
			t.Errorf("an endless certificate replaced the one in force, or was not logged:\n%s", logs.String())
		}
		stopped(t, written)
	})
	// Without a limit, /dev/zero would take all the memory there is: try
	// it only once the limit is known to hold.
	if ok && runtime.GOOS == "linux" {
		_, err := newWith(withHTTPAddr("127.0.0.1:0"), withTLS("/dev/zero", p.KeyFile), withLogger(quietLogger(t)))
		if err == nil || !strings.Contains(err.Error(), "/dev/zero: "+tooLarge) {
			t.Errorf("withTLS(/dev/zero): %v", err)
		}
	}
}

// The bodies of the HTTP API are read through WithMaxBodyBytes: one that
// never ends is refused with 413 once past it, and read no further.
func TestAPIBodiesEndless(t *testing.T) {
	const max, bound = 64 << 10, 4 << 20
	h := newEnvoyHarness(t, apiPolicy, withMaxBodyBytes(max), withReset(true))
	for _, path := range []string{"/v1/check", "/v1/acquire", "/v1/release", "/v1/extend", "/v1/reset", "/json"} {
		t.Run(path, func(t *testing.T) {
			body := &endless.Reader{Bound: bound, Fill: 'a'}
			r := httptest.NewRequest(http.MethodPost, path, io.MultiReader(strings.NewReader(`{"domain":"`), body))
			w := httptest.NewRecorder()
			h.api.ServeHTTP(w, r)
			if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), apiCodeBodyTooLarge) {
				t.Errorf("%d %s", w.Code, w.Body)
			}
			if n := body.N(); n > 2*max {
				t.Errorf("read %d bytes of an endless body, limit %d", n, max)
			}
		})
	}
}

// A gRPC message larger than WithMaxRequestBytes is refused by its
// declared length, before it is read.
func TestServerGRPCMessageLimit(t *testing.T) {
	const max = 64 << 10
	s := startServer(t, withMaxRequestBytes(max))
	conn, err := grpc.NewClient(s.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body, out := make([]byte, 2*max), []byte(nil)
	err = conn.Invoke(context.Background(), "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", &body, &out, grpc.ForceCodec(rawCodec{}))
	wantCode(t, err, codes.ResourceExhausted)
}

// The gateway forwards a body as it comes, never holding it; with
// WithUpstreamMaxBodyBytes, one that never ends is cut off at the cap
// (413) and read no further.
func TestGatewayBodyEndless(t *testing.T) {
	const max, bound = 64 << 10, 4 << 20
	g, _, _ := newTestGateway(t, &echoUpstream{}, testEngine(t, gwPolicy), withUpstreamMaxBodyBytes(max))
	body := &endless.Reader{Bound: bound, Fill: 'a'}
	r := httptest.NewRequest(http.MethodPost, "/", body)
	r.ContentLength = -1
	w := httptest.NewRecorder()
	g.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "BODY_TOO_LARGE") {
		t.Errorf("%d %s", w.Code, w.Body)
	}
	if n := body.N(); n > 2*max {
		t.Errorf("read %d bytes of an endless body, cap %d", n, max)
	}
}

// serve names the file and line of malformed YAML on the first line, at
// start and on a reload.
func TestPolicyFilesPositions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "a: b: c\n")
	want := path + ":1: malformed YAML: mapping values are not allowed in this context"
	if _, err := newWith(withPolicyFiles(path), withLogger(quietLogger(t))); err == nil || err.Error() != want {
		t.Errorf("New: %v\nwant %s", err, want)
	}
	writeFile(t, path, reloadPolicy)
	s := startServer(t, withPolicyFiles(path), withReloadInterval(0))
	writeFile(t, path, "domain: api\x00\n")
	want = path + ":1:12: malformed YAML: character U+0000 is not allowed"
	if err := s.Reload(); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Reload: %v\nwant %s...", err, want)
	}
}
