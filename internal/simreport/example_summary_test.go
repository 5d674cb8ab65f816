package simreport

import (
	"os"
	"time"

	"github.com/admit-go/admit/sim"
)

func ExampleSummary() {
	r := &sim.Result{
		Duration: time.Minute, Step: time.Second, Seed: 7,
		Total: sim.Tally{Requests: 6000, Attempts: 6000, Admitted: 4200, Denied: 1800, GaveUp: 1800, Succeeded: 4200},
		Clients: []sim.Tally{
			{Name: "alice", Requests: 4800, Attempts: 4800, Admitted: 3000, Denied: 1800, GaveUp: 1800, Succeeded: 3000},
			{Name: "bob", Requests: 1200, Attempts: 1200, Admitted: 1200, Succeeded: 1200},
		},
		Rules: []sim.Tally{{Name: "per_client", Requests: 6000, Admitted: 4200, Denied: 1800,
			Ideal: 4200, Bound: 3050}},
		Amplification: 6000.0 / 4200,
		Warnings:      []sim.Warning{{Kind: "burst", Message: "alice's burst of 50 is small for its arrivals"}},
	}
	Summary(os.Stdout, r)
	// Output:
	// 1m0s simulated in steps of 1s, seed 7
	//
	//   CLIENT  REQUESTS  ATTEMPTS  ADMITTED  DENIED  GAVE UP  SUCCEEDED  FAILED
	//   alice      4,800     4,800     3,000   1,800    1,800      3,000       0
	//   bob        1,200     1,200     1,200       0        0      1,200       0
	//   total      6,000     6,000     4,200   1,800    1,800      4,200       0
	//
	//   RULE        REQUESTS  ADMITTED  DENIED  IDEAL  OVER  UNDER  BOUND/KEY  OVER BOUND
	//   per_client     6,000     4,200   1,800  4,200     0      0      3,050           0
	//
	//   Admitted             70%    4,200 of 6,000 attempts; 1,800 denied
	//   Retry amplification  1.43×  attempts per successful request
	//
	// WARNINGS (1)
	//   ! burst: alice's burst of 50 is small for its arrivals
}
