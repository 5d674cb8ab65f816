package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/keyed"
)

func Example() {
	// 2 requests per minute per client address, on a clock the example
	// moves by hand.
	clk := admittest.NewManualClock(admittest.Epoch)
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Name: "api", Clock: clk}, Limit: admit.PerMinute(2)})
	if err != nil {
		panic(err)
	}
	m, err := httplimit.New(lim, httplimit.RemoteIP, httplimit.Config{ExemptPaths: []string{"/healthz"}})
	if err != nil {
		panic(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))

	get := func(path string) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.RemoteAddr = "192.0.2.1:4711"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%s %d\n", path, w.Code)
		for _, k := range []string{"RateLimit-Policy", "RateLimit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
			if v := w.Header().Get(k); v != "" {
				fmt.Printf("  %s: %s\n", k, v)
			}
		}
		fmt.Printf("  body: %s", w.Body)
	}
	get("/hello")
	get("/hello")
	get("/hello")
	get("/healthz") // exempt
	clk.Advance(30 * time.Second)
	get("/hello")
	// Output:
	// /hello 200
	//   RateLimit-Policy: "api";q=2;w=60
	//   RateLimit: "api";r=1;t=30
	//   X-RateLimit-Remaining: 1
	//   X-RateLimit-Reset: 30
	//   body: hello
	// /hello 200
	//   RateLimit-Policy: "api";q=2;w=60
	//   RateLimit: "api";r=0;t=60
	//   X-RateLimit-Remaining: 0
	//   X-RateLimit-Reset: 60
	//   body: hello
	// /hello 429
	//   RateLimit-Policy: "api";q=2;w=60
	//   RateLimit: "api";r=0;t=30
	//   X-RateLimit-Remaining: 0
	//   X-RateLimit-Reset: 60
	//   Retry-After: 30
	//   body: {"code":"RATE_LIMIT","limit_dim":"api","retry_after_ms":30000}
	// /healthz 200
	//   body: hello
	// /hello 200
	//   RateLimit-Policy: "api";q=2;w=60
	//   RateLimit: "api";r=0;t=60
	//   X-RateLimit-Remaining: 0
	//   X-RateLimit-Reset: 60
	//   body: hello
}

func ExampleNewClientIP() {
	// Behind load balancers in 10.0.0.0/8 that append to X-Forwarded-For.
	c, err := httplimit.NewClientIP(httplimit.ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	if err != nil {
		panic(err)
	}
	for _, tc := range []struct{ peer, xff string }{
		{"10.0.0.2:5", "203.0.113.9"},                       // through the balancer
		{"10.0.0.2:5", "6.6.6.6, 203.0.113.9"},              // the client's own header is ignored
		{"198.51.100.1:5", "6.6.6.6"},                       // not through the balancer: the peer
		{"10.0.0.2:5", "[2001:db8:1:2::99]:4711, 10.0.0.3"}, // IPv6, grouped by /64, two balancers
		{"10.0.0.2:5", "unknown"},                           // no usable address
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.peer
		r.Header.Set("X-Forwarded-For", tc.xff)
		key, err := c.Key(r)
		fmt.Printf("%-15s %-36q -> %q %v\n", tc.peer, tc.xff, key, err)
	}
	// Output:
	// 10.0.0.2:5      "203.0.113.9"                        -> "203.0.113.9" <nil>
	// 10.0.0.2:5      "6.6.6.6, 203.0.113.9"               -> "203.0.113.9" <nil>
	// 198.51.100.1:5  "6.6.6.6"                            -> "198.51.100.1" <nil>
	// 10.0.0.2:5      "[2001:db8:1:2::99]:4711, 10.0.0.3"  -> "2001:db8:1:2::/64" <nil>
	// 10.0.0.2:5      "unknown"                            -> "" httplimit: no trustworthy client address: a forwarding header entry from a trusted proxy is not an IP address
}

func ExampleJoin() {
	key := httplimit.Join(httplimit.RemoteIP, httplimit.Method(), httplimit.Header("X-Tenant"))
	r := httptest.NewRequest(http.MethodPost, "/orders", nil)
	r.Header.Set("X-Tenant", "acme|eu")
	fmt.Println(key(r))
	// Output:
	// 192.0.2.1|POST|acme\|eu <nil>
}

func ExampleConfig_shadow() {
	clk := admittest.NewManualClock(admittest.Epoch)
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Name: "signup", Clock: clk}, Limit: admit.Every(time.Hour)})
	if err != nil {
		panic(err)
	}
	m, err := httplimit.New(lim, httplimit.RemoteIP, httplimit.Config{
		Shadow: true,
		Observe: func(e httplimit.Event) {
			fmt.Printf("  %s key=%s retry=%v\n", e.Outcome, e.Key, e.Decision.RetryAfter)
		},
	})
	if err != nil {
		panic(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/signup", nil))
		fmt.Printf("%d RateLimit=%q\n", w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	//   admitted key=192.0.2.1 retry=0s
	// 200 RateLimit=""
	//   refused key=192.0.2.1 retry=1h0m0s
	// 200 RateLimit=""
}
