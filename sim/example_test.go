package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/sim"
)

// One tenant sends 20 requests a second to a limit of 10 a second with a
// burst of 5, for a minute: the limit admits its burst, then one request
// every 100ms.
func ExampleRun() {
	p, err := policy.Parse("policy.yaml", []byte(`
domain: api
rules:
  - name: per-tenant
    match: tenant
    rate: 10/s burst 5
`))
	if err != nil {
		panic(err)
	}
	res, err := sim.Run(context.Background(), sim.Config{Policy: p, Traffic: &sim.Traffic{
		Duration: time.Minute,
		Clients: []sim.Client{{
			Name: "acme", Domain: "api",
			Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "tenant", Value: "acme"}}}},
			Arrival:     sim.Arrival{Process: "constant", Rate: 20},
		}},
	}})
	if err != nil {
		panic(err)
	}
	r := res.Rules[0]
	fmt.Printf("%s: %d requests, %d admitted, %d denied; the most it may admit in a minute: %d\n", r.Name, r.Requests, r.Admitted, r.Denied, r.Bound)
	// Output:
	// per-tenant: 1200 requests, 604 admitted, 596 denied; the most it may admit in a minute: 605
}

// A traffic file, read with its problems at file:line:column.
func ExampleParseTraffic() {
	_, err := sim.ParseTraffic("traffic.yaml", []byte(`
duration: 1h
clients:
  - name: acme
    arrival: {process: poisson, rate: -2/s}
`))
	fmt.Println(err)
	// Output:
	// traffic.yaml:4:5: clients[0].descriptors: required: at least one descriptor (tenant: acme)
	// traffic.yaml:5:39: clients[0].arrival.rate: -2 is negative
}
