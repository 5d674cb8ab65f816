package server

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/admit-go/admit/policy"
)

// TestRetryAfterMetric: every refusal admit serve answers is recorded in
// admit_retry_after_seconds{rule} with the retry time the client was
// given (jitter included); a refusal that can never be admitted gives
// none and is not recorded.
func TestRetryAfterMetric(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("domain: api\nrules:\n  - {name: slow, match: user, rate: 1/min}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withPolicy(p))
	check := func(hits int) (allowed bool, retryMS float64) {
		t.Helper()
		resp, err := http.Post("http://"+s.HTTPAddr().String()+"/v1/check", "application/json",
			strings.NewReader(`{"domain":"api","hits":`+strconv.Itoa(hits)+`,"descriptors":[{"entries":[{"key":"user","value":"u"}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out struct {
			Allowed  bool `json:"allowed"`
			Decision struct {
				RetryAfterMS float64 `json:"retry_after_ms"`
			} `json:"decision"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return out.Allowed, out.Decision.RetryAfterMS
	}
	check(1) // admitted
	var given []float64
	for range 3 {
		if allowed, ms := check(1); allowed || ms < 59_000 {
			t.Fatalf("a refusal: allowed %v, retry after %v ms", allowed, ms)
		} else {
			given = append(given, ms/1000)
		}
	}
	check(5) // above the burst: never
	mfs, err := s.registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var count uint64
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "admit_retry_after_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabel(m, "rule", "slow") {
				count, sum = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	want := given[0] + given[1] + given[2]
	if count != 3 || math.Abs(sum-want) > 0.003 {
		t.Errorf("admit_retry_after_seconds{rule=slow}: %d refusals summing %vs; the clients were told %v", count, sum, given)
	}
}
