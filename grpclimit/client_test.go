package grpclimit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// limitedEnv starts a server limiting each API key to lim on clk and a
// client whose Client waits on clk.
func limitedEnv(t *testing.T, l admit.Limit, clk *admittest.ManualClock, cc ClientConfig) *env {
	t.Helper()
	s, err := NewServer(newKeyed(t, l, clk, "api"), MetadataKey("x-api-key"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	cc.Clock = clk
	c, err := NewClient(cc)
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, s, c)
}

// blockThenAdvance waits until the code under test waits on a timer of
// clk, then moves clk by d.
func blockThenAdvance(t *testing.T, clk *admittest.ManualClock, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilTimers(ctx, 1); err != nil {
		t.Fatalf("nothing waited on the clock: %v", err)
	}
	clk.Advance(d)
}

func TestClientRetriesUnary(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	e := limitedEnv(t, admit.Limit{Rate: 2, Period: 3 * time.Second, Burst: 1}, clk, ClientConfig{})
	if _, err := e.client.EmptyCall(withKey("a"), &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.client.EmptyCall(withKey("a"), &testpb.Empty{})
		done <- err
	}()
	// Refused with a delay of 1.5s: the client waits on its clock.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1499 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("returned before the delay: %v", err)
	default:
	}
	clk.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("retried call: %v", err)
	}
	if got := e.svc.calls.Load(); got != 2 {
		t.Errorf("handler ran %d times, want 2", got)
	}
}

func TestClientMaxRetries(t *testing.T) {
	refuse := admit.Decision{Limit: admit.PerSecond(1), RetryAfter: time.Second, Rule: "r"}
	for _, retries := range []int{0, 1, 3} {
		lim := &scripted{}
		for range retries + 1 {
			lim.results = append(lim.results, result{d: refuse})
		}
		s, err := NewServer(lim, MetadataKey("x-api-key"), Config{})
		if err != nil {
			t.Fatal(err)
		}
		clk := admittest.NewManualClock(admittest.Epoch)
		n := retries
		if n == 0 {
			n = -1 // no retries; 0 is the default, 2
		}
		c, err := NewClient(ClientConfig{Clock: clk, MaxRetries: n})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s, c)
		done := make(chan error, 1)
		go func() {
			_, err := e.client.EmptyCall(withKey("a"), &testpb.Empty{})
			done <- err
		}()
		for range retries {
			blockThenAdvance(t, clk, time.Second)
		}
		if err := <-done; status.Code(err) != codes.ResourceExhausted {
			t.Errorf("%d retries: %v, want the last refusal", retries, err)
		}
		if got := len(lim.seen()); got != retries+1 {
			t.Errorf("%d retries: %d attempts", retries, got)
		}
	}
}

