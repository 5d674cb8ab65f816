package grpclimit

import (
	"context"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

var benchInfo = &grpc.UnaryServerInfo{FullMethod: mUnary}

func benchHandler(context.Context, any) (any, error) { return nil, nil }

// fakeStream is the server transport stream gRPC puts in a unary call's
// context, so that SetHeader and SetTrailer work as in a server.
type fakeStream struct{ header, trailer metadata.MD }

func (s *fakeStream) Method() string                  { return mUnary }
func (s *fakeStream) SetHeader(md metadata.MD) error  { s.header = md; return nil }
func (s *fakeStream) SendHeader(md metadata.MD) error { s.header = md; return nil }
func (s *fakeStream) SetTrailer(md metadata.MD) error { s.trailer = md; return nil }

// BenchmarkUnary measures the unary interceptor's overhead: compare each
// case with "bare", the handler called without it.
func BenchmarkUnary(b *testing.B) {
	ctx := grpc.NewContextWithServerTransportStream(withIncoming("alice"), &fakeStream{})
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = benchHandler(ctx, nil)
		}
	})
	lim := newKeyed(b, admit.PerSecond(1_000_000_000), admit.SystemClock, "api")
	run := func(name string, s *Server, err error) {
		if err != nil {
			b.Fatal(err)
		}
		icpt := s.UnaryServerInterceptor()
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := icpt(ctx, nil, benchInfo, benchHandler); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	s, err := NewServer(lim, FuncKey(func(context.Context, string) (string, bool) { return "alice", true }), Config{})
	run("keyed/func-key", s, err)
	s, err = NewServer(lim, MetadataKey("x-api-key"), Config{})
	run("keyed/metadata-key", s, err)
	s, err = NewServer(lim, MetadataKey("x-api-key"), Config{Methods: []Method{{Pattern: mEmpty, Name: "empty", Limiter: lim}, {Pattern: sTest, Name: "svc", Limiter: lim}}})
	run("keyed/per-method", s, err)
	s, err = NewServer(lim, MetadataKey("x-api-key"), Config{Exempt: []string{sTest}})
	run("exempt", s, err)
	s, err = NewServer(lim, MetadataKey("x-api-key"), Config{Headers: true})
	run("keyed/headers", s, err)
	s, err = NewServerDecider(DeciderFunc(func(context.Context, string, *compose.Held) (admit.Decision, error) {
		return admit.Decision{Allowed: true}, nil
	}), Config{})
	run("decider", s, err)

	refuse, err := NewServer(newKeyed(b, admit.Limit{}, admit.SystemClock, "none"), MetadataKey("x-api-key"), Config{})
	if err != nil {
		b.Fatal(err)
	}
	runRefused := func(name string, s *Server, err error) {
		if err != nil {
			b.Fatal(err)
		}
		icpt := s.UnaryServerInterceptor()
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := icpt(ctx, nil, benchInfo, benchHandler); status.Code(err) != codes.ResourceExhausted {
					b.Fatalf("not refused: %v", err)
				}
			}
		})
	}
	runRefused("refused", refuse, nil)
	// A key that has had its hour's call: refused with a RetryInfo whose
	// delay (in ms) changes every millisecond.
	hourly := newKeyed(b, admit.PerHour(1), admit.SystemClock, "hourly")
	if _, err := hourly.Allow(context.Background(), admit.Request{Key: "md:x-api-key:alice", N: 1}); err != nil {
		b.Fatal(err)
	}
	s, err = NewServer(hourly, MetadataKey("x-api-key"), Config{})
	runRefused("refused/retry", s, err)

	// The interceptor's own cost, with a limiter that answers at once
	// without allocating and a key that costs nothing: admitted, refused
	// (with a RetryInfo, or never admissible), and refused with a new
	// delay every call, which the memo of refusals cannot serve.
	funcKey := FuncKey(func(context.Context, string) (string, bool) { return "alice", true })
	fixedAt := func(d admit.Decision) (*Server, error) {
		return NewServer(fixedLimiter{d}, funcKey, Config{})
	}
	s, err = fixedAt(admit.Decision{Allowed: true, Limit: admit.PerSecond(100), Remaining: 50})
	run("own/admitted", s, err)
	s, err = fixedAt(admit.Decision{Limit: admit.PerSecond(100), RetryAfter: 7*time.Millisecond + 3*time.Microsecond})
	runRefused("own/refused", s, err)
	s, err = fixedAt(admit.Decision{Limit: admit.PerSecond(100), RetryAfter: admit.InfDuration})
	runRefused("own/refused-never", s, err)
	s, err = NewServer(&driftingLimiter{}, funcKey, Config{})
	runRefused("own/refused-unmemoized", s, err)
}

// fixedLimiter answers every call with d.
type fixedLimiter struct{ d admit.Decision }

func (l fixedLimiter) Allow(context.Context, admit.Request) (admit.Decision, error) { return l.d, nil }

// driftingLimiter refuses every call with a RetryAfter one millisecond
// longer than the last (cycling over an hour), so that no two refusals in
// a row have the same shape. It is not safe for concurrent use.
type driftingLimiter struct{ n int64 }

func (l *driftingLimiter) Allow(context.Context, admit.Request) (admit.Decision, error) {
	l.n = l.n%3_600_000 + 1
	return admit.Decision{Limit: admit.PerHour(1), RetryAfter: time.Duration(l.n) * time.Millisecond}, nil
}

// BenchmarkUnaryEndToEnd measures complete unary calls through a real
// gRPC server and client over bufconn, with a trivial handler: without
// interceptors ("none"), admitted, and refused by the same Server
// configuration (a limiter answering at once, a metadata key). A refusal
// costs gRPC more than an admission (a status with details to marshal
// and the client to unmarshal, trailers), whatever the interceptor does.
func BenchmarkUnaryEndToEnd(b *testing.B) {
	ctx := withKey("alice")
	call := func(name string, s *Server, want codes.Code) {
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, s, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.client.EmptyCall(ctx, &testpb.Empty{}); status.Code(err) != want {
					b.Fatalf("code %v, want %v", status.Code(err), want)
				}
			}
		})
	}
	call("none", nil, codes.OK)
	for _, tc := range []struct {
		name string
		d    admit.Decision
		want codes.Code
	}{
		{"admitted", admit.Decision{Allowed: true, Limit: admit.PerSecond(100), Remaining: 50}, codes.OK},
		{"refused", admit.Decision{Limit: admit.PerSecond(100), RetryAfter: 7 * time.Millisecond}, codes.ResourceExhausted},
	} {
		s, err := NewServer(fixedLimiter{tc.d}, MetadataKey("x-api-key"), Config{})
		if err != nil {
			b.Fatal(err)
		}
		call(tc.name, s, tc.want)
	}
	s, err := NewServer(&driftingLimiter{}, MetadataKey("x-api-key"), Config{})
	if err != nil {
		b.Fatal(err)
	}
	call("refused-unmemoized", s, codes.ResourceExhausted)
}
