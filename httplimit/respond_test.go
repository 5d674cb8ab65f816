package httplimit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admit-go/admit"
)

func TestAppendDetail(t *testing.T) {
	for _, tc := range []struct {
		d    admit.Decision
		secs int64
		want string
	}{
		{admit.Decision{Rule: "api"}, 2, `Rate limit "api" exceeded; retry after 2 seconds.`},
		{admit.Decision{Rule: "conns", Kind: admit.KindConcurrency}, 1, `Concurrency limit "conns" reached; retry after 1 second.`},
		{admit.Decision{Rule: "daily", Kind: admit.KindQuota}, 3600, `Quota "daily" exhausted; retry after 3600 seconds.`},
		{admit.Decision{Rule: "api/fail-closed"}, 1, `The rate limiter is unavailable; retry after 1 second.`},
		{admit.Decision{Rule: `a"b\` + "\x01\xff"}, 5, "Rate limit \"a\"b\\\x01\ufffd\" exceeded; retry after 5 seconds."},
	} {
		b := appendDetailTail(appendDetailHead([]byte("x"), &tc.d, policyName(tc.d.Rule)), tc.secs)
		if b[0] != 'x' {
			t.Fatalf("prefix lost: %q", b)
		}
		var got string
		if err := json.Unmarshal(b[1:], &got); err != nil || got != tc.want {
			t.Errorf("detail %s: %q, %v; want %q", b[1:], got, err, tc.want)
		}
	}
}

// TestBodiesAreJSON: every refusal body parses as JSON with the members
// the documentation names, whatever the Rule.
func TestBodiesAreJSON(t *testing.T) {
	for _, problem := range []bool{false, true} {
		for _, rule := range []string{"", "api", `we"ird\` + "\n\u2028\xfe", strings.Repeat("r", 500)} {
			for _, kind := range []admit.Kind{admit.KindRate, admit.KindConcurrency, admit.KindQuota} {
				lim := &stub{d: admit.Decision{Limit: admit.PerSecond(5), RetryAfter: 1500 * time.Millisecond, Rule: rule, Kind: kind}}
				w := do(mustNew(t, lim, RemoteIP, Config{ProblemJSON: problem}).Handler(&okHandler{}), "/", "")
				var body map[string]any
				if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
					t.Fatalf("%q: %v", w.Body.String(), err)
				}
				if body["code"] != "RATE_LIMIT" || body["limit_dim"] != policyName(rule) && plain(rule) || body["retry_after_ms"] != 1500.0 {
					t.Errorf("body %v", body)
				}
				if _, ok := body["kind"]; ok != (kind != admit.KindRate) {
					t.Errorf("kind %v in %v", kind, body)
				}
				if problem && (body["status"] != 429.0 || body["type"] != "https://iana.org/assignments/http-problem-types#quota-exceeded" || body["title"] != "Quota Exceeded") {
					t.Errorf("problem %v", body)
				}
			}
		}
	}
}

// wantFields is the oracle of the fields and body of a decision of a rate
// limit of whole seconds, both dialects, with a plain Rule.
func wantFields(d admit.Decision) (map[string]string, string) {
	secs := func(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }
	q := d.Limit.Burst
	w := secs(time.Duration(q) * d.Limit.Period / time.Duration(d.Limit.Rate))
	h := map[string]string{
		"RateLimit-Policy":      fmt.Sprintf(`%q;q=%d;w=%d`, d.Rule, q, w),
		"X-RateLimit-Limit":     fmt.Sprint(q),
		"X-RateLimit-Remaining": fmt.Sprint(d.Remaining),
		"X-RateLimit-Reset":     fmt.Sprint(secs(d.ResetAfter)),
	}
	if d.Allowed {
		h["RateLimit"] = fmt.Sprintf(`%q;r=%d;t=%d`, d.Rule, d.Remaining, secs(d.ResetAfter))
		h["Content-Type"] = "text/plain"
		return h, okBody
	}
	h["RateLimit"] = fmt.Sprintf(`%q;r=%d;t=%d`, d.Rule, d.Remaining, secs(d.RetryAfter))
	h["Retry-After"] = fmt.Sprint(secs(d.RetryAfter))
	h["Content-Type"] = "application/json"
	return h, fmt.Sprintf(`{"code":"RATE_LIMIT","limit_dim":%q,"retry_after_ms":%d}`+"\n", d.Rule, d.RetryAfter.Milliseconds())
}

