package server

// Stopping a Server: draining requests in flight, the deadline, no goroutine left.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestServerShutdownDrains(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 16)
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	s, err := newWith(withHTTPAddr("127.0.0.1:0"), withGRPCAddr("127.0.0.1:0"), withAdminAddr("127.0.0.1:0"),
		withUpstream(u), withShutdownTimeout(30*time.Second), withLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	front := "http://" + s.HTTPAddr().String()
	admin := "http://" + s.AdminAddr().String()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()

	const n = 4
	results := make(chan string, n)
	for i := range n {
		go func() {
			resp, err := http.Get(fmt.Sprintf("%s/r%d", front, i))
			if err != nil {
				results <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results <- fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
	}
	for range n {
		<-entered
	}
	cancel() // SIGTERM
	eventually(t, 10*time.Second, "the listener stops accepting", func() bool {
		c, err := net.DialTimeout("tcp", s.HTTPAddr().String(), time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	if _, err := http.Get(admin + "/readyz"); err == nil {
		t.Error("the admin listener still accepts during the drain")
	}
	select {
	case err := <-ran:
		t.Fatalf("Run returned with requests in flight: %v", err)
	default:
	}
	close(release)
	for range n {
		if r := <-results; r != "200 done" {
			t.Errorf("in-flight request: %s", r)
		}
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestServerShutdownTimeout(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	entered := make(chan struct{}, 1)
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	s, err := newWith(withHTTPAddr("127.0.0.1:0"), withGRPCAddr("127.0.0.1:0"), withAdminAddr("127.0.0.1:0"),
		withUpstream(u), withShutdownTimeout(100*time.Millisecond), withLogger(quietLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + s.HTTPAddr().String() + "/")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		got <- err
	}()
	<-entered
	start := time.Now()
	cancel()
	err = <-ran
	if !errors.Is(err, ErrShutdownTimeout) {
		t.Fatalf("Run = %v, want ErrShutdownTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v with a 100ms deadline", d)
	}
	if err := <-got; err == nil {
		t.Error("the request cut off at the deadline succeeded")
	}
}

func TestServerNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeFile(t, path, reloadPolicy)
	for range 3 {
		s, err := newWith(withHTTPAddr("127.0.0.1:0"), withGRPCAddr("127.0.0.1:0"), withPolicyFiles(path),
			withReloadInterval(time.Millisecond), withLogger(quietLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		r, _ := get(t, "http://"+s.HTTPAddr().String()+"/healthz")
		_ = r
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	eventually(t, 10*time.Second, "goroutines back to their number", func() bool {
		return runtime.NumGoroutine() <= before
	})
}