func TestClientDoesNotRetry(t *testing.T) {
	clk := admittest.NewManualClock(time.Now())
	for _, tc := range []struct {
		name string
		res  result
		ctx  func() (context.Context, context.CancelFunc)
		want codes.Code
	}{
		{"longer than max wait", result{d: admit.Decision{RetryAfter: 11 * time.Second}}, nil, codes.ResourceExhausted},
		{"past the deadline", result{d: admit.Decision{RetryAfter: 2 * time.Second}}, func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(withKey("a"), clk.Now().Add(2*time.Second))
		}, codes.ResourceExhausted},
		{"never admitted", result{d: admit.Decision{RetryAfter: admit.InfDuration}}, nil, codes.ResourceExhausted},
		{"concurrency", result{d: admit.Decision{Kind: admit.KindConcurrency, Limit: admit.Limit{Rate: 1}}}, nil, codes.ResourceExhausted},
		{"unavailable", result{err: errors.New("down")}, nil, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := &scripted{results: []result{tc.res}}
			s, err := NewServer(lim, MetadataKey("x-api-key"), Config{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewClient(ClientConfig{Clock: clk, MaxWait: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, s, c)
			ctx, cancel := withKey("a"), context.CancelFunc(func() {})
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			_, err = e.client.EmptyCall(ctx, &testpb.Empty{})
			if status.Code(err) != tc.want {
				t.Errorf("%v, want %v", err, tc.want)
			}
			if got := len(lim.seen()); got != 1 {
				t.Errorf("%d attempts, want 1", got)
			}
			if clk.Timers() != 0 {
				t.Errorf("%d timers left", clk.Timers())
			}
		})
	}
}

func TestClientCancelWhileWaiting(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	e := limitedEnv(t, admit.PerSecond(1), clk, ClientConfig{})
	if _, err := e.client.EmptyCall(withKey("a"), &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(withKey("a"))
	done := make(chan error, 1)
	go func() {
		_, err := e.client.EmptyCall(ctx, &testpb.Empty{})
		done <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := clk.BlockUntilTimers(wctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("%v, want Canceled", err)
	}
	if clk.Timers() != 0 {
		t.Errorf("the wait's timer was not stopped")
	}
}

func TestClientRetriesServerStream(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	e := limitedEnv(t, admit.PerSecond(1), clk, ClientConfig{})
	req := &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 1}, {Size: 2}}}
	recvAll := func(st grpc.ServerStreamingClient[testpb.StreamingOutputCallResponse]) error {
		for i := 0; ; i++ {
			m, err := st.Recv()
			if errors.Is(err, io.EOF) {
				if i != 2 {
					t.Errorf("%d messages, want 2", i)
				}
				return nil
			}
			if err != nil {
				return err
			}
			if len(m.GetPayload().GetBody()) != i+1 {
				t.Errorf("message %d: %d bytes", i, len(m.GetPayload().GetBody()))
			}
		}
	}
	st, err := e.client.StreamingOutputCall(withKey("a"), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := recvAll(st); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		st, err := e.client.StreamingOutputCall(withKey("a"), req)
		if err != nil {
			done <- err
			return
		}
		done <- recvAll(st)
	}()
	blockThenAdvance(t, clk, time.Second)
	if err := <-done; err != nil {
		t.Fatalf("retried stream: %v", err)
	}
	if got := e.svc.calls.Load(); got != 2 {
		t.Errorf("handler ran %d times", got)
	}
}

func TestClientRetriesBidiStream(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	e := limitedEnv(t, admit.PerSecond(1), clk, ClientConfig{})
	if _, err := e.client.EmptyCall(withKey("a"), &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			st, err := e.client.FullDuplexCall(withKey("a"))
			if err != nil {
				return err
			}
			// Sent to the refused stream (or kept once it is known
			// closed), and replayed on the new one.
			for _, b := range []string{"one", "two"} {
				if err := st.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte(b)}}); err != nil {
					return err
				}
			}
			for _, want := range []string{"one", "two"} {
				m, err := st.Recv()
				if err != nil {
					return err
				}
				if string(m.GetPayload().GetBody()) != want {
					t.Errorf("echo %q, want %q", m.GetPayload().GetBody(), want)
				}
			}
			// Committed now: later messages go straight through.
			if err := st.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte("three")}}); err != nil {
				return err
			}
			if m, err := st.Recv(); err != nil || string(m.GetPayload().GetBody()) != "three" {
				return errors.Join(err, errors.New("third echo: "+string(m.GetPayload().GetBody())))
			}
			if err := st.CloseSend(); err != nil {
				return err
			}
			if _, err := st.Recv(); !errors.Is(err, io.EOF) {
				return err
			}
			return nil
		}()
	}()
	blockThenAdvance(t, clk, time.Second)
	if err := <-done; err != nil {
		t.Fatalf("retried stream: %v", err)
	}
}