// TestAnswerCache: a Middleware answers decisions of many rules and limits
// (more than the cache holds, each several times, admitted and refused)
// exactly as the oracle says; the cache keeps at most answerCacheSize
// answers, and finds an answer by Rule, Limit, Kind and status.
func TestAnswerCache(t *testing.T) {
	st := &stub{}
	m := mustNew(t, st, RemoteIP, Config{})
	h := m.Handler(&okHandler{})
	const n = 3 * answerCacheSize
	for round := range 3 {
		for i := range n {
			d := admit.Decision{
				Allowed:    (i+round)%4 == 0,
				Limit:      admit.PerMinute(int64(10 + i%5)),
				Remaining:  int64(i % 3),
				RetryAfter: time.Duration(i+round+1)*time.Second - time.Millisecond,
				ResetAfter: time.Duration(i%7+1) * time.Second,
				// Rules repeat with other limits: i%(n/2) names each
				// rule twice, with limits i%5 apart.
				Rule: "rule-" + strconv.Itoa(i%(n/2)),
			}
			st.d = d
			want, body := wantFields(d)
			status := 429
			if d.Allowed {
				status = 200
			}
			checkResponse(t, do(h, "/", ""), status, want, body)
		}
	}
	seen := map[*answer]bool{}
	for i := range m.answers.slots {
		if a := m.answers.slots[i].Load(); a != nil {
			seen[a] = true
		}
	}
	if len(seen) != answerCacheSize {
		t.Errorf("%d answers cached, want %d", len(seen), answerCacheSize)
	}

	d := admit.Decision{Limit: admit.PerSecond(3), Rule: "x"}
	a := m.answerFor(&d, 429)
	if m.answerFor(&d, 429) != a || m.answerFor(&d, 0) != a {
		t.Error("the same decision got another answer")
	}
	for _, o := range []admit.Decision{
		{Limit: admit.PerSecond(4), Rule: "x"},
		{Limit: admit.PerSecond(3), Rule: "y"},
		{Limit: admit.PerSecond(3), Rule: "x", Kind: admit.KindQuota},
	} {
		if m.answerFor(&o, 429) == a {
			t.Errorf("%+v got the answer of %+v", o, d)
		}
	}
	if m.answerFor(&d, 503) == a {
		t.Error("status 503 got the answer of 429")
	}
	if a.rule != "x" || a.limit != d.Limit || a.status != 429 || a.policy[0] != `"x";q=3;w=1` || a.limitV[0] != "3" || a.rlHead != `"x";r=` {
		t.Errorf("answer %+v", a)
	}
}

// TestRefusalValuesShared: the field values a refusal shares with later
// refusals cannot be changed through Header.Add, and the handler and a
// RefusalHandler, which may write into their header's slices, get slices
// of their own.
func TestRefusalValuesShared(t *testing.T) {
	lim, _ := gcra(t, admit.Every(time.Minute), "api")
	mw := mustNew(t, lim, RemoteIP, Config{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw.Handler(&okHandler{}).ServeHTTP(w, r)
		for k := range w.Header() {
			w.Header().Add(k, "added")
		}
	})
	do(h, "/", "")
	want := map[string]string{
		"Content-Type":          "application/json",
		"RateLimit-Policy":      `"api";q=1;w=60`,
		"RateLimit":             `"api";r=0;t=60`,
		"Retry-After":           "60",
		"X-RateLimit-Limit":     "1",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "60",
	}
	body := `{"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":60000}` + "\n"
	for range 3 {
		w := httptest.NewRecorder()
		mw.Handler(&okHandler{}).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		checkResponse(t, w, 429, want, body)
		w = do(h, "/", "")
		if got := w.Header()["Retry-After"]; len(got) != 2 || got[0] != "60" || got[1] != "added" {
			t.Errorf("Retry-After %q", got)
		}
	}

	lim, _ = gcra(t, admit.Every(time.Minute), "api")
	var seen []string
	rh := mustNew(t, lim, RemoteIP, Config{RefusalHandler: func(w http.ResponseWriter, r *http.Request, d admit.Decision, status int) {
		for _, k := range []string{"Ratelimit-Policy", "Ratelimit", "Retry-After", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"} {
			v := w.Header()[k]
			seen = append(seen, strings.Join(v, ","))
			v[0] = "tampered"
		}
		w.WriteHeader(status)
	}}).Handler(&okHandler{})
	do(rh, "/", "")
	do(rh, "/", "")
	do(rh, "/", "")
	if got := strings.Join(seen, " "); got != `"api";q=1;w=60 "api";r=0;t=60 60 1 0 60 "api";q=1;w=60 "api";r=0;t=60 60 1 0 60` {
		t.Errorf("the RefusalHandler saw %s", got)
	}

	lim, _ = gcra(t, admit.PerMinute(10), "api")
	seen = nil
	ah := mustNew(t, lim, RemoteIP, Config{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, k := range []string{"Ratelimit-Policy", "X-Ratelimit-Limit"} {
			v := w.Header()[k]
			seen = append(seen, strings.Join(v, ","))
			v[0] = "tampered"
		}
	}))
	do(ah, "/", "")
	do(ah, "/", "")
	if got := strings.Join(seen, " "); got != `"api";q=10;w=60 10 "api";q=10;w=60 10` {
		t.Errorf("the handler saw %s", got)
	}
}

