package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/adaptive"
	"github.com/admit-go/admit/compose"
)

// outcomes is a Decider holding one grant per call, a Finisher when fin,
// and recording what each grant was told.
type outcomes struct {
	fin bool
	mu  sync.Mutex
	log []string
}

func (o *outcomes) add(e string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, e)
}

func (o *outcomes) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.log
	o.log = nil
	return l
}

type plainGrant struct{ o *outcomes }

func (g plainGrant) Release() { g.o.add("release") }

type finGrant struct{ plainGrant }

func (g finGrant) Finish(failed bool) { g.o.add(fmt.Sprint("finish ", failed)) }

func (o *outcomes) TryAcquire(context.Context, admit.Request) (admit.Releaser, admit.Decision, error) {
	d := admit.Decision{Allowed: true, Limit: admit.Limit{Rate: 5, Burst: 5}, Remaining: 4, Kind: admit.KindConcurrency}
	if o.fin {
		return finGrant{plainGrant{o}}, d, nil
	}
	return plainGrant{o}, d, nil
}

func (o *outcomes) Decide(ctx context.Context, m string, h *compose.Held) (admit.Decision, error) {
	return compose.Admit(ctx, []compose.Layer{{Name: "slots", Slots: o}}, []admit.Request{{N: 1}}, h, nil)
}

// ctxStream is a grpc.ServerStream with a context; its other methods are
// never called.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (f ctxStream) Context() context.Context    { return f.ctx }
func (f ctxStream) SetHeader(metadata.MD) error { return nil }
func (f ctxStream) SetTrailer(metadata.MD)      {}

// TestServerOutcome: the interceptors finish the Held of a call whose
// grant learns from outcomes, failed iff the handler panicked or returned
// a code WithFailure's function calls a failure (by default Unavailable,
// ResourceExhausted, DeadlineExceeded, Internal); without such a grant
// they release it.
func TestServerOutcome(t *testing.T) {
	o := &outcomes{fin: true}
	s, err := NewServerDecider(o, Config{})
	if err != nil {
		t.Fatal(err)
	}
	unary, stream := s.UnaryServerInterceptor(), s.StreamServerInterceptor()
	ctx := context.Background()
	info := &grpc.UnaryServerInfo{FullMethod: mUnary}
	sinfo := &grpc.StreamServerInfo{FullMethod: mDuplex}
	for _, tc := range []struct {
		err    error
		failed bool
	}{
		{nil, false},
		{status.Error(codes.Unavailable, "down"), true},
		{status.Error(codes.ResourceExhausted, "full"), true},
		{status.Error(codes.DeadlineExceeded, "slow"), true},
		{status.Error(codes.Internal, "bug"), true},
		{fmt.Errorf("wrapped: %w", status.Error(codes.Unavailable, "down")), true},
		{context.DeadlineExceeded, true},
		{context.Canceled, false},
		{status.Error(codes.NotFound, "no"), false},
		{status.Error(codes.InvalidArgument, "bad"), false},
		{status.Error(codes.Canceled, "gone"), false},
		{errors.New("plain"), false},
	} {
		want := fmt.Sprint("[finish ", tc.failed, "]")
		_, err := unary(ctx, nil, info, func(context.Context, any) (any, error) { return nil, tc.err })
		if err != tc.err {
			t.Errorf("unary returned %v, want %v", err, tc.err)
		}
		if got := fmt.Sprint(o.take()); got != want {
			t.Errorf("unary %v: %s, want %s", tc.err, got, want)
		}
		err = stream(nil, ctxStream{ctx: ctx}, sinfo, func(any, grpc.ServerStream) error { return tc.err })
		if err != tc.err {
			t.Errorf("stream returned %v, want %v", err, tc.err)
		}
		if got := fmt.Sprint(o.take()); got != want {
			t.Errorf("stream %v: %s, want %s", tc.err, got, want)
		}
	}
	// A panic is a failure, and goes on.
	boom := errors.New("boom")
	for name, call := range map[string]func(){
		"unary": func() {
			unary(ctx, nil, info, func(context.Context, any) (any, error) { panic(boom) })
		},
		"stream": func() {
			stream(nil, ctxStream{ctx: ctx}, sinfo, func(any, grpc.ServerStream) error { panic(boom) })
		},
	} {
		func() {
			defer func() {
				if v := recover(); v != boom {
					t.Errorf("%s: recovered %v", name, v)
				}
			}()
			call()
		}()
		if got := fmt.Sprint(o.take()); got != "[finish true]" {
			t.Errorf("%s panic: %s", name, got)
		}
	}
	// Config.Failure decides.
	s, err = NewServerDecider(o, Config{Failure: func(c codes.Code) bool { return c == codes.NotFound }})
	if err != nil {
		t.Fatal(err)
	}
	unary = s.UnaryServerInterceptor()
	unary(ctx, nil, info, func(context.Context, any) (any, error) { return nil, status.Error(codes.NotFound, "") })
	unary(ctx, nil, info, func(context.Context, any) (any, error) { return nil, status.Error(codes.Unavailable, "") })
	if got := fmt.Sprint(o.take()); got != "[finish true finish false]" {
		t.Errorf("WithFailure: %s", got)
	}
	// No Finisher: released.
	plain := &outcomes{}
	s, err = NewServerDecider(plain, Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.UnaryServerInterceptor()(ctx, nil, info, func(context.Context, any) (any, error) { return nil, status.Error(codes.Unavailable, "") })
	s.StreamServerInterceptor()(nil, ctxStream{ctx: ctx}, sinfo, func(any, grpc.ServerStream) error { return nil })
	if got := fmt.Sprint(plain.take()); got != "[release release]" {
		t.Errorf("without a Finisher: %s", got)
	}
}

// TestServerOutcomeAIMD: on a real server, an adaptive.AIMD in the
// Decider's chain learns from the calls' codes: Unavailable halves its
// rate, a success adds one, NotFound is a success.
func TestServerOutcomeAIMD(t *testing.T) {
	lim, err := adaptive.NewAIMD(adaptive.AIMDConfig{Min: 1, Max: 100, Initial: 40})
	if err != nil {
		t.Fatal(err)
	}
	chain, err := compose.All(compose.Layer{Name: "backend", Limiter: lim.Layer()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServerDecider(DeciderFunc(func(ctx context.Context, m string, h *compose.Held) (admit.Decision, error) {
		return chain.AllowKeys(ctx, []string{""}, 1, h)
	}), Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s, nil)
	for _, c := range []struct {
		code codes.Code
		rate int64
	}{{codes.Unavailable, 20}, {codes.OK, 21}, {codes.NotFound, 22}, {codes.Internal, 11}} {
		_, err := e.client.UnaryCall(context.Background(), &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(c.code)}})
		if status.Code(err) != c.code {
			t.Fatalf("code %v, want %v", status.Code(err), c.code)
		}
		if r := lim.Limit().Rate; r != c.rate {
			t.Fatalf("after %v: rate %d, want %d", c.code, r, c.rate)
		}
	}
}
