package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/testpki"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestServerTLS: HTTPS (HTTP/2) and gRPC over TLS with the files of
// WithTLS; plain clients are refused.
func TestServerTLS(t *testing.T) {
	p := testpki.New(t)
	s := startServer(t, withTLS(p.CertFile, p.KeyFile))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.Pool}, ForceAttemptHTTP2: true}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + s.HTTPAddr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Proto != "HTTP/2.0" {
		t.Errorf("GET /healthz over TLS: %d %s", resp.StatusCode, resp.Proto)
	}
	if resp, err := http.Get("http://" + s.HTTPAddr().String() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("a plain HTTP request to the TLS listener was served")
		}
	}

	check := func(creds credentials.TransportCredentials) error {
		cc, err := grpc.NewClient(s.GRPCAddr().String(), grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && r.Status != healthpb.HealthCheckResponse_SERVING {
			err = errors.New(r.Status.String())
		}
		return err
	}
	if err := check(credentials.NewTLS(&tls.Config{RootCAs: p.Pool})); err != nil {
		t.Errorf("gRPC health over TLS: %v", err)
	}
	if err := check(insecure.NewCredentials()); err == nil {
		t.Error("a plaintext gRPC call to the TLS listener was served")
	}
}

// TestServerMutualTLS: WithClientCA refuses clients without a certificate
// of the CA, on HTTP and gRPC alike.
func TestServerMutualTLS(t *testing.T) {
	p := testpki.New(t)
	s := startServer(t, withTLS(p.CertFile, p.KeyFile), withClientCA(p.CAFile))
	for name, addr := range map[string]string{"HTTP": s.HTTPAddr().String(), "gRPC": s.GRPCAddr().String()} {
		if _, err := p.PeerCN(t, addr); err == nil {
			t.Errorf("%s: a client without a certificate was served", name)
		}
		if cn, err := p.PeerCN(t, addr, p.Client); err != nil || cn != "server" {
			t.Errorf("%s with a client certificate: %q, %v", name, cn, err)
		}
	}
	// A certificate of another CA is refused.
	other := testpki.New(t)
	if _, err := p.PeerCN(t, s.HTTPAddr().String(), other.Client); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
}

// TestServerTLSRotation: new files serve the next connections; files that
// do not load keep the ones in force, logged once.
func TestServerTLSRotation(t *testing.T) {
	p := testpki.New(t)
	var logs lockedBuffer
	s := startServer(t, withTLS(p.CertFile, p.KeyFile), withLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	var mu sync.Mutex
	now := time.Now()
	s.tls.now = func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(2 * time.Second); return now }
	addr := s.HTTPAddr().String()
	if cn, err := p.PeerCN(t, addr); err != nil || cn != "server" {
		t.Fatalf("before: %q, %v", cn, err)
	}
	p.Issue(t, "rotated", p.CertFile, p.KeyFile)
	if cn, err := p.PeerCN(t, addr); err != nil || cn != "rotated" {
		t.Fatalf("after the rotation: %q, %v", cn, err)
	}
	if !strings.Contains(logs.String(), "TLS files reloaded") {
		t.Errorf("the reload was not logged:\n%s", logs.String())
	}
	if err := os.WriteFile(p.KeyFile, []byte("half a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if cn, err := p.PeerCN(t, addr); err != nil || cn != "rotated" {
			t.Fatalf("with a broken key: %q, %v; want the rotated certificate still", cn, err)
		}
	}
	if n := strings.Count(logs.String(), "do not load"); n != 1 {
		t.Errorf("the broken files were logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestServerTLSErrors: files that do not load, a key without its
// certificate, a client CA without TLS.
func TestServerTLSErrors(t *testing.T) {
	p := testpki.New(t)
	missing := filepath.Join(p.Dir, "missing.pem")
	garbage := filepath.Join(p.Dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		opts []option
		want string
	}{
		"missing key":  {[]option{withTLS(p.CertFile, missing)}, missing},
		"garbage cert": {[]option{withTLS(garbage, p.KeyFile)}, garbage},
		"key only":     {[]option{withTLS("", p.KeyFile)}, "certificate"},
		"CA without":   {[]option{withClientCA(p.CAFile)}, "certificate"},
		"garbage CA":   {[]option{withTLS(p.CertFile, p.KeyFile), withClientCA(garbage)}, garbage},
		"missing CA":   {[]option{withTLS(p.CertFile, p.KeyFile), withClientCA(missing)}, missing},
	} {
		_, err := newWith(append([]option{withHTTPAddr("127.0.0.1:0"), withGRPCAddr("127.0.0.1:0"), withLogger(quietLogger(t))}, c.opts...)...)
		if !errors.Is(err, errInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalidOption naming %q", name, err, c.want)
		}
	}
}

// TestServerGRPCMaxConnectionAge: the server closes a client connection
// once it is WithGRPCMaxConnectionAge old, and the client, calling on,
// dials a new one.
func TestServerGRPCMaxConnectionAge(t *testing.T) {
	s := startServer(t, withHTTPAddr(""), withGRPCMaxConnectionAge(100*time.Millisecond, 50*time.Millisecond))
	var dials atomic.Int32
	cc, err := grpc.NewClient(s.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	health := healthpb.NewHealthClient(cc)
	for dials.Load() < 2 {
		if _, err := health.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
			t.Fatalf("a call while connections come and go (%d dials): %v", dials.Load(), err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("one connection for 10 s, past its maximum age of 100 ms")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestServerUnixSockets: "unix:PATH" and "unix://PATH" listeners; a stale
// socket file is replaced, a live one is not; Close removes the files.
func TestServerUnixSockets(t *testing.T) {
	dir := t.TempDir()
	httpPath, grpcPath := filepath.Join(dir, "http.sock"), filepath.Join(dir, "grpc.sock")
	// A socket file left by a process that died.
	stale, err := net.Listen("unix", httpPath)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	s, err := newWith(withHTTPAddr("unix:"+httpPath), withGRPCAddr("unix://"+grpcPath), withLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if a := s.HTTPAddr(); a.Network() != "unix" || a.String() != httpPath {
		t.Errorf("HTTPAddr %s %s", a.Network(), a)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", httpPath)
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://localhost/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz on the Unix socket: %d", resp.StatusCode)
	}
	cc, err := grpc.NewClient("unix:"+grpcPath, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health on the Unix socket: %v, %v", r, err)
	}

	// A socket another server answers on is not taken over.
	s2, err := newWith(withHTTPAddr("unix:"+httpPath), withGRPCAddr(""), withLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(); err == nil {
		t.Error("a second server took over a live socket")
	}
	_ = s2.Close()

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{httpPath, grpcPath} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after Close: %v", p, err)
		}
	}
}
