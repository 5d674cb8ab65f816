package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/transport"
)

// An upstream that answers 429 with Retry-After: 120 pauses its host: the
// next request would wait past the maximum wait, so it fails at once
// instead of being sent to be refused again.
func Example() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer upstream.Close()

	tr, err := transport.New(nil, transport.Config{MaxWait: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: tr}

	resp, err := client.Get(upstream.URL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("first:", resp.Status)

	_, err = client.Get(upstream.URL)
	fmt.Println("second: wait too long:", errors.Is(err, admit.ErrWaitTooLong), "paused:", errors.Is(err, transport.ErrPaused))
	// Output:
	// first: 429 Too Many Requests
	// second: wait too long: true paused: true
}

// A limiter shared by every request: 1 per second, and requests that
// cannot go at once fail (a negative MaxWait) instead of waiting.
func ExampleConfig_limiter() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer upstream.Close()

	clk := admittest.NewManualClock(admittest.Epoch) // leave it out outside tests
	lim, err := admit.NewGCRA(admit.PerSecond(1), admit.Options{Clock: clk})
	if err != nil {
		panic(err)
	}
	tr, err := transport.New(nil, transport.Config{Clock: clk, Limiter: lim, MaxWait: -1})
	if err != nil {
		panic(err)
	}
	send := func() {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, upstream.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			fmt.Println("refused:", errors.Is(err, admit.ErrWaitTooLong))
			return
		}
		resp.Body.Close()
		fmt.Println("sent:", resp.StatusCode)
	}
	send()
	send()
	clk.Advance(time.Second)
	send()
	// Output:
	// sent: 200
	// refused: true
	// sent: 200
}
