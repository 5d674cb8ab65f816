package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
	"github.com/admit-go/admit/server"
)

// A gateway in front of a backend: each request to /login counts against
// a limit of 2 per hour; the third is refused without reaching the
// backend.
func ExampleNewGateway() {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "backend saw "+r.URL.Path)
	}))
	defer backend.Close()

	p, err := policy.Parse("policy.yaml", []byte(`
domain: web
rules:
  - name: login
    match:
      - key: route
        value: /login
    rate: 2/hour
`))
	if err != nil {
		panic(err)
	}
	// A clock that stands still, so that the output does not depend on
	// how fast the requests go; a service uses the system clock.
	clock := admittest.NewManualClock(admittest.Epoch)
	engine, err := policy.NewEngine(p, policy.WithBackend(policy.StoreLocal, backends.Memory()), policy.WithClock(clock))
	if err != nil {
		panic(err)
	}
	upstream, _ := url.Parse(backend.URL)
	gw, err := server.NewGateway(upstream, engine, "web",
		server.WithDescriptorSpecs("route=path"),
		server.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	defer gw.Close()
	front := httptest.NewServer(gw)
	defer front.Close()

	for range 3 {
		resp, err := http.Get(front.URL + "/login")
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit-Policy"), string(body))
	}
	// Output:
	// 200 "login";q=2;w=3600 backend saw /login
	// 200 "login";q=2;w=3600 backend saw /login
	// 429 "login";q=2;w=3600 {"code":"RATE_LIMIT","limit_dim":"login","retry_after_ms":1800000}
}
