package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/admit-go/admit/adaptive"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/httplimit"
)

func ExampleConfig_failure() {
	// A rate towards a backend that adapts to its answers: +1/s for each
	// success, halved when the backend is unavailable.
	lim, err := adaptive.NewAIMD(adaptive.AIMDConfig{Min: 10, Max: 100, Initial: 40})
	if err != nil {
		panic(err)
	}
	chain, err := compose.All(compose.Layer{Name: "backend", Limiter: lim.Layer()})
	if err != nil {
		panic(err)
	}
	m, err := httplimit.NewChain(chain, []httplimit.KeyFunc{httplimit.Const("")}, httplimit.Config{
		Failure: func(status int) bool { return status == http.StatusServiceUnavailable },
	})
	if err != nil {
		panic(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	for _, path := range []string{"/", "/", "/down", "/"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, w.Code, "rate now", lim.Limit().Rate)
	}
	// Output:
	// / 200 rate now 41
	// / 200 rate now 42
	// /down 503 rate now 21
	// / 200 rate now 22
}
