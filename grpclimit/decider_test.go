package grpclimit

// NewServerDecider with a Decider that holds slots until the call ends.

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/compose"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// chainDecider decides with a compose chain of a rate limit per API key and
// a concurrency limit for everyone.
func chainDecider(t *testing.T, rate admit.KeyedLimiter, sl *slots) Decider {
	chain, err := compose.All(
		compose.Layer{Name: "per-key", Limiter: rate},
		compose.Layer{Name: "in-flight", Slots: sl},
	)
	if err != nil {
		t.Fatal(err)
	}
	key := MetadataKey("x-api-key")
	return DeciderFunc(func(ctx context.Context, m string, h *compose.Held) (admit.Decision, error) {
		k, _ := key.Of(ctx, m)
		return chain.AllowKeys(ctx, []string{k, ""}, 1, h)
	})
}

func TestDeciderHeld(t *testing.T) {
	sl := &slots{max: 1}
	clk := admittest.NewManualClock(admittest.Epoch)
	s, err := NewServerDecider(chainDecider(t, newKeyed(t, admit.PerSecond(100), clk, ""), sl), Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, nil)
	held := make(chan int64, 10)
	e.svc.inStream = func() { held <- sl.inUse() }

	// Unary: the slot is given back when the handler returns, before the
	// response is sent.
	for range 3 {
		if _, err := e.client.EmptyCall(withKey("a"), &testpb.Empty{}); err != nil {
			t.Fatal(err)
		}
		if n := sl.inUse(); n != 0 {
			t.Fatalf("%d slots held after a unary call", n)
		}
	}

	// A stream holds its slot until it ends.
	ctx, cancel := context.WithCancel(withKey("a"))
	defer cancel()
	a, err := e.client.FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Recv(); err != nil {
		t.Fatal(err)
	}
	if n := <-held; n != 1 {
		t.Errorf("%d slots held in the stream's handler, want 1", n)
	}

	// A second stream finds no slot: refused, without RetryInfo (a
	// concurrency limit cannot tell when a slot frees).
	b, err := e.client.FullDuplexCall(withKey("b"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Recv()
	st, ri, qf := details(t, err)
	if st.Code() != codes.ResourceExhausted || ri != nil || qf == nil {
		t.Fatalf("second stream: %v, RetryInfo %v, QuotaFailure %v", err, ri, qf)
	}
	if v := qf.GetViolations()[0]; v.GetSubject() != "in-flight" || v.GetDescription() != "1 in flight" {
		t.Errorf("violation %v", v)
	}
	if got := b.Trailer().Get("ratelimit-policy"); len(got) != 1 || got[0] != `"in-flight";q=1;qu="concurrent-requests"` {
		t.Errorf("policy trailer %q", got)
	}
	// The refused stream's rate admission was refunded... and the first
	// stream still holds its slot.
	if n := sl.inUse(); n != 1 {
		t.Errorf("%d slots held, want 1", n)
	}

	// Ending the first stream frees its slot.
	if err := a.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("end of stream: %v", err)
	}
	if n := sl.inUse(); n != 0 {
		t.Errorf("%d slots held after the stream ended", n)
	}
	c, err := e.client.StreamingOutputCall(withKey("c"), &testpb.StreamingOutputCallRequest{
		ResponseParameters: []*testpb.ResponseParameters{{Size: 1}, {Size: 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := c.Recv(); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if _, err := c.Recv(); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if n := <-held; n != 1 {
		t.Errorf("%d slots held in the third stream's handler", n)
	}
	if got, want := sl.released.Load(), int64(5); got != want {
		t.Errorf("%d releases, want %d", got, want)
	}

	// A handler that panics still gives its slot back.
	s2, err := NewServerDecider(chainDecider(t, newKeyed(t, admit.PerSecond(100), clk, ""), sl), Config{})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = s2.UnaryServerInterceptor()(withIncoming("a"), nil, &grpc.UnaryServerInfo{FullMethod: mEmpty}, func(context.Context, any) (any, error) {
			if sl.inUse() != 1 {
				t.Error("no slot held in the handler")
			}
			panic("handler")
		})
	}()
	if n := sl.inUse(); n != 0 {
		t.Errorf("%d slots held after a panic", n)
	}
}
