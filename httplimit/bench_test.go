package httplimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/keyed"
)

// benchWriter is a minimal reusable ResponseWriter, so that the benchmarks
// measure the middleware and not httptest.ResponseRecorder. net/http's own
// writer makes a header map per response; this one clears and reuses its
// map, so the figures are the middleware's allocations beyond net/http's.
type benchWriter struct {
	h      http.Header
	status int
	n      int
}

func newBenchWriter() *benchWriter { return &benchWriter{h: make(http.Header)} }

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(s int)   { w.status = s }
func (w *benchWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	w.n += len(b)
	return len(b), nil
}
func (w *benchWriter) WriteString(s string) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	w.n += len(s)
	return len(s), nil
}
func (w *benchWriter) reset() { clear(w.h); w.status = 0 }

// bareHandler is the handler the middleware wraps: it writes a short body.
var bareHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = w.Write([]byte("ok"))
})

// jsonHandler is the smallest handler of a JSON API: a Content-Type and a
// short body.
var jsonHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(jsonBody)
})

var jsonBody = []byte(`{"id":1,"name":"item"}`)

func benchRequest() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/items/1", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	return r
}

func runBench(b *testing.B, h http.Handler, r *http.Request, status int) {
	w := newBenchWriter()
	h.ServeHTTP(w, r) // warm up: the key is stored
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.reset()
		h.ServeHTTP(w, r)
	}
	b.StopTimer()
	if w.status != status {
		b.Fatalf("status %d, want %d", w.status, status)
	}
}

// generous is a limit no benchmark reaches: 1e9/s.
var generous = admit.Limit{Rate: 1e9, Period: time.Second, Burst: 1e9}

func benchLimiter(b *testing.B, l admit.Limit) *keyed.Limiter {
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Name: "api"}, Limit: l})
	if err != nil {
		b.Fatal(err)
	}
	return lim
}

// BenchmarkBare is the handler alone: the baseline of the others.
func BenchmarkBare(b *testing.B) {
	runBench(b, bareHandler, benchRequest(), 200)
}

// BenchmarkBareJSON is the JSON handler alone.
func BenchmarkBareJSON(b *testing.B) {
	runBench(b, jsonHandler, benchRequest(), 200)
}

// BenchmarkAdmittedJSON is BenchmarkAdmitted with the JSON handler.
func BenchmarkAdmittedJSON(b *testing.B) {
	m := mustNew(b, benchLimiter(b, generous), RemoteIP, Config{})
	runBench(b, m.Handler(jsonHandler), benchRequest(), 200)
}

// BenchmarkLimiterAlone is the keyed limiter's decision alone.
func BenchmarkLimiterAlone(b *testing.B) {
	lim := benchLimiter(b, generous)
	r := benchRequest()
	b.ReportAllocs()
	for range b.N {
		if d, _ := lim.Allow(r.Context(), admit.Request{Key: "192.0.2.1", N: 1}); !d.Allowed {
			b.Fatal("refused")
		}
	}
}

// BenchmarkAdmitted is an admitted request through one local GCRA layer,
// keyed by the client address, with both dialects of fields.
func BenchmarkAdmitted(b *testing.B) {
	m := mustNew(b, benchLimiter(b, generous), RemoteIP, Config{})
	runBench(b, m.Handler(bareHandler), benchRequest(), 200)
}

// BenchmarkAdmittedNoFields: the same without rate-limit fields.
func BenchmarkAdmittedNoFields(b *testing.B) {
	m := mustNew(b, benchLimiter(b, generous), RemoteIP, Config{Fields: NoFields})
	runBench(b, m.Handler(bareHandler), benchRequest(), 200)
}

// BenchmarkRefused is a refused request: fields, Retry-After and the JSON
// body, without the handler.
func BenchmarkRefused(b *testing.B) {
	m := mustNew(b, benchLimiter(b, admit.Every(time.Hour)), RemoteIP, Config{})
	runBench(b, m.Handler(bareHandler), benchRequest(), 429)
}

// BenchmarkRefusedVarying is BenchmarkRefused with a RetryAfter one
// second longer than the previous refusal's, so that the field values are
// built anew: a refusal that misses its answer's memo.
func BenchmarkRefusedVarying(b *testing.B) {
	m := mustNew(b, &shifting{KeyedLimiter: benchLimiter(b, admit.Every(time.Hour))}, RemoteIP, Config{})
	runBench(b, m.Handler(bareHandler), benchRequest(), 429)
}

// BenchmarkRefusedRules is BenchmarkRefusedVarying with the Rule taken in
// turn from answerCacheSize+1 names, so that every answer is built anew
// too: a runaway set of rules.
func BenchmarkRefusedRules(b *testing.B) {
	rules := make([]string, answerCacheSize+1)
	for i := range rules {
		rules[i] = "rule" + strconv.Itoa(i)
	}
	m := mustNew(b, &shifting{KeyedLimiter: benchLimiter(b, admit.Every(time.Hour)), rules: rules}, RemoteIP, Config{})
	runBench(b, m.Handler(bareHandler), benchRequest(), 429)
}

