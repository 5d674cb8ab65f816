package grpclimit

import (
	"context"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
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
	s, err := NewServer(lim, FuncKey(func(context.Context, string) (string, bool) { return "alice", true }))
	run("keyed/func-key", s, err)
	s, err = NewServer(lim, MetadataKey("x-api-key"))
	run("keyed/metadata-key", s, err)
	s, err = NewServer(lim, MetadataKey("x-api-key"), WithMethod(mEmpty, "empty", lim), WithMethod(sTest, "svc", lim))
	run("keyed/per-method", s, err)
	s, err = NewServer(lim, MetadataKey("x-api-key"), WithExempt(sTest))
	run("exempt", s, err)
	s, err = NewServer(lim, MetadataKey("x-api-key"), WithHeaders())
	run("keyed/headers", s, err)
	s, err = NewServerDecider(DeciderFunc(func(context.Context, string, *compose.Held) (admit.Decision, error) {
		return admit.Decision{Allowed: true}, nil
	}))
	run("decider", s, err)

	refuse, err := NewServer(newKeyed(b, admit.Limit{}, admit.SystemClock, "none"), MetadataKey("x-api-key"))
	if err != nil {
		b.Fatal(err)
	}
	icpt := refuse.UnaryServerInterceptor()
	b.Run("refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := icpt(ctx, nil, benchInfo, benchHandler); err == nil {
				b.Fatal("admitted")
			}
		}
	})
}
