package bench

// HTTP middleware side by side: the cost each library's net/http
// middleware adds to a request, keyed by the client address (RemoteAddr),
// in front of a handler that only writes a status. Each is given its
// in-memory store and its own documented way of keying by IP:
//
//   - admit: httplimit.New with a keyed.Limiter (GCRA) and RemoteIP; it
//     writes the IETF RateLimit and RateLimit-Policy fields and the three
//     X-RateLimit-* fields on every response;
//   - go-chi/httprate: LimitBy keyed by RemoteAddr through CanonicalizeIP
//     (sliding window counter); it
//     writes X-RateLimit-Limit, -Remaining and -Reset;
//   - sethvargo/go-limiter: httplimit.NewMiddleware with IPKeyFunc over a
//     memorystore (token bucket); X-RateLimit-* fields;
//   - ulule/limiter: the stdlib middleware over its memory store (fixed
//     window); X-RateLimit-* fields;
//   - throttled: HTTPRateLimiterCtx with VaryBy RemoteAddr over memstore
//     (GCRA); X-RateLimit-* fields.
//
// "admitted" uses a limit no run reaches; "refused" one that admits one
// request an hour, so every request after the first is refused (each
// library writes its own refusal: status, fields, a short body).

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	golimithttp "github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/keyed"
)

// nopWriter is a ResponseWriter that keeps only its header map, cleared
// and reused from request to request, so that the figures are the
// middleware's and not a recorder's.
type nopWriter struct {
	h    http.Header
	code int
}

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(code int)        { w.code = code }

// middlewares returns each library's middleware limiting each client
// address to n requests per period.
func middlewares(b *testing.B, n int, period time.Duration) []struct {
	name string
	wrap func(http.Handler) http.Handler
} {
	b.Helper()
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Name: "api"}, Limit: admit.Limit{Rate: int64(n), Period: period, Burst: int64(n)}})
	if err != nil {
		b.Fatal(err)
	}
	ours, err := httplimit.New(lim, httplimit.RemoteIP, httplimit.Config{})
	if err != nil {
		b.Fatal(err)
	}
	// go-limiter refuses now and then at a billion tokens a second (its
	// bucket counts whole ticks of its interval): give it the same rate
	// over an hour, as BenchmarkStoreOneKey does.
	tokens, interval := uint64(n), period
	if period < time.Hour {
		tokens, interval = tokens*uint64(time.Hour/period), time.Hour
	}
	st, err := memorystore.New(&memorystore.Config{Tokens: tokens, Interval: interval})
	if err != nil {
		b.Fatal(err)
	}
	gl, err := golimithttp.NewMiddleware(st, golimithttp.IPKeyFunc())
	if err != nil {
		b.Fatal(err)
	}
	ul := stdlib.NewMiddleware(limiter.New(memory.NewStore(), limiter.Rate{Period: period, Limit: int64(n)}))
	ms, err := memstore.NewCtx(0)
	if err != nil {
		b.Fatal(err)
	}
	// throttled admits MaxBurst+1 at once.
	rl, err := throttled.NewGCRARateLimiterCtx(ms, throttled.RateQuota{MaxRate: throttled.PerDuration(n, period), MaxBurst: n - 1})
	if err != nil {
		b.Fatal(err)
	}
	th := &throttled.HTTPRateLimiterCtx{RateLimiter: rl, VaryBy: &throttled.VaryBy{RemoteAddr: true}}
	return []struct {
		name string
		wrap func(http.Handler) http.Handler
	}{
		{"admit", ours.Handler},
		{"httprate", httprate.LimitBy(n, period, httprateIP)},
		{"go-limiter", gl.Handle},
		{"ulule", ul.Handler},
		{"throttled", th.RateLimit},
	}
}

// httprateIP keys a request by its RemoteAddr, as httprate's documentation
// recommends for servers clients connect to directly (its KeyByIP is
// deprecated for the cases behind a proxy).
func httprateIP(r *http.Request) (string, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return httprate.CanonicalizeIP(host), nil
}

func BenchmarkHTTPMiddleware(b *testing.B) {
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	req := httptest.NewRequest("GET", "/items", nil)
	req.RemoteAddr = "203.0.113.7:40000"
	run := func(b *testing.B, h http.Handler, want int) {
		w := &nopWriter{h: http.Header{}}
		h.ServeHTTP(w, req) // the first request: creates the key's state
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			clear(w.h)
			w.code = 0
			h.ServeHTTP(w, req)
		}
		if w.code != want {
			b.Fatalf("status %d, want %d", w.code, want)
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, bare, http.StatusOK) })
	for _, m := range middlewares(b, highRate, time.Second) {
		b.Run("admitted/"+m.name, func(b *testing.B) { run(b, m.wrap(bare), http.StatusOK) })
	}
	for _, m := range middlewares(b, 1, time.Hour) {
		b.Run("refused/"+m.name, func(b *testing.B) { run(b, m.wrap(bare), http.StatusTooManyRequests) })
	}
}
