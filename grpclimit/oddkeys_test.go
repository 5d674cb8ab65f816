package grpclimit

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/keyed"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// TestOddMetadataNeverLiftsTheLimit: a caller that sends the metadata it
// is keyed by repeated or empty gets no more than one sending it once (5
// of 15 calls, the limit): a repeated entry is keyed by its first value,
// and a call without a usable value shares the one key of all such calls.
func TestOddMetadataNeverLiftsTheLimit(t *testing.T) {
	for _, c := range []struct {
		name string
		md   func(i int) metadata.MD
	}{
		{"once", func(int) metadata.MD { return metadata.Pairs("x-api-key", "a") }},
		{"repeated", func(int) metadata.MD { return metadata.Pairs("x-api-key", "a", "x-api-key", "a") }},
		{"repeated, the second varying", func(i int) metadata.MD {
			return metadata.Pairs("x-api-key", "a", "x-api-key", fmt.Sprint("b", i))
		}},
		{"empty, then varying", func(i int) metadata.MD { return metadata.Pairs("x-api-key", "", "x-api-key", fmt.Sprint("b", i)) }},
		{"empty", func(int) metadata.MD { return metadata.Pairs("x-api-key", "") }},
		{"absent", func(int) metadata.MD { return metadata.MD{} }},
	} {
		lim, err := keyed.New(keyed.Config{Options: admit.Options{Clock: admittest.NewManualClock(admittest.Epoch)}, Limit: admit.Limit{Rate: 5, Period: 3600e9}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewServer(lim, MetadataKey("x-api-key"), Config{})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s, nil)
		admitted := 0
		for i := range 15 {
			ctx := metadata.NewOutgoingContext(context.Background(), c.md(i))
			_, err := e.client.EmptyCall(ctx, &testpb.Empty{})
			switch status.Code(err) {
			case codes.OK:
				admitted++
			case codes.ResourceExhausted:
			default:
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		if admitted != 5 {
			t.Errorf("%s: %d of 15 admitted, want 5", c.name, admitted)
		}
	}
}
