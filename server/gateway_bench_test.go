package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// gwBenchPolicy admits everything the benchmarks send: limits they never
// reach, on the built-in policy's keys.
const gwBenchPolicy = `domain: api
rules:
  - {name: per-ip, match: remote_address, rate: 1000000000/s}
  - {name: global, match: [{key: generic_key, value: global}], concurrency: 100000}
`

// BenchmarkGatewayServeHTTP is the gateway's own cost on an admitted
// request: deciding two descriptors (client address, a global cap),
// rewriting the request and copying the answer, with an upstream that
// answers at once in memory.
func BenchmarkGatewayServeHTTP(b *testing.B) {
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/plain"}},
			Body: io.NopCloser(strings.NewReader("ok")), ContentLength: 2, Request: r}, nil
	})
	u, _ := url.Parse("http://upstream.invalid")
	g, err := newGatewayWith(u, testEngine(b, gwBenchPolicy), "api", withTransport(rt),
		withDescriptorSpecs("remote_address=client_ip", "generic_key=const:global"))
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/items/7", nil)
	req.RemoteAddr = "192.0.2.1:4711"
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// loopbackGateway starts an httptest upstream answering "ok" and a
// gateway in front of it with gwBenchPolicy, and returns their URLs.
func loopbackGateway(b *testing.B) (upstream, front string) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	b.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	g, err := newGatewayWith(u, testEngine(b, gwBenchPolicy), "api",
		withDescriptorSpecs("remote_address=client_ip", "generic_key=const:global"))
	if err != nil {
		b.Fatal(err)
	}
	fs := httptest.NewServer(g)
	b.Cleanup(func() {
		fs.Close()
		_ = g.Close()
	})
	return up.URL, fs.URL
}

// BenchmarkGatewayLoopback is one proxied request end to end over real
// loopback connections: a client on a kept-alive connection, the gateway
// behind an httptest server (the built-in policy's shape: a rate per
// client address and a global cap in flight), and an httptest upstream.
// The direct case is the same request to the upstream alone; the
// difference is the gateway's hop (two more socket writes and reads, the
// decision, the proxying). cpu-µs/op is the CPU time of the whole
// process (client, gateway and upstream, user and system) per request,
// which a busy machine disturbs less than the time per request.
func BenchmarkGatewayLoopback(b *testing.B) {
	upstream, front := loopbackGateway(b)
	for _, c := range []struct{ name, url string }{{"direct", upstream + "/"}, {"gateway", front + "/"}} {
		b.Run(c.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodGet, c.url, nil)
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(resp.StatusCode)
				}
			}
			if cpu > 0 {
				b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			}
		})
	}
}

// BenchmarkGatewayLatency measures what the gateway adds to an admitted
// request over loopback TCP at about 1,000 requests a second: b.N
// requests paced 1 ms apart straight to the upstream, and as many through
// the gateway, each on a kept-alive connection. It reports the p50 and
// p99 of each and the p99 added (p99 through the gateway less p99
// direct), in µs.
func BenchmarkGatewayLatency(b *testing.B) {
	upstream, front := loopbackGateway(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	measure := func(target string) []time.Duration {
		lat := make([]time.Duration, 0, b.N)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for range b.N {
			<-tick.C
			start := time.Now()
			resp, err := client.Get(target)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lat = append(lat, time.Since(start))
			if resp.StatusCode != 200 {
				b.Fatal(resp.StatusCode)
			}
		}
		slices.Sort(lat)
		return lat
	}
	pct := func(lat []time.Duration, p float64) float64 {
		return float64(lat[int(float64(len(lat)-1)*p)].Microseconds())
	}
	b.ResetTimer()
	direct := measure(upstream + "/")
	via := measure(front + "/")
	b.StopTimer()
	b.ReportMetric(pct(direct, 0.5), "direct-p50-µs")
	b.ReportMetric(pct(direct, 0.99), "direct-p99-µs")
	b.ReportMetric(pct(via, 0.5), "gateway-p50-µs")
	b.ReportMetric(pct(via, 0.99), "gateway-p99-µs")
	b.ReportMetric(pct(via, 0.99)-pct(direct, 0.99), "p99-added-µs")
}
