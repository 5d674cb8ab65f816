package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/grpclimit"
	"github.com/admit-go/admit/keyed"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"
)

type service struct {
	testpb.UnimplementedTestServiceServer
}

func (service) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func Example() {
	// 2 calls per second per API key (a manual clock keeps the example
	// exact; leave the Clock out in a server).
	clk := admittest.NewManualClock(admittest.Epoch)
	lim, err := keyed.New(keyed.Config{Options: admit.Options{Name: "per-key", Clock: clk}, Limit: admit.PerSecond(2)})
	if err != nil {
		panic(err)
	}
	limits, err := grpclimit.NewServer(lim, grpclimit.MetadataKey("x-api-key"), grpclimit.Config{})
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(limits.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(limits.StreamServerInterceptor()))
	testpb.RegisterTestServiceServer(srv, service{})
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis := bufconn.Listen(1 << 16)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	conn, err := grpc.NewClient("passthrough:///example",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client := testpb.NewTestServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k-123")

	for i := 1; i <= 3; i++ {
		var trailer metadata.MD
		_, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.Trailer(&trailer))
		st := status.Convert(err)
		fmt.Printf("call %d: %v\n", i, st.Code())
		for _, d := range st.Details() {
			switch d := d.(type) {
			case *errdetails.RetryInfo:
				fmt.Printf("  RetryInfo: retry in %v\n", d.GetRetryDelay().AsDuration())
			case *errdetails.QuotaFailure:
				v := d.GetViolations()[0]
				fmt.Printf("  QuotaFailure: subject=%s description=%s\n", v.GetSubject(), v.GetDescription())
			}
		}
		for _, k := range []string{"retry-after", "ratelimit", "ratelimit-policy"} {
			if v := trailer.Get(k); v != nil {
				fmt.Printf("  %s: %s\n", k, v[0])
			}
		}
	}
	// The health service is exempt.
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println("health:", status.Code(err))
	// Output:
	// call 1: OK
	// call 2: OK
	// call 3: ResourceExhausted
	//   RetryInfo: retry in 500ms
	//   QuotaFailure: subject=per-key description=2/s
	//   retry-after: 1
	//   ratelimit: "per-key";r=0;t=1
	//   ratelimit-policy: "per-key";q=2;w=1
	// health: OK
}

func ExampleRetryDelay() {
	refused, _ := status.New(codes.ResourceExhausted, "slow down").WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)})
	fmt.Println(grpclimit.RetryDelay(refused.Err()))
	// Not a refusal: a Client never retries it.
	fmt.Println(grpclimit.RetryDelay(status.Error(codes.Internal, "bug")))
	// Output:
	// 1.5s true
	// 0s false
}
