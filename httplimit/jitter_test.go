package httplimit

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
)

// windowLimiter is a fixed window of 5 a minute, on a manual clock, keyed
// by the header X-Client (a key source the client controls).
func windowLimiter(t *testing.T) (*keyed.Limiter, *admittest.ManualClock) {
	t.Helper()
	clk := admittest.NewManualClock(admittest.Epoch)
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk, Name: "api"}, Algorithm: admit.AlgFixedWindow, Limit: admit.PerMinute(5)})
	if err != nil {
		t.Fatal(err)
	}
	return lim, clk
}

// TestRetryJitter: with RetryJitter, every duration a refusal sends is at
// least the exact one (Retry-After and t rounded up from the jittered
// time, X-RateLimit-Reset and retry_after_ms no earlier), at most the
// exact one plus j, and refusals at one instant are told different times.
func TestRetryJitter(t *testing.T) {
	lim, clk := windowLimiter(t)
	src := admittest.Source(7, 11)
	m := mustNew(t, lim, Header("X-Client"), Config{RetryJitter: admit.Jitter{Fraction: 0.5, Source: src}})
	h := m.Handler(&okHandler{})
	for range 5 {
		if w := do(h, "/", "", "X-Client", "a"); w.Code != 200 {
			t.Fatalf("admission: %d", w.Code)
		}
	}
	clk.Advance(20 * time.Second) // 40s left in the window
	const exact = 40 * time.Second
	seen := map[string]bool{}
	for i := range 40 {
		w := do(h, "/", "", "X-Client", "a")
		if w.Code != 429 {
			t.Fatalf("refusal %d: %d", i, w.Code)
		}
		ra, err := strconv.ParseInt(w.Header().Get("Retry-After"), 10, 64)
		if err != nil || ra < 40 || ra > 60 {
			t.Fatalf("refusal %d: Retry-After %q, want 40 to 60", i, w.Header().Get("Retry-After"))
		}
		seen[w.Header().Get("Retry-After")] = true
		if got, want := w.Header().Get("RateLimit"), `"api";r=0;t=`+strconv.FormatInt(ra, 10); got != want {
			t.Errorf("refusal %d: RateLimit %q, want %q", i, got, want)
		}
		if reset, _ := strconv.ParseInt(w.Header().Get("X-RateLimit-Reset"), 10, 64); reset < ra {
			t.Errorf("refusal %d: X-RateLimit-Reset %d before Retry-After %d", i, reset, ra)
		}
		var body struct {
			RetryAfterMS int64 `json:"retry_after_ms"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if ms := time.Duration(body.RetryAfterMS) * time.Millisecond; ms < exact || ms > exact*3/2 || (ms+time.Second-1)/time.Second != time.Duration(ra) {
			t.Errorf("refusal %d: retry_after_ms %d does not agree with Retry-After %d within [40s, 60s]", i, body.RetryAfterMS, ra)
		}
	}
	if len(seen) < 10 {
		t.Errorf("40 refusals at one instant were told %d distinct Retry-After values, want them spread over 40-60: %v", len(seen), seen)
	}
}

// TestRetryJitterOffByDefault: the zero Config sends the exact time.
func TestRetryJitterOffByDefault(t *testing.T) {
	lim, clk := windowLimiter(t)
	h := mustNew(t, lim, Header("X-Client"), Config{}).Handler(&okHandler{})
	for range 5 {
		do(h, "/", "", "X-Client", "a")
	}
	clk.Advance(20*time.Second + 1)
	for range 10 {
		if w := do(h, "/", "", "X-Client", "a"); w.Header().Get("Retry-After") != "40" || !strings.Contains(w.Body.String(), `"retry_after_ms":40000`) {
			t.Fatalf("Retry-After %q, body %s: want the exact 40s", w.Header().Get("Retry-After"), w.Body)
		}
	}
}

// TestRetryJitterGivesNoMore: jitter changes what refusals say, never what
// the limiter counts. A client choosing its key (a header) and its
// instants gets the same decisions at the same instants with jitter as
// without; and one that follows the jittered Retry-After, retrying on
// time, early or late and switching keys, gets at most its limit (5 a
// window) under each key.
func TestRetryJitterGivesNoMore(t *testing.T) {
	keys := []string{"a", "b", "a%20", "a"}
	run := func(j admit.Jitter, follow bool) (codes []int, perWindow map[string]int) {
		lim, clk := windowLimiter(t)
		h := mustNew(t, lim, Header("X-Client"), Config{RetryJitter: j}).Handler(&okHandler{})
		perWindow = map[string]int{}
		for i := range 300 {
			key := keys[i%len(keys)]
			w := do(h, "/", "", "X-Client", key)
			codes = append(codes, w.Code)
			if w.Code == 200 {
				window := clk.Now().Sub(admittest.Epoch) / time.Minute
				perWindow[key+"@"+strconv.Itoa(int(window))]++
			}
			if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); follow && err == nil && i%3 == 0 {
				clk.Advance(time.Duration(ra) * time.Second) // on time
			} else {
				clk.Advance(time.Duration(i%7) * 700 * time.Millisecond) // early, or late
			}
		}
		return codes, perWindow
	}
	on := admit.Jitter{Fraction: 1, Source: admittest.Source(3, 5)}
	offCodes, _ := run(admit.Jitter{}, false)
	onCodes, _ := run(on, false)
	admitted := 0
	for i := range offCodes {
		if offCodes[i] == 200 {
			admitted++
		}
		if onCodes[i] != offCodes[i] {
			t.Fatalf("request %d: %d with jitter, %d without", i, onCodes[i], offCodes[i])
		}
	}
	if admitted == 0 || admitted == len(offCodes) {
		t.Fatalf("the scenario admits %d of %d: it should test both", admitted, len(offCodes))
	}
	_, perWindow := run(on, true)
	for kw, n := range perWindow {
		if n > 5 {
			t.Errorf("key@window %s: %d admitted, the limit is 5", kw, n)
		}
	}
}

func TestRetryJitterConfig(t *testing.T) {
	lim, _ := windowLimiter(t)
	for _, j := range []admit.Jitter{{Fraction: 1.01}, {Fraction: -1}, {Fraction: 0.1, Max: -time.Second}} {
		if _, err := New(lim, Header("X-Client"), Config{RetryJitter: j}); err == nil || !strings.Contains(err.Error(), "RetryJitter") {
			t.Errorf("RetryJitter %+v: error %v, want one naming RetryJitter", j, err)
		}
	}
}
