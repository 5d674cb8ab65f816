package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
)

// pausedFor returns how long tr keeps host paused from now, 0 for none.
func pausedFor(tr *Transport, host string) time.Duration {
	now := tr.clock.Now()
	h, _ := tr.hosts.get(host, false, now, tr.ns(now))
	if h == nil {
		return 0
	}
	return max(time.Duration(h.until.Load()-tr.ns(now)), 0)
}

func TestPauseForms(t *testing.T) {
	date := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	httpDate := func(d time.Duration) string { return date.Add(d).Format(http.TimeFormat) }
	for _, tc := range []struct {
		name   string
		step   step
		paused time.Duration
	}{
		{"429 delta-seconds", step{code: 429, header: map[string]string{"Retry-After": "30"}}, 30 * time.Second},
		{"503 delta-seconds", step{code: 503, header: map[string]string{"Retry-After": " 7 "}}, 7 * time.Second},
		{"429 HTTP-date", step{code: 429, header: map[string]string{"Date": httpDate(0), "Retry-After": httpDate(45 * time.Second)}}, 45 * time.Second},
		{"503 RFC 850 date", step{code: 503, header: map[string]string{"Date": httpDate(0), "Retry-After": date.Add(time.Minute).Format("Monday, 02-Jan-06 15:04:05 GMT")}}, time.Minute},
		{"429 past date", step{code: 429, header: map[string]string{"Date": httpDate(0), "Retry-After": httpDate(-time.Hour)}}, 0},
		{"429 absurd", step{code: 429, header: map[string]string{"Retry-After": "9999999999999999999999"}}, defaultMaxPause},
		{"429 far date", step{code: 429, header: map[string]string{"Date": httpDate(0), "Retry-After": httpDate(1000 * time.Hour)}}, defaultMaxPause},
		{"429 garbage", step{code: 429, header: map[string]string{"Retry-After": "soon"}}, 0},
		{"429 negative", step{code: 429, header: map[string]string{"Retry-After": "-5"}}, 0},
		{"429 without header", step{code: 429}, 0},
		{"301 Retry-After", step{code: 301, header: map[string]string{"Retry-After": "10", "Location": "/x"}}, 0},
		{"RateLimit r=0;t", step{code: 200, header: map[string]string{"RateLimit": `"default";r=0;t=12`}}, 12 * time.Second},
		{"RateLimit two policies", step{code: 200, header: map[string]string{"RateLimit": `"burst";r=5;t=1, "daily";r=0;t=200`}}, 200 * time.Second},
		{"RateLimit remaining", step{code: 200, header: map[string]string{"RateLimit": `"default";r=3;t=12`}}, 0},
		{"RateLimit window", step{code: 429, header: map[string]string{"RateLimit": `"d";r=0`, "RateLimit-Policy": `"d";q=100;w=60`}}, time.Minute},
		{"RateLimit window of another policy", step{code: 200, header: map[string]string{"RateLimit": `"d";r=0`, "RateLimit-Policy": `"e";q=100;w=60`}}, 0},
		{"RateLimit token name", step{code: 200, header: map[string]string{"RateLimit": `default;r=0;t=3`}}, 3 * time.Second},
		{"RateLimit garbage", step{code: 200, header: map[string]string{"RateLimit": `"d";r=0;t=12,,`}}, 0},
		{"RateLimit and Retry-After", step{code: 429, header: map[string]string{"RateLimit": `"d";r=0;t=20`, "Retry-After": "10"}}, 20 * time.Second},
		{"X-RateLimit delta", step{code: 200, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "20"}}, 20 * time.Second},
		{"X-RateLimit decimal", step{code: 200, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1.5"}}, 1500 * time.Millisecond},
		{"X-RateLimit epoch", step{code: 403, header: map[string]string{"Date": httpDate(0), "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(date.Add(90*time.Second).Unix(), 10)}}, 90 * time.Second},
		{"X-RateLimit remaining", step{code: 200, header: map[string]string{"X-RateLimit-Remaining": "3", "X-RateLimit-Reset": "20"}}, 0},
		{"X-RateLimit garbage", step{code: 200, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1e3"}}, 0},
		{"RateLimit-Reset (draft)", step{code: 429, header: map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": "7"}}, 7 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := admittest.NewManualClock(admittest.Epoch)
			tr, _ := newTransport(t, clk, Config{})
			u := newUpstream(t, tc.step)
			code, err := get(context.Background(), tr, u.URL)
			if err != nil || code != tc.step.code {
				t.Fatalf("%d, %v", code, err)
			}
			if got := pausedFor(tr, u.host(t)); got != tc.paused {
				t.Errorf("paused for %v, want %v", got, tc.paused)
			}
		})
	}
}

func TestPausedHost(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	tr, _ := newTransport(t, clk, Config{MaxWait: 10 * time.Second})
	u := newUpstream(t, step{code: 429, header: map[string]string{"Retry-After": "30"}})
	other := newUpstream(t)
	if code, err := get(context.Background(), tr, u.URL); code != 429 || err != nil {
		t.Fatalf("%d, %v", code, err)
	}
	// 30s is past the maximum wait: fail at once, without sending.
	body := newBody("payload")
	req, _ := http.NewRequest(http.MethodPost, u.URL, body)
	_, err := tr.RoundTrip(req)
	if !errors.Is(err, admit.ErrWaitTooLong) || !errors.Is(err, ErrPaused) || !strings.Contains(err.Error(), "for the host's pause would pass the maximum wait 10s") {
		t.Fatalf("%v, want ErrWaitTooLong and ErrPaused", err)
	}
	if !body.closed.Load() {
		t.Error("the request body was not closed")
	}
	if u.hits.Load() != 1 || clk.Timers() != 0 {
		t.Errorf("%d hits, %d timers", u.hits.Load(), clk.Timers())
	}
	// Other hosts are not paused.
	if code, err := get(context.Background(), tr, other.URL); code != 200 || err != nil {
		t.Fatalf("other host: %d, %v", code, err)
	}
	// Within the maximum wait, a request waits for the end of the pause.
	clk.Advance(25 * time.Second)
	done := async(func() error { _, err := get(context.Background(), tr, u.URL); return err })
	blockUntilTimers(t, clk, 1)
	clk.Advance(5*time.Second - 1)
	notYet(t, done, "the request")
	clk.Advance(1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if u.hits.Load() != 2 {
		t.Errorf("%d hits", u.hits.Load())
	}
}

func TestDeadline(t *testing.T) {
	clk := admittest.NewManualClock(time.Now())
	tr, _ := newTransport(t, clk, Config{})
	u := newUpstream(t, step{code: 503, header: map[string]string{"Retry-After": "5"}})
	if _, err := get(context.Background(), tr, u.URL); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(5*time.Second))
	defer cancel()
	_, err := get(ctx, tr, u.URL)
	if !errors.Is(err, admit.ErrDeadline) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrPaused) || !strings.Contains(err.Error(), "would pass the request's deadline") {
		t.Fatalf("%v, want ErrDeadline", err)
	}
	if u.hits.Load() != 1 || clk.Timers() != 0 {
		t.Errorf("%d hits, %d timers", u.hits.Load(), clk.Timers())
	}
}

func TestLimiter(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	lim, err := admit.NewGCRA(admit.PerSecond(1), admit.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := newTransport(t, clk, Config{Limiter: lim, MaxWait: 2 * time.Second})
	a, b := newUpstream(t), newUpstream(t)
	if _, err := get(context.Background(), tr, a.URL); err != nil {
		t.Fatal(err)
	}
	// The limiter is shared by all hosts: the next request waits 1s.
	done := async(func() error { _, err := get(context.Background(), tr, b.URL); return err })
	blockUntilTimers(t, clk, 1)
	if b.hits.Load() != 0 {
		t.Fatal("sent before its token")
	}
	// Two more: one may wait 2s, the third would wait 3s: refused at once.
	second := async(func() error { _, err := get(context.Background(), tr, a.URL); return err })
	blockUntilTimers(t, clk, 2)
	if _, err := get(context.Background(), tr, a.URL); !errors.Is(err, admit.ErrWaitTooLong) || errors.Is(err, ErrPaused) || !strings.Contains(err.Error(), "for the rate limit would pass the maximum wait 2s") {
		t.Fatalf("%v, want ErrWaitTooLong alone", err)
	}
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	notYet(t, second, "the second waiter")
	clk.Advance(time.Second)
	if err := <-second; err != nil {
		t.Fatal(err)
	}

	// A waiter whose context ends gives its token back.
	ctx, cancel := context.WithCancel(context.Background())
	waiting := async(func() error { _, err := get(ctx, tr, a.URL); return err })
	blockUntilTimers(t, clk, 1)
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
	clk.Advance(time.Second)
	if _, err := get(context.Background(), tr, a.URL); err != nil || clk.Timers() != 0 {
		t.Fatalf("after a cancelled wait: %v, %d timers", err, clk.Timers())
	}
	if got := a.hits.Load() + b.hits.Load(); got != 4 {
		t.Errorf("%d requests sent, want 4", got)
	}

	// A limit that never admits fails at once.
	never, _ := admit.NewGCRA(admit.Limit{}, admit.Options{Clock: clk})
	tr2, _ := newTransport(t, clk, Config{Limiter: never})
	if _, err := get(context.Background(), tr2, a.URL); !errors.Is(err, admit.ErrWaitTooLong) || !strings.Contains(err.Error(), "the limiter never admits a request") {
		t.Fatalf("zero limit: %v", err)
	}
}

func TestHostLimit(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	tr, _ := newTransport(t, clk, Config{HostLimit: admit.PerMinute(1), MaxWait: -1})
	a := newUpstream(t, step{code: 429, header: map[string]string{"Retry-After": "1"}})
	b := newUpstream(t)
	for _, u := range []*upstream{a, b} {
		if _, err := get(context.Background(), tr, u.URL); err != nil {
			t.Fatal(err)
		}
	}
	// Each host has its own minute: both are spent, and a's pause is a's.
	for _, u := range []*upstream{a, b} {
		_, err := get(context.Background(), tr, u.URL)
		if !errors.Is(err, admit.ErrWaitTooLong) || !strings.Contains(err.Error(), "would pass the maximum wait") {
			t.Fatalf("%v, want ErrWaitTooLong", err)
		}
		if paused := errors.Is(err, ErrPaused); paused != (u == a) {
			t.Errorf("paused %v for %s", paused, u.URL)
		}
	}
	if pausedFor(tr, b.host(t)) != 0 || pausedFor(tr, a.host(t)) != time.Second {
		t.Error("pauses leaked between hosts")
	}
	clk.Advance(time.Minute)
	for _, u := range []*upstream{a, b} {
		if _, err := get(context.Background(), tr, u.URL); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMaxHosts(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	tr, _ := newTransport(t, clk, Config{HostLimit: admit.PerSecond(1), MaxHosts: 2, MaxWait: -1})
	us := []*upstream{newUpstream(t), newUpstream(t), newUpstream(t)}
	for _, u := range us[:2] {
		if _, err := get(context.Background(), tr, u.URL); err != nil {
			t.Fatal(err)
		}
	}
	// Both hosts have spent their token: neither can be forgotten.
	if _, err := get(context.Background(), tr, us[2].URL); !errors.Is(err, admit.ErrTooManyKeys) || !strings.Contains(err.Error(), "too many hosts, the maximum is 2") {
		t.Fatalf("%v, want ErrTooManyKeys for too many hosts", err)
	}
	// Once they are full again, they are forgotten for the new host.
	clk.Advance(time.Second)
	if _, err := get(context.Background(), tr, us[2].URL); err != nil {
		t.Fatal(err)
	}
	if n := tr.hosts.len(); n != 1 {
		t.Errorf("%d hosts held", n)
	}
	// A pause of a new host when the table is full is not recorded.
	tr2, _ := newTransport(t, clk, Config{MaxHosts: 1})
	p1 := newUpstream(t, step{code: 429, header: map[string]string{"Retry-After": "9"}})
	p2 := newUpstream(t, step{code: 429, header: map[string]string{"Retry-After": "9"}})
	for _, u := range []*upstream{p1, p2} {
		if code, err := get(context.Background(), tr2, u.URL); code != 429 || err != nil {
			t.Fatal(code, err)
		}
	}
	if pausedFor(tr2, p1.host(t)) != 9*time.Second || pausedFor(tr2, p2.host(t)) != 0 {
		t.Error("pauses beyond the cap")
	}
}

func TestRetries(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	u := newUpstream(t,
		step{code: 429, header: map[string]string{"Retry-After": "2"}, body: "slow down"},
		step{code: 503, body: "busy"},
	)
	tr, base := newTransport(t, clk, Config{Retries: 2})
	req, _ := http.NewRequest(http.MethodPut, u.URL, bytes.NewReader([]byte("the body")))
	req.Header.Set("Idempotency-Key", "k1")
	done := async(func() *http.Response {
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		return resp
	})
	// The first retry waits for Retry-After (2s, more than the backoff).
	blockUntilTimers(t, clk, 1)
	clk.Advance(2*time.Second - 1)
	notYet(t, done, "the first retry")
	clk.Advance(1)
	// The second waits for the backoff, at half of 200ms without jitter.
	blockUntilTimers(t, clk, 1)
	clk.Advance(100 * time.Millisecond)
	resp := <-done
	if resp == nil || resp.StatusCode != 200 {
		t.Fatalf("%v", resp)
	}
	resp.Body.Close()
	if got := u.sent(); len(got) != 3 || got[0] != "the body" || got[1] != "the body" || got[2] != "the body" {
		t.Errorf("bodies sent %q", got)
	}
	rs := base.responses()
	if len(rs) != 3 {
		t.Fatalf("%d responses", len(rs))
	}
	for i, r := range rs[:2] {
		if !r.closed.Load() || r.read.Load() == 0 {
			t.Errorf("discarded response %d: closed %v, read %d", i, r.closed.Load(), r.read.Load())
		}
	}
}

func TestNoRetry(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  func(url string) *http.Request
		code int
	}{
		{"POST", func(u string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader([]byte("x")))
			return r
		}, 429},
		{"body without GetBody", func(u string) *http.Request {
			r, _ := http.NewRequest(http.MethodPut, u, newBody("x"))
			r.Header.Set("Idempotency-Key", "k")
			return r
		}, 429},
		{"500", func(u string) *http.Request {
			r, _ := http.NewRequest(http.MethodGet, u, nil)
			return r
		}, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := admittest.NewManualClock(admittest.Epoch)
			u := newUpstream(t, step{code: tc.code})
			tr, _ := newTransport(t, clk, Config{Retries: 3})
			resp, err := tr.RoundTrip(tc.req(u.URL))
			if err != nil || resp.StatusCode != tc.code {
				t.Fatalf("%v, %v", resp, err)
			}
			resp.Body.Close()
			if u.hits.Load() != 1 {
				t.Errorf("%d attempts", u.hits.Load())
			}
		})
	}
	// A retry whose wait is too long is not made: the 429 comes back.
	clk := admittest.NewManualClock(admittest.Epoch)
	u := newUpstream(t, step{code: 429, header: map[string]string{"Retry-After": "60"}, body: "later"})
	tr, _ := newTransport(t, clk, Config{Retries: 3})
	req, _ := http.NewRequest(http.MethodGet, u.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 429 {
		t.Fatalf("%v, %v", resp, err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "later" {
		t.Errorf("body %q: the returned response must be intact", b)
	}
	resp.Body.Close()
	if u.hits.Load() != 1 || clk.Timers() != 0 {
		t.Errorf("%d attempts, %d timers", u.hits.Load(), clk.Timers())
	}
}

func TestRetryBudget(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	var steps []step
	for range 100 {
		steps = append(steps, step{code: 503})
	}
	u := newUpstream(t, steps...)
	// No retries from the ratio, 3 from the minimum, per 10s.
	tr, _ := newTransport(t, clk, Config{Retries: 5, RetryMin: 3, RetryWindow: 10 * time.Second, Backoff: -1})
	for range 10 {
		if code, err := get(context.Background(), tr, u.URL); code != 503 || err != nil {
			t.Fatal(code, err)
		}
	}
	if got := u.hits.Load(); got != 13 {
		t.Errorf("%d requests sent for 10 calls, want 13", got)
	}
	// The budget comes back with the window.
	clk.Advance(10 * time.Second)
	if code, err := get(context.Background(), tr, u.URL); code != 503 || err != nil {
		t.Fatal(code, err)
	}
	if got := u.hits.Load(); got != 13+4 {
		t.Errorf("%d requests, want 17", got)
	}
}

func TestBudget(t *testing.T) {
	b := newBudget(0.5, 0, 10*time.Second)
	for range 10 {
		b.request(0)
	}
	n := 0
	for b.retry(int64(5 * time.Second)) {
		n++
	}
	if n != 5 {
		t.Errorf("%d retries for 10 requests at 50%%", n)
	}
	// The requests leave the window after 10s (counted in tenths).
	if b.retry(int64(10 * time.Second)) {
		t.Error("retry without requests in the window")
	}
	b.request(int64(11 * time.Second))
	b.request(int64(11 * time.Second))
	if b.retry(int64(12 * time.Second)) {
		t.Error("the retries at 5s are still in the window at 12s")
	}
	if !b.retry(int64(16*time.Second)) || b.retry(int64(16*time.Second)) {
		t.Error("want exactly one retry for two requests")
	}
	// Instants before the time line's origin (a clock set back).
	b = newBudget(1, 0, time.Second)
	b.request(-1)
	if !b.retry(-1) || b.retry(-1) {
		t.Error("negative instants")
	}
}

func TestConcurrent(t *testing.T) {
	// On the system clock: every tenth response pauses the host for 1ms.
	lim, _ := admit.NewGCRA(admit.PerSecond(1_000_000))
	var steps []step
	for i := range 200 {
		s := step{code: 200}
		if i%10 == 0 {
			s.header = map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "0.001", "RateLimit": `"d";r=0;t=0`}
		}
		steps = append(steps, s)
	}
	u := newUpstream(t, steps...)
	v := newUpstream(t, step{code: 503}, step{code: 503})
	tr, err := New(nil, Config{Limiter: lim, HostLimit: admit.PerSecond(1_000_000), Retries: 1, Backoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				target := u.URL
				if (g+i)%2 == 0 {
					target = v.URL
				}
				if code, err := get(context.Background(), tr, target); (code != 200 && code != 503) || err != nil {
					t.Error(code, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := u.hits.Load() + v.hits.Load(); got < 200 || got > 202 {
		t.Errorf("%d requests, want 200 and up to 2 retries", got)
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{HostLimit: admit.Limit{Rate: -1}}, "HostLimit"},
		{Config{MaxHosts: -1}, "MaxHosts"},
		{Config{Retries: -1}, "Retries"},
		{Config{RetryRatio: -0.1, RetryMin: 1, RetryWindow: time.Second}, "RetryRatio"},
		{Config{RetryRatio: 11, RetryMin: 1, RetryWindow: time.Second}, "RetryRatio"},
		{Config{RetryRatio: math.NaN()}, "RetryRatio"},
		{Config{RetryRatio: 0.1, RetryMin: -1, RetryWindow: time.Second}, "RetryMin"},
		{Config{RetryRatio: 0.1, RetryMin: 1, RetryWindow: time.Microsecond}, "RetryWindow"},
		{Config{RetryWindow: -time.Second}, "RetryWindow"},
		{Config{MaxBackoff: -1}, "MaxBackoff"},
		{Config{Backoff: 2 * time.Second, MaxBackoff: time.Second}, "MaxBackoff"},
	} {
		tr, err := New(nil, tc.cfg)
		if !errors.Is(err, admit.ErrInvalidConfig) || tr != nil || !strings.Contains(err.Error(), "transport: "+tc.field) {
			t.Errorf("%+v: %v, want ErrInvalidConfig naming %s", tc.cfg, err, tc.field)
		}
	}
	// The zero Config gives the defaults.
	tr, err := New(nil, Config{})
	if err != nil || tr.base != http.DefaultTransport || tr.clock != admit.SystemClock ||
		tr.maxWait != 10*time.Second || tr.maxPause != 5*time.Minute || tr.hosts.max != 10000 ||
		tr.retries != 0 || tr.backoff != 100*time.Millisecond || tr.maxBackoff != 10*time.Second {
		t.Fatalf("%+v, %v", tr, err)
	}
	// A Backoff longer than the default MaxBackoff raises it.
	if tr, err := New(nil, Config{Backoff: time.Minute}); err != nil || tr.maxBackoff != time.Minute {
		t.Errorf("Backoff 1m: %+v, %v; want MaxBackoff 1m", tr, err)
	}
	tr, err = New(nil, Config{MaxPause: -1, MaxWait: -1})
	if err != nil || tr.maxPause != 0 || tr.maxWait != 0 {
		t.Fatalf("%+v, %v", tr, err)
	}
	// A negative MaxPause ignores pauses.
	u := newUpstream(t, step{code: 429, header: map[string]string{"Retry-After": "5"}})
	for _, want := range []int{429, 200} {
		if code, err := get(context.Background(), tr, u.URL); code != want || err != nil {
			t.Fatal(code, err)
		}
	}
	req := &http.Request{Body: newBody("x")}
	if _, err := tr.RoundTrip(req); err == nil || !req.Body.(*closeRecorder).closed.Load() {
		t.Errorf("nil URL: %v", err)
	}
}

func TestHostKey(t *testing.T) {
	for in, want := range map[string]string{
		"https://Example.COM:443/x": "example.com",
		"http://example.com:80/":    "example.com",
		"https://example.com:80/":   "example.com:80",
		"http://example.com:8080/":  "example.com:8080",
		"https://[2001:DB8::1]:443": "[2001:db8::1]",
		"http://127.0.0.1:9/":       "127.0.0.1:9",
	} {
		req, _ := http.NewRequest(http.MethodGet, in, nil)
		if got := hostKey(req.URL); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	tr, err := New(nopRT{}, Config{Backoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		k        int
		rnd      float64
		min, max time.Duration
	}{
		{1, 0, 50 * time.Millisecond, 50 * time.Millisecond},
		{1, 0.999, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 0, 100 * time.Millisecond, 100 * time.Millisecond},
		{4, 0.5, 600 * time.Millisecond, 600 * time.Millisecond},
		{5, 0, 500 * time.Millisecond, 500 * time.Millisecond},
		{1000, 0.999, 500 * time.Millisecond, time.Second},
	} {
		tr.random = func() float64 { return tc.rnd }
		if got := tr.backoffFor(tc.k); got < tc.min || got > tc.max {
			t.Errorf("retry %d, random %v: %v, want [%v, %v]", tc.k, tc.rnd, got, tc.min, tc.max)
		}
	}
	// A cap near the largest duration does not overflow.
	huge, _ := New(nopRT{}, Config{Backoff: time.Second, MaxBackoff: admit.InfDuration})
	huge.random = func() float64 { return 0 }
	for k := 1; k < 100; k++ {
		if got := huge.backoffFor(k); got <= 0 {
			t.Fatalf("retry %d: %v", k, got)
		}
	}
}

type idleCloser struct {
	nopRT
	closed int
}

func (c *idleCloser) CloseIdleConnections() { c.closed++ }

func TestCloseIdleConnections(t *testing.T) {
	base := &idleCloser{}
	tr, err := New(base, Config{})
	if err != nil {
		t.Fatal(err)
	}
	(&http.Client{Transport: tr}).CloseIdleConnections()
	if base.closed != 1 {
		t.Errorf("base closed its idle connections %d times", base.closed)
	}
	tr, _ = New(nopRT{}, Config{}) // a base without the method
	tr.CloseIdleConnections()
}
