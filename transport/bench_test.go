package transport

import (
	"net/http"
	"testing"

	"github.com/admit-go/admit"
)

// nopRT answers every request with the same empty 200, at once.
type nopRT struct{}

var okResp = &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}

func (nopRT) RoundTrip(*http.Request) (*http.Response, error) { return okResp, nil }

// BenchmarkRoundTrip measures a Transport's overhead: compare each case
// with "bare", the no-op base transport called directly.
func BenchmarkRoundTrip(b *testing.B) {
	req, err := http.NewRequest(http.MethodGet, "https://api.example.com/v1/items", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = nopRT{}.RoundTrip(req)
		}
	})
	lim, _ := admit.NewGCRA(admit.PerSecond(1_000_000_000))
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no limits", Config{}},
		{"limiter", Config{Limiter: lim}},
		{"host limit", Config{HostLimit: admit.PerSecond(1_000_000_000)}},
		{"limiter+host+retries", Config{Limiter: lim, HostLimit: admit.PerSecond(1_000_000_000), Retries: 2}},
	} {
		tr, err := New(nopRT{}, tc.cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	h := http.Header{}
	h.Set("RateLimit", `"default";r=0;t=30`)
	h.Set("RateLimit-Policy", `"default";q=100;w=60`)
	h.Set("Retry-After", "30")
	b.Run("pauseOf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d, ok := pauseOf(h, 429, fuzzRef); !ok || d == 0 {
				b.Fatal(d, ok)
			}
		}
	})
}
