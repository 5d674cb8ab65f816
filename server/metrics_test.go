package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/admit-go/admit/policy"
)

// TestServerKeysTracked: a fresh server's /metrics has admit_keys_tracked
// for each limiter it keeps keys of in memory, at 0, and the gauge follows
// the keys as clients come, long before the cap evicts anything.
func TestServerKeysTracked(t *testing.T) {
	const src = `domain: api
rules:
  - {name: per-user, match: user, rate: 10/h}
  - {name: daily, match: tenant, quota: 1000/day}
  - {name: jobs, match: job, concurrency: 5}
`
	// (10 per hour: a key is full again, and may be forgotten, only an
	// hour after its request, however slowly a loaded machine sends them.
	// At 10/s a run slower than a tenth of a second per key lost keys.)
	p, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withPolicy(p))
	base := "http://" + s.HTTPAddr().String()
	_, body := get(t, base+"/metrics")
	for _, want := range []string{`admit_keys_tracked{limiter="per-user"} 0`, `admit_keys_tracked{limiter="daily"} 0`, `admit_keys_tracked{limiter="jobs"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("fresh server: /metrics lacks %s", want)
		}
	}
	const users = 200
	for i := range users {
		resp, err := http.Post(base+"/v1/check", "application/json",
			strings.NewReader(fmt.Sprintf(`{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"u%d"}]}]}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("check %d: %d", i, resp.StatusCode)
		}
	}
	// Reported to within an eighth (and a key per shard of the table).
	if v, ok := metric(t, s.registry(), "admit_keys_tracked", "limiter", "per-user"); !ok || v < users*7/8 || v > users {
		t.Errorf("admit_keys_tracked of per-user after %d users = %v, %v", users, v, ok)
	}
	if _, ok := metric(t, s.registry(), "admit_evictions_total"); ok {
		t.Error("keys were evicted: the test is about growth before the cap")
	}
}