func TestClientStreamBufferOverflow(t *testing.T) {
	clk := admittest.NewManualClock(admittest.Epoch)
	e := limitedEnv(t, admit.PerSecond(1), clk, ClientConfig{StreamBuffer: 1})
	if _, err := e.client.EmptyCall(withKey("a"), &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	st, err := e.client.StreamingInputCall(withKey("a"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		// The second message does not fit: the stream is not retried,
		// and a send may report the closed stream.
		if err := st.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: []byte("x")}}); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
	}
	_, err = st.CloseAndRecv()
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("%v, want the refusal", err)
	}
	if clk.Timers() != 0 {
		t.Error("a retry is waiting")
	}
}

func TestClientStreamRetriesExhausted(t *testing.T) {
	lim := &scripted{results: []result{
		{d: admit.Decision{RetryAfter: time.Second}},
		{d: admit.Decision{RetryAfter: 30 * time.Second}},
	}}
	s, err := NewServer(lim, MetadataKey("x-api-key"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	clk := admittest.NewManualClock(admittest.Epoch)
	c, err := NewClient(ClientConfig{Clock: clk, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, c)
	done := make(chan error, 1)
	go func() {
		st, err := e.client.StreamingOutputCall(withKey("a"), &testpb.StreamingOutputCallRequest{})
		if err != nil {
			done <- err
			return
		}
		_, err = st.Recv()
		done <- err
	}()
	// The retry is refused again, and not retried: its refusal is returned.
	blockThenAdvance(t, clk, time.Second)
	err = <-done
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("%v, want the refusal", err)
	}
	if d, ok := RetryDelay(err); !ok || d != 30*time.Second {
		t.Errorf("RetryDelay = %v, %v", d, ok)
	}
	if got := len(lim.seen()); got != 2 {
		t.Errorf("%d attempts, want 2", got)
	}
}

func TestRetryDelay(t *testing.T) {
	for _, err := range []error{
		nil,
		errors.New("plain"),
		status.Error(codes.Unavailable, "x"),
		status.Error(codes.ResourceExhausted, "no details"),
	} {
		if d, ok := RetryDelay(err); ok {
			t.Errorf("RetryDelay(%v) = %v", err, d)
		}
	}
	st, _ := refusal(admit.Decision{RetryAfter: 1500 * time.Microsecond}, "x", nil)
	if d, ok := RetryDelay(st.Err()); !ok || d != 2*time.Millisecond {
		t.Errorf("RetryDelay = %v, %v; want 2ms", d, ok)
	}
}

func TestRetryInfoEncoding(t *testing.T) {
	for _, d := range []time.Duration{0, 1, time.Millisecond, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond, 90 * time.Minute, admit.InfDuration.Truncate(time.Millisecond)} {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		if err != nil {
			t.Fatal(err)
		}
		got := retryInfo(d)
		if !bytes.Equal(got.GetValue(), want) {
			t.Errorf("%v: % x, want % x", d, got.GetValue(), want)
		}
		var ri errdetails.RetryInfo
		if err := got.UnmarshalTo(&ri); err != nil || ri.GetRetryDelay().AsDuration() != d {
			t.Errorf("%v: decoded %v, %v", d, ri.GetRetryDelay().AsDuration(), err)
		}
	}
}

func TestClientConfig(t *testing.T) {
	c, err := NewClient(ClientConfig{MaxWait: -time.Second})
	if !errors.Is(err, admit.ErrInvalidConfig) || c != nil || !strings.Contains(err.Error(), "grpclimit: MaxWait") {
		t.Errorf("MaxWait -1s: %v, want ErrInvalidConfig naming MaxWait", err)
	}
	// The zero ClientConfig gives the defaults.
	c, err = NewClient(ClientConfig{})
	if err != nil || c.clock != admit.SystemClock || c.retries != 2 || c.maxWait != 10*time.Second || c.buffer != 16 {
		t.Errorf("%+v, %v", c, err)
	}
	// Negative MaxRetries and StreamBuffer are none.
	c, err = NewClient(ClientConfig{MaxRetries: -1, StreamBuffer: -1})
	if err != nil || c.retries != 0 || c.buffer != 0 {
		t.Errorf("%+v, %v", c, err)
	}
}