// shifting wraps a limiter: each decision's RetryAfter is made one second
// longer than the last one's (cycling over an hour), and its Rule is taken
// in turn from rules, if any.
type shifting struct {
	admit.KeyedLimiter
	i     int64
	rules []string
}

func (s *shifting) Allow(ctx context.Context, req admit.Request) (admit.Decision, error) {
	d, err := s.KeyedLimiter.Allow(ctx, req)
	s.i++
	d.RetryAfter += time.Duration(s.i%3600) * time.Second
	if len(s.rules) > 0 {
		d.Rule = s.rules[s.i%int64(len(s.rules))]
	}
	return d, err
}

// BenchmarkRefusedProblem: a refusal with problem details.
func BenchmarkRefusedProblem(b *testing.B) {
	m := mustNew(b, benchLimiter(b, admit.Every(time.Hour)), RemoteIP, Config{ProblemJSON: true})
	runBench(b, m.Handler(bareHandler), benchRequest(), 429)
}

// BenchmarkExempt is a request on an exempt path.
func BenchmarkExempt(b *testing.B) {
	m := mustNew(b, benchLimiter(b, generous), RemoteIP, Config{ExemptPaths: []string{"/healthz"}, ExemptPrefixes: []string{"/metrics"}})
	r := benchRequest()
	r.URL.Path = "/healthz"
	runBench(b, m.Handler(bareHandler), r, 200)
}

// BenchmarkAdmittedTrustedProxy keys by X-Forwarded-For behind a trusted
// proxy.
func BenchmarkAdmittedTrustedProxy(b *testing.B) {
	c, err := NewClientIP(ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	if err != nil {
		b.Fatal(err)
	}
	m := mustNew(b, benchLimiter(b, generous), c.Key, Config{})
	r := benchRequest()
	r.RemoteAddr = "10.0.0.2:5"
	r.Header.Set("X-Forwarded-For", "198.51.100.7, 192.0.2.1, 10.0.0.9")
	runBench(b, m.Handler(bareHandler), r, 200)
}

// BenchmarkAdmittedChain is an admitted request through a chain of a
// per-client rate limit and a global concurrency cap (a Held from the
// pool).
func BenchmarkAdmittedChain(b *testing.B) {
	cl := newBenchSlots(1 << 20)
	chain, err := compose.All(compose.Layer{Limiter: benchLimiter(b, generous)}, compose.Layer{Slots: cl})
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewChain(chain, []KeyFunc{RemoteIP, Const("")}, Config{})
	if err != nil {
		b.Fatal(err)
	}
	runBench(b, m.Handler(bareHandler), benchRequest(), 200)
}

// benchSlots is an allocation-free admit.Slots: a counter.
type benchSlots struct {
	max, used int64
	rel       benchRelease
}

type benchRelease struct{ s *benchSlots }

func (r benchRelease) Release() { r.s.used-- }

func newBenchSlots(max int64) *benchSlots {
	s := &benchSlots{max: max}
	s.rel = benchRelease{s}
	return s
}

func (s *benchSlots) TryAcquire(_ context.Context, req admit.Request) (admit.Releaser, admit.Decision, error) {
	n := req.N
	d := admit.Decision{Limit: admit.Limit{Rate: s.max, Burst: s.max}, Kind: admit.KindConcurrency, Rule: "inflight"}
	if s.used+n > s.max {
		return nil, d, nil
	}
	s.used += n
	d.Allowed, d.Remaining = true, s.max-s.used
	return s.rel, d, nil
}

// BenchmarkKeys measures the key functions alone.
func BenchmarkKeys(b *testing.B) {
	fwd, err := NewClientIP(ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, ProxyHeader: "Forwarded"})
	if err != nil {
		b.Fatal(err)
	}
	xff, err := NewClientIP(ClientIPConfig{TrustedHops: 2})
	if err != nil {
		b.Fatal(err)
	}
	r := benchRequest()
	r.RemoteAddr = "10.0.0.2:5"
	r.Header.Set("Forwarded", `for=198.51.100.7, for="[2001:db8:cafe::17]:4711";proto=https, for=10.0.0.9`)
	r.Header.Set("X-Forwarded-For", "198.51.100.7, 192.0.2.1, 10.0.0.9")
	r.Header.Set("Authorization", "Bearer 0123456789abcdef")
	for _, k := range []struct {
		name string
		key  KeyFunc
	}{
		{"RemoteIP", RemoteIP},
		{"XForwardedForHops", xff.Key},
		{"ForwardedIPv6", fwd.Key},
		{"APIKey", Bearer()},
		{"HashedAPIKey", Hashed(Bearer())},
		{"Join", Join(xff.Key, Method())},
	} {
		b.Run(k.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := k.key(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLimiterAloneRefused is the keyed limiter's refusal alone.
func BenchmarkLimiterAloneRefused(b *testing.B) {
	lim := benchLimiter(b, admit.Every(time.Hour))
	r := benchRequest()
	lim.Allow(r.Context(), admit.Request{Key: "192.0.2.1", N: 1})
	b.ReportAllocs()
	for range b.N {
		if d, _ := lim.Allow(r.Context(), admit.Request{Key: "192.0.2.1", N: 1}); d.Allowed {
			b.Fatal("admitted")
		}
	}
}
