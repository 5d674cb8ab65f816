package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/admit-go/admit/policy"
)

// apiBenchWriter is a ResponseWriter reused from request to request, as a
// server's would be, so that the benchmarks measure the API.
type apiBenchWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *apiBenchWriter) Header() http.Header         { return w.h }
func (w *apiBenchWriter) WriteHeader(code int)        { w.status = code }
func (w *apiBenchWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

func (w *apiBenchWriter) reset() {
	clear(w.h)
	w.status, w.n = 200, 0
}

// apiBench serves body to path b.N times and checks the status.
func apiBench(b *testing.B, a *API, path, body string, status int) {
	b.Helper()
	r := httptest.NewRequest(http.MethodPost, path, nil)
	r.Header.Set("Content-Type", "application/json")
	rd := strings.NewReader(body)
	r.Body = io.NopCloser(rd)
	w := &apiBenchWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rd.Reset(body)
		w.reset()
		a.ServeHTTP(w, r)
		if w.status != status {
			b.Fatalf("status %d", w.status)
		}
	}
}

func apiBenchAPI(b *testing.B, yaml string) *API {
	b.Helper()
	p, err := policy.Parse("p.yaml", []byte(yaml))
	if err != nil {
		b.Fatal(err)
	}
	e, err := policy.NewEngine(p, storesOf(nil, nil))
	if err != nil {
		b.Fatal(err)
	}
	src := new(Engines)
	src.Set(e)
	a, err := newAPI(src)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close(); _ = e.Close() })
	return a
}

const apiBenchPolicy = `
domain: api
rules:
  - name: per-user
    match: user
    rate: 1000000000/s
  - name: per-tenant
    match: tenant
    rate: 1000000000/s
  - name: closed
    match: blocked
    rate: 1/h
  - name: jobs
    match: job
    concurrency: 1000000
`

// BenchmarkAPICheck: POST /v1/check of two descriptors, admitted, on the
// in-memory engine.
func BenchmarkAPICheck(b *testing.B) {
	a := apiBenchAPI(b, apiBenchPolicy)
	apiBench(b, a, "/v1/check", apiCheckBody("api", "user=alice", "tenant=acme"), http.StatusOK)
}

// BenchmarkAPICheckRefused: POST /v1/check refused (200 with the
// refusal).
func BenchmarkAPICheckRefused(b *testing.B) {
	a := apiBenchAPI(b, apiBenchPolicy)
	apiBench(b, a, "/v1/check", apiCheckBody("api", "blocked=x"), http.StatusOK)
}

// BenchmarkAPIAcquireRelease: POST /v1/acquire then /v1/release.
func BenchmarkAPIAcquireRelease(b *testing.B) {
	a := apiBenchAPI(b, apiBenchPolicy)
	body := apiCheckBody("api", "job=x")
	r := httptest.NewRequest(http.MethodPost, "/v1/acquire", nil)
	rd := strings.NewReader(body)
	r.Body = io.NopCloser(rd)
	rel := httptest.NewRequest(http.MethodPost, "/v1/release", nil)
	relBody := bytes.NewReader(nil)
	rel.Body = io.NopCloser(relBody)
	w := &apiBenchWriter{h: http.Header{}}
	rec := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		rec.Body.Reset()
		a.ServeHTTP(rec, r)
		out := rec.Body.Bytes()
		i := bytes.Index(out, []byte(`"lease_id":"`))
		if i < 0 {
			b.Fatalf("no lease: %s", out)
		}
		id := out[i+12 : i+44]
		relBody.Reset(append(append([]byte(`{"lease_id":"`), id...), `"}`...))
		w.reset()
		a.ServeHTTP(w, rel)
		if w.status != http.StatusOK {
			b.Fatalf("release: %d", w.status)
		}
	}
}

// BenchmarkAPIEnvoyJSON: POST /json, admitted.
func BenchmarkAPIEnvoyJSON(b *testing.B) {
	a := apiBenchAPI(b, apiBenchPolicy)
	apiBench(b, a, "/json", apiCheckBody("api", "user=alice", "tenant=acme"), http.StatusOK)
}
