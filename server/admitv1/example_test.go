package admitv1_test

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/admit-go/admit/server/admitv1"
)

// A Check request for two descriptors: a tenant's, costing its request's
// 3 events, and a route's with its own inline limit of 10 per minute,
// only peeked at (hits 0).
func Example() {
	req := &admitv1.CheckRequest{
		Domain: "api",
		Hits:   proto.Int64(3),
		Descriptors: []*admitv1.Descriptor{
			{Entries: []*admitv1.Entry{{Key: "tenant", Value: "acme"}}},
			{
				Entries: []*admitv1.Entry{{Key: "route", Value: "/login"}},
				Hits:    proto.Int64(0),
				Limit:   &admitv1.Limit{Rate: 10, Period: durationpb.New(60e9)},
			},
		},
	}
	b, err := proto.Marshal(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	var back admitv1.CheckRequest
	if err := proto.Unmarshal(b, &back); err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range back.GetDescriptors() {
		fmt.Println(d.GetEntries()[0].GetKey(), d.Hits != nil, d.GetHits(), d.GetLimit().GetRate(), d.GetLimit().GetPeriod().AsDuration())
	}
	fmt.Println(back.GetDomain(), back.GetHits(), proto.Equal(req, &back))
	// Output:
	// tenant false 0 0 0s
	// route true 0 10 1m0s
	// api 3 true
}
