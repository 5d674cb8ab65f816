package server

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// gwDelayPolicy queues up to 15ms of requests beyond a burst of 1 at
// 100/s (T = 10ms), as nginx's limit_req with a delay.
const gwDelayPolicy = `
domain: api
rules:
  - name: global
    match: generic_key
    rate: 100/s burst 1
    delay: 15ms
`

// TestGatewayDelay: the gateway holds a request whose slot comes within
// the rule's delay (a real wait of 10ms: the engine's clock stands still)
// and then forwards it; one that would wait longer is refused at once.
func TestGatewayDelay(t *testing.T) {
	up := &echoUpstream{}
	_, front, _ := newTestGateway(t, up, testEngine(t, gwDelayPolicy))
	if resp, _ := get(t, front+"/a"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	start := time.Now()
	if resp, _ := get(t, front+"/b"); resp.StatusCode != http.StatusOK {
		t.Fatalf("second: %d", resp.StatusCode)
	}
	if waited := time.Since(start); waited < 10*time.Millisecond {
		t.Errorf("the second was forwarded after %v, before its slot (10ms)", waited)
	}
	if resp, _ := get(t, front+"/c"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third (would wait 20ms): %d", resp.StatusCode)
	}
	if n := up.calls.Load(); n != 2 {
		t.Errorf("upstream called %d times, want 2", n)
	}
}

// TestAPICheckDelay: /v1/check answers a delayed admission at once, with
// the wait in delay_ms (the caller's to honour), in the decision and the
// rule's status.
func TestAPICheckDelay(t *testing.T) {
	h := newAPIHarness(t, `
domain: api
rules:
  - name: per-user
    match: user
    rate: 2/s
    delay: 1s
`)
	for range 2 {
		apiWantStatus(t, h.post("/v1/check", apiCheckBody("api", "user=alice")), http.StatusOK)
	}
	w := h.post("/v1/check", apiCheckBody("api", "user=alice"))
	apiWantStatus(t, w, http.StatusOK)
	want := `{"allowed":true,"decision":{"allowed":true,"rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":0,"retry_after_ms":0,"reset_after_ms":1500,"delay_ms":500},"statuses":[{"code":"OK","rule":"per-user","kind":"rate","limit":{"rate":2,"period_ms":1000,"burst":2},"remaining":0,"retry_after_ms":0,"reset_after_ms":1500,"delay_ms":500}]}`
	if got := strings.TrimSuffix(w.Body.String(), "\n"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	apiDecode(t, w)
}
