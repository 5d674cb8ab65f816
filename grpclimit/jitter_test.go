package grpclimit

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
)

// TestRetryJitter: refusals of one instant are told retry times spread
// over [12s, 18s] (Fraction 0.5 of the exact 12s), never earlier, with the
// RetryInfo and the trailers agreeing.
func TestRetryJitter(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	lim := newKeyed(t, admit.PerMinute(5), clk, "api")
	s, err := NewServer(lim, MetadataKey("X-API-Key"), Config{RetryJitter: admit.Jitter{Fraction: 0.5, Source: admittest.Source(1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, nil)
	for range 5 {
		if _, err := e.client.EmptyCall(withKey("alice"), &testpb.Empty{}); err != nil {
			t.Fatal(err)
		}
	}
	delays := map[time.Duration]bool{}
	for i := range 30 {
		var trailer metadata.MD
		_, err := e.client.EmptyCall(withKey("alice"), &testpb.Empty{}, grpc.Trailer(&trailer))
		_, ri, _ := details(t, err)
		delay := ri.GetRetryDelay().AsDuration()
		if delay < 12*time.Second || delay > 18*time.Second {
			t.Fatalf("refusal %d: RetryInfo delay %v, want 12s to 18s", i, delay)
		}
		delays[delay] = true
		secs := strconv.FormatInt(int64((delay+time.Second-1)/time.Second), 10)
		if got := trailer.Get("retry-after"); len(got) != 1 || got[0] != secs {
			t.Errorf("refusal %d: retry-after %q, want %s (the delay %v rounded up)", i, got, secs, delay)
		}
		if got := trailer.Get("ratelimit"); len(got) != 1 || got[0] != `"api";r=0;t=`+secs {
			t.Errorf("refusal %d: ratelimit %q", i, got)
		}
	}
	if len(delays) < 10 {
		t.Errorf("30 refusals at one instant got %d distinct delays: %v", len(delays), delays)
	}
	if got := e.svc.calls.Load(); got != 5 {
		t.Errorf("handler ran %d times, want the limit, 5", got)
	}
}

func TestRetryJitterConfig(t *testing.T) {
	lim := newKeyed(t, admit.PerMinute(5), admittest.NewManualClock(admittest.Epoch), "api")
	for _, j := range []admit.Jitter{{Fraction: 2}, {Fraction: 0.5, Max: -1}} {
		if _, err := NewServer(lim, MetadataKey("X-API-Key"), Config{RetryJitter: j}); err == nil || !strings.Contains(err.Error(), "RetryJitter") {
			t.Errorf("RetryJitter %+v: error %v", j, err)
		}
	}
}
