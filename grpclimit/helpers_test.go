package grpclimit

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/keyed"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// Full methods of grpc-go's test service.
const (
	mEmpty     = "/grpc.testing.TestService/EmptyCall"
	mUnary     = "/grpc.testing.TestService/UnaryCall"
	mStreamOut = "/grpc.testing.TestService/StreamingOutputCall"
	mDuplex    = "/grpc.testing.TestService/FullDuplexCall"
	sTest      = "/grpc.testing.TestService/"
)

// testService implements the test service: EmptyCall and UnaryCall answer
// at once, StreamingOutputCall sends one response per ResponseParameters,
// FullDuplexCall echoes each request until the client closes, and
// StreamingInputCall counts the requests' bytes. inStream, if set, is
// called inside every stream handler (to look at held slots).
type testService struct {
	testpb.UnimplementedTestServiceServer
	calls    atomic.Int64
	inStream func()
}

func (s *testService) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	s.calls.Add(1)
	return &testpb.Empty{}, nil
}

func (s *testService) UnaryCall(_ context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.calls.Add(1)
	if rs := req.GetResponseStatus(); rs.GetCode() != 0 {
		return nil, status.Error(codes.Code(rs.GetCode()), rs.GetMessage())
	}
	return &testpb.SimpleResponse{Payload: req.GetPayload()}, nil
}

func (s *testService) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, st grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	s.calls.Add(1)
	if s.inStream != nil {
		s.inStream()
	}
	for _, p := range req.GetResponseParameters() {
		body := make([]byte, p.GetSize())
		if err := st.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: body}}); err != nil {
			return err
		}
	}
	return nil
}

func (s *testService) FullDuplexCall(st grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	s.calls.Add(1)
	if s.inStream != nil {
		s.inStream()
	}
	for {
		req, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := st.Send(&testpb.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
}

func (s *testService) StreamingInputCall(st grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	s.calls.Add(1)
	n := 0
	for {
		req, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return st.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(n)})
		}
		if err != nil {
			return err
		}
		n += len(req.GetPayload().GetBody())
	}
}

// env is an in-process server and a client connection over bufconn.
type env struct {
	svc    *testService
	conn   *grpc.ClientConn
	client testpb.TestServiceClient
	health healthpb.HealthClient
}

// newEnv starts a server with s's interceptors (none if s is nil) and
// connects to it with the client interceptors of c (none if c is nil).
func newEnv(t testing.TB, s *Server, c *Client) *env {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	var sopts []grpc.ServerOption
	if s != nil {
		sopts = append(sopts, grpc.UnaryInterceptor(s.UnaryServerInterceptor()), grpc.StreamInterceptor(s.StreamServerInterceptor()))
	}
	srv := grpc.NewServer(sopts...)
	svc := &testService{}
	testpb.RegisterTestServiceServer(srv, svc)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	copts := []grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}
	if c != nil {
		copts = append(copts, grpc.WithUnaryInterceptor(c.UnaryClientInterceptor()), grpc.WithStreamInterceptor(c.StreamClientInterceptor()))
	}
	conn, err := grpc.NewClient("passthrough:///bufnet", copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		<-done
	})
	return &env{svc: svc, conn: conn, client: testpb.NewTestServiceClient(conn), health: healthpb.NewHealthClient(conn)}
}

// scripted is a admit.KeyedLimiter answering from a script of results, then
// admitting; it records the keys it was asked about.
type scripted struct {
	mu      sync.Mutex
	results []result
	keys    []string
}

type result struct {
	d   admit.Decision
	err error
}

func (l *scripted) Allow(_ context.Context, req admit.Request) (admit.Decision, error) {
	key := req.Key
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = append(l.keys, key)
	if len(l.results) == 0 {
		return admit.Decision{Allowed: true, Limit: admit.PerSecond(10), Remaining: 9}, nil
	}
	r := l.results[0]
	l.results = l.results[1:]
	return r.d, r.err
}

func (l *scripted) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.keys...)
}

// slots is a admit.Slots with a fixed number of slots for all keys.
type slots struct {
	mu        sync.Mutex
	max, used int64
	released  atomic.Int64
}

type slotRelease struct {
	s    *slots
	n    int64
	once sync.Once
}

func (r *slotRelease) Release() {
	r.once.Do(func() {
		r.s.mu.Lock()
		r.s.used -= r.n
		r.s.mu.Unlock()
		r.s.released.Add(1)
	})
}

func (s *slots) TryAcquire(_ context.Context, req admit.Request) (admit.Releaser, admit.Decision, error) {
	n := req.N
	s.mu.Lock()
	defer s.mu.Unlock()
	d := admit.Decision{Limit: admit.Limit{Rate: s.max, Burst: s.max}, Kind: admit.KindConcurrency}
	if s.used+n > s.max {
		d.Remaining = s.max - s.used
		return nil, d, nil
	}
	s.used += n
	d.Allowed, d.Remaining = true, s.max-s.used
	return &slotRelease{s: s, n: n}, d, nil
}

func (s *slots) inUse() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

func newKeyed(t testing.TB, l admit.Limit, clk admit.Clock, name string) *keyed.Limiter {
	t.Helper()
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Clock: clk, Name: name}, Limit: l})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

func withKey(key string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "x-api-key", key)
}

func withIncoming(key string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", key))
}
