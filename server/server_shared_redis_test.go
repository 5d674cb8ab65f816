package server

// Several Servers on one Redis: one limit enforced together, leases shared.

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/admit-go/admit/internal/redistest"
	"github.com/admit-go/admit/policy"
)

// TestServerSharedRedis: three Servers on one Redis enforce one limit
// together.
func TestServerSharedRedis(t *testing.T) {
	const src = `domain: api
rules:
  - name: shared
    match: [{key: generic_key, value: global}]
    rate: 30/hour
    store: redis
    failure: {policy: fail_closed, timeout: 5s}
`
	rs := redistest.Standalone(t)
	prefix := strings.TrimSuffix(strings.ReplaceAll(redistest.Prefix(t), ":", "-"), "-")
	up := &echoUpstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	u, _ := url.Parse(upSrv.URL)
	var fronts []string
	for range 3 {
		s := startRedisServer(t, rs, src, withUpstream(u), withAdminAddr("127.0.0.1:0"),
			withDescriptorSpecs("generic_key=const:global"), withEngine(policy.Config{KeyPrefix: prefix}))
		fronts = append(fronts, "http://"+s.HTTPAddr().String())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 90 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(fronts[i%3] + "/")
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body))
			resp.Body.Close()
			if resp.StatusCode == 200 {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 30 {
		t.Fatalf("three servers admitted %d of 90, want the shared limit's 30", ok)
	}
}

// TestServerSharedLeases: two Servers on one Redis; a lease of a cap kept
// in Redis, acquired through one, is extended and released through the
// other.
func TestServerSharedLeases(t *testing.T) {
	const src = `domain: api
rules:
  - name: jobs
    match: job
    concurrency: 1
    store: redis
    failure: {policy: fail_closed, timeout: 5s}
`
	rs := redistest.Standalone(t)
	prefix := strings.TrimSuffix(strings.ReplaceAll(redistest.Prefix(t), ":", "-"), "-")
	var bases []string
	for range 2 {
		s := startRedisServer(t, rs, src, withEngine(policy.Config{KeyPrefix: prefix}))
		bases = append(bases, "http://"+s.HTTPAddr().String())
	}
	post := func(base, path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, m
	}
	const job = `{"domain":"api","descriptors":[{"entries":[{"key":"job","value":"etl"}]}]}`
	code, m := post(bases[0], "/v1/acquire", job)
	id, _ := m["lease_id"].(string)
	if code != 200 || m["allowed"] != true || id == "" {
		t.Fatalf("acquire: %d %v", code, m)
	}
	if _, m := post(bases[1], "/v1/acquire", job); m["allowed"] != false {
		t.Fatalf("second acquire over a cap of 1: %v", m)
	}
	if code, m := post(bases[1], "/v1/extend", `{"lease_id":"`+id+`","ttl_ms":60000}`); code != 200 || m["extended"] != true {
		t.Fatalf("extend through the other server: %d %v", code, m)
	}
	if code, m := post(bases[1], "/v1/release", `{"lease_id":"`+id+`"}`); code != 200 || m["released"] != true {
		t.Fatalf("release through the other server: %d %v", code, m)
	}
	if _, m := post(bases[0], "/v1/acquire", job); m["allowed"] != true {
		t.Fatalf("acquire after the release: %v", m)
	}
}