// byKey is a limiter whose decision is a function of the key "i": refused,
// RetryAfter i s, Rule "r<i%k>".
type byKey struct{ rules int }

func (b byKey) Allow(_ context.Context, req admit.Request) (admit.Decision, error) {
	key := req.Key
	i, err := strconv.Atoi(key)
	if err != nil {
		return admit.Decision{}, err
	}
	return admit.Decision{
		Limit:      admit.PerMinute(100),
		RetryAfter: time.Duration(i) * time.Second,
		ResetAfter: time.Minute,
		Rule:       "r" + strconv.Itoa(i%b.rules),
	}, nil
}

// TestRefusalsConcurrent: refusals of many rules and numbers at once (the
// answers are evicted and the memos replaced while others read them) each
// get their own decision's fields and body.
func TestRefusalsConcurrent(t *testing.T) {
	h := mustNew(t, byKey{rules: answerCacheSize + 3}, Header("X-Key"), Config{}).Handler(&okHandler{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for j := range 300 {
				i := 1 + (g*7+j)%40
				d, _ := byKey{rules: answerCacheSize + 3}.Allow(context.Background(), admit.Request{Key: strconv.Itoa(i), N: 1})
				want, body := wantFields(d)
				checkResponse(t, do(h, "/", "", "X-Key", strconv.Itoa(i)), 429, want, body)
			}
		})
	}
	wg.Wait()
}

// TestRefusalMemo: refusals under one answer whose numbers change one at
// a time (Remaining, RetryAfter, ResetAfter) or not at all each get their
// own values.
func TestRefusalMemo(t *testing.T) {
	st := &stub{}
	h := mustNew(t, st, RemoteIP, Config{}).Handler(&okHandler{})
	d := admit.Decision{Limit: admit.PerMinute(100), RetryAfter: 1500 * time.Millisecond, ResetAfter: 30 * time.Second, Rule: "api"}
	for i, change := range []func(*admit.Decision){
		func(*admit.Decision) {},
		func(*admit.Decision) {},
		func(d *admit.Decision) { d.Remaining = 1 },
		func(d *admit.Decision) { d.RetryAfter += time.Second },
		func(d *admit.Decision) { d.RetryAfter += time.Millisecond },
		func(d *admit.Decision) { d.ResetAfter += time.Second },
		func(d *admit.Decision) { d.Remaining = 0 },
		func(d *admit.Decision) { d.ResetAfter = d.RetryAfter },
		func(*admit.Decision) {},
	} {
		change(&d)
		st.d = d
		want, body := wantFields(d)
		w := do(h, "/", "")
		checkResponse(t, w, 429, want, body)
		if t.Failed() {
			t.Fatalf("step %d: %+v", i, d)
		}
	}
}

// TestRefusalsOverHTTP: refusals whose field values are shared, served at
// once by net/http's server (over HTTP/1.1 and HTTP/2), which reads them
// without writing into them.
func TestRefusalsOverHTTP(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		lim, _ := gcra(t, admit.Every(time.Minute), "api")
		srv := httptest.NewUnstartedServer(mustNew(t, lim, Const("all"), Config{}).Handler(&okHandler{}))
		srv.EnableHTTP2 = h2
		srv.StartTLS()
		refuseOverHTTP(t, srv, h2)
		srv.Close()
	}
}

func refuseOverHTTP(t *testing.T, srv *httptest.Server, h2 bool) {
	c := srv.Client()
	get := func() (*http.Response, string) {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Error(err)
			return nil, ""
		}
		defer resp.Body.Close()
		var b strings.Builder
		if _, err := io.Copy(&b, resp.Body); err != nil {
			t.Error(err)
		}
		return resp, b.String()
	}
	if resp, _ := get(); resp == nil || resp.StatusCode != 200 {
		t.Fatal("the first request was not admitted")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				resp, body := get()
				if resp == nil {
					return
				}
				if resp.StatusCode != 429 || (resp.ProtoMajor == 2) != h2 || body != `{"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":60000}`+"\n" ||
					resp.Header.Get("Retry-After") != "60" || resp.Header.Get("RateLimit") != `"api";r=0;t=60` ||
					resp.Header.Get("RateLimit-Policy") != `"api";q=1;w=60` || resp.Header.Get("X-RateLimit-Reset") != "60" ||
					resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("%s %d %v %q", resp.Proto, resp.StatusCode, resp.Header, body)
				}
			}
		})
	}
	wg.Wait()
}
