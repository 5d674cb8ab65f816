package httplimit

import (
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// fixedDecider decides every request with d.
type fixedDecider struct{ d admit.Decision }

func (f fixedDecider) Decide(*http.Request, *compose.Held) (admit.Decision, error) { return f.d, nil }

// TestFieldValues: FieldValues gives exactly the values the middleware
// writes, for admissions and refusals of every kind.
func TestFieldValues(t *testing.T) {
	rate := admit.Limit{Rate: 100, Period: time.Minute, Burst: 20}
	odd := admit.Limit{Rate: 3, Period: 7 * time.Second, Burst: 5}
	decisions := []admit.Decision{
		{Allowed: true, Limit: rate, Remaining: 7, ResetAfter: 1500 * time.Millisecond, Rule: "api"},
		{Allowed: false, Limit: rate, RetryAfter: 250 * time.Millisecond, ResetAfter: 12 * time.Second, Rule: "api"},
		{Allowed: false, Limit: rate, RetryAfter: admit.InfDuration, Rule: `we"ird\rule é`},
		{Allowed: true, Limit: odd, Remaining: 4, ResetAfter: time.Second},
		{Allowed: false, Limit: odd, ResetAfter: time.Hour, Rule: "zero-wait"},
		{Allowed: true, Limit: admit.Limit{Rate: 10, Burst: 10}, Remaining: 3, Kind: admit.KindConcurrency, Rule: "slots"},
		{Allowed: false, Limit: admit.Limit{Rate: 10, Burst: 10}, Kind: admit.KindConcurrency, RetryAfter: time.Second, Rule: "slots"},
		{Allowed: false, Limit: admit.Limit{Rate: 1000, Period: 24 * time.Hour, Burst: 1000}, Kind: admit.KindQuota, RetryAfter: 5 * time.Hour, ResetAfter: 5 * time.Hour, Rule: "daily"},
		{Allowed: true, Limit: admit.Limit{Rate: 1 << 60, Period: time.Hour, Burst: 1 << 60}, Remaining: math.MaxInt64, ResetAfter: 1 << 62, Rule: "huge"},
	}
	for i, d := range decisions {
		m, err := NewDecider(fixedDecider{d}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		pol, state, retry, ok := FieldValues(&d)
		if !ok {
			t.Fatalf("decision %d: no fields", i)
		}
		h := w.Header()
		if h.Get("RateLimit-Policy") != pol || h.Get("RateLimit") != state || h.Get("Retry-After") != retry {
			t.Errorf("decision %d: FieldValues %q %q %q; middleware wrote %q %q %q",
				i, pol, state, retry, h.Get("RateLimit-Policy"), h.Get("RateLimit"), h.Get("Retry-After"))
		}
	}
	if _, _, _, ok := FieldValues(&admit.Decision{Allowed: true, Limit: admit.Unlimited}); ok {
		t.Error("an unlimited decision has fields")
	}
}
