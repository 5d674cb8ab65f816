package status

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

func newTestPage(rec *Recorder, loopbackOnly bool) *Page {
	return &Page{
		Recorder:     rec,
		LoopbackOnly: loopbackOnly,
		Info: func() (Instance, Policy, string) {
			return Instance{Hostname: "h<b>", Started: time.Unix(0, 0)}, Policy{Source: "files", Files: []string{"a<\x00>.yaml"}, LastReload: Reload{Error: "bad \xff<script>"}}, "memory"
		},
	}
}

func deny(r *Recorder, rule, key string) {
	r.Decided(admit.DecisionEvent{Key: key, Decision: admit.Decision{Rule: rule, Limit: admit.PerSecond(1)}})
}

// TestSnapshotCounts: the rule's counters and the denied key appear.
func TestSnapshotCounts(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewRecorder(nil, func() time.Time { return now })
	for i := range 30 {
		now = time.Unix(1000+int64(i%10), 0)
		r.Decided(admit.DecisionEvent{Key: "ok", Decision: admit.Decision{Allowed: true, Rule: "r", Limit: admit.PerSecond(10), Remaining: 5}})
		deny(r, "r", "bad")
	}
	now = time.Unix(1010, 0)
	s := r.Snapshot(nil, Instance{}, Policy{}, "memory")
	if len(s.Rules) != 1 || s.Rules[0].Rule != "r" {
		t.Fatalf("rules = %+v", s.Rules)
	}
	if got := s.Rules[0].PerSecond; got != 6 {
		t.Errorf("decisions/s = %v, want 6", got)
	}
	if got := s.Rules[0].DeniedShare; got != 0.5 {
		t.Errorf("denied share = %v, want 0.5", got)
	}
	if k := s.DeniedKeys.Top; len(k) != 1 || k[0].Key != "bad" || k[0].Count != 30 {
		t.Errorf("top = %+v", k)
	}
}

// TestDisplayEscapes: keys with HTML, control characters and invalid
// UTF-8 come out printable, and the JSON holds no raw '<'.
func TestDisplayEscapes(t *testing.T) {
	r := NewRecorder(nil, nil)
	deny(r, "rule<i>", "<script>alert(1)</script>")
	deny(r, "r", "a\x00b\x1b[31m\nc\xff\u202e")
	w := httptest.NewRecorder()
	newTestPage(r, false).ServeHTTP(w, httptest.NewRequest("GET", "/status.json", nil))
	body := w.Body.String()
	if w.Code != 200 || strings.ContainsAny(body, "<>\x00\x1b") || strings.Contains(body, "\xff") {
		t.Fatalf("%d %q", w.Code, body)
	}
	var s Snapshot
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, k := range s.DeniedKeys.Top {
		keys[k.Key] = true
	}
	for _, want := range []string{"<script>alert(1)</script>", `a\u0000b\u001b[31m\nc\xff\u202e`} {
		if !keys[want] {
			t.Errorf("key %q not in %v", want, keys)
		}
	}
	if s.Policy.Files[0] != `a<\u0000>.yaml` || s.Policy.LastReload.Error != `bad \xff<script>` {
		t.Errorf("policy = %+v", s.Policy)
	}
}

// TestBadRequests: a query string, another method, a remote client of a
// loopback-only page, an unknown path: each a clear error, no panic.
func TestBadRequests(t *testing.T) {
	r := NewRecorder(nil, nil)
	for _, c := range []struct {
		method, target, remote string
		loopback               bool
		code                   int
		msg                    string
	}{
		{"GET", "/status.json?x=1", "", false, 400, "takes no query string"},
		{"GET", "/status.json?", "", false, 400, "takes no query string"},
		{"GET", "/status?<script>", "", false, 400, "takes no query string"},
		{"POST", "/status.json", "", false, 405, "read-only"},
		{"GET", "/status.json", "192.0.2.1:1234", true, 403, "loopback clients only"},
		{"GET", "/status.json", "[::1]:1234", true, 200, "\"version\":1"},
		{"GET", "/status/<x>", "", false, 404, "no such page"},
	} {
		req := httptest.NewRequest(c.method, "http://x"+c.target, nil)
		if c.remote != "" {
			req.RemoteAddr = c.remote
		}
		w := httptest.NewRecorder()
		newTestPage(r, c.loopback).ServeHTTP(w, req)
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.msg) {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.target, w.Code, w.Body, c.code, c.msg)
		}
	}
	for _, p := range []string{"/status", "/status/status.js", "/status/status.css"} {
		w := httptest.NewRecorder()
		newTestPage(r, false).ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		if w.Code != http.StatusOK || w.Header().Get("Content-Security-Policy") == "" || w.Body.Len() == 0 {
			t.Errorf("%s: %d", p, w.Code)
		}
	}
}

// TestSketchMemoryBounded: ten million distinct denied keys (feeding the
// sketch directly) leave the Recorder's memory under a fixed cap, and a
// key denied far more often than the rest is still found on top.
func TestSketchMemoryBounded(t *testing.T) {
	n := 10_000_000
	if testing.Short() || raceEnabled {
		n = 1_000_000 // ten times faster; the race detector is ten times slower
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := NewRecorder(nil, nil)
	key := make([]byte, 0, 100)
	for i := range n {
		key = fmt.Appendf(key[:0], "client-%d-%s", i, strings.Repeat("x", i%80))
		r.keys.add("rule", string(key))
		if i%100 == 0 {
			r.keys.add("rule", "hot")
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	const maxBytes = 1 << 20
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > maxBytes {
		t.Errorf("heap grew by %d bytes after %d keys, cap %d", grown, n, maxBytes)
	}
	if len(r.keys.heap) != TopKeys || len(r.keys.index) != TopKeys {
		t.Errorf("sketch holds %d entries, %d indexed, want %d", len(r.keys.heap), len(r.keys.index), TopKeys)
	}
	top, total := r.keys.top(1)
	if total != uint64(n+n/100) || top[0].Key != "hot" || top[0].Count < uint64(n/100) {
		t.Errorf("total %d, top %+v", total, top)
	}
	runtime.KeepAlive(r)
}

// TestRulesBounded: rules beyond MaxRules count under "other".
func TestRulesBounded(t *testing.T) {
	r := NewRecorder(nil, nil)
	for i := range MaxRules * 3 {
		deny(r, fmt.Sprint("rule", i), "k")
	}
	if n := len(*r.rules.Load()); n > MaxRules+1 {
		t.Errorf("%d rules kept", n)
	}
}

// TestDisplayKey: an engine's key shows as its descriptor values; a value
// the sketch cut short ends the text; a key in another form shows whole.
func TestDisplayKey(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"5:alice", "alice"},
		{"5:alice4:eu-1", "alice / eu-1"},
		{"9:<b>\x00x</b>", `<b>\u0000x</b>`},
		{"20:truncated", "truncated"},
		{"0:", ""},
		{"plain key", "plain key"},
		{"5alice", "5alice"},
		{"12345678901:x", "12345678901:x"},
		{"3:ab\xff", `ab\xff`},
	} {
		if got := displayKey([]byte(c.key)); got != c.want {
			t.Errorf("displayKey(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}
