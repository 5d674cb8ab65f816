package httplimit

import (
	"encoding/json"
	"strings"
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
		b := appendDetail([]byte("x"), &tc.d, policyName(tc.d.Rule), tc.secs)
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
				var opts []Option
				if problem {
					opts = append(opts, WithProblemJSON("", ""))
				}
				lim := &stub{d: admit.Decision{Limit: admit.PerSecond(5), RetryAfter: 1500 * time.Millisecond, Rule: rule, Kind: kind}}
				w := do(mustNew(t, lim, RemoteIP, opts...).Handler(&okHandler{}), "/", "")
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
				if problem && (body["status"] != 429.0 || body["type"] != QuotaExceeded || body["title"] != "Quota Exceeded") {
					t.Errorf("problem %v", body)
				}
			}
		}
	}
}
