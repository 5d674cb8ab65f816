package server

// Helpers of the Server's tests: starting Servers, waiting, metrics, policy files.

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/policy"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// eventually waits until cond holds, polling, for at most d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockedBuffer is a log destination tests read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer starts a Server listening on free ports of 127.0.0.1 and
// closes it at the end of the test.
func startServer(t *testing.T, opts ...option) *Server {
	t.Helper()
	opts = append([]option{withHTTPAddr("127.0.0.1:0"), withGRPCAddr("127.0.0.1:0"), withLogger(quietLogger(t))}, opts...)
	s, err := newWith(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// metric returns the value of the counter or gauge name with the given
// label values (name=value pairs) in reg, and whether it exists.
func metric(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			}
		}
	}
	return 0, false
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// writeFile writes a policy file the way editors and Kubernetes do not
// (in place), so that the poller may see it half written.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// bumpTime moves a file's modification time, so that a rewrite within the
// file system's time granularity is seen as a change.
func bumpTime(t testing.TB, path string, d time.Duration) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime().Add(d), fi.ModTime().Add(d)); err != nil {
		t.Fatal(err)
	}
}

const reloadPolicy = `domain: api
rules:
  - name: global
    match:
      - key: generic_key
        value: global
    rate: 5/hour
`

// startRedisServer starts a Server with its own client of rs and the
// policy src, as an instance of admit serve --redis.
func startRedisServer(t *testing.T, rs *redistest.Server, src string, opts ...option) *Server {
	t.Helper()
	client, _, err := testRedisClient("redis://" + rs.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	p, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]option{withPolicy(p), withRedis(client)}, opts...)...)
}
