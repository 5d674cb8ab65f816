package backends_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/policy"
	"github.com/admit-go/admit/policy/backends"
)

// An engine is given its stores by name; a rule's store: names one. Here
// only the local store exists, so a rule kept in "redis" is reported at
// its store field.
func Example() {
	p, err := policy.Parse("policy.yaml", []byte(`
domain: api
rules:
  - name: per-user
    match: user
    rate: 2/minute
  - name: global
    match: generic_key
    rate: 1000/s
    store: redis
`))
	if err != nil {
		panic(err)
	}
	local := map[string]policy.Backend{policy.StoreLocal: backends.Memory()}
	if _, err := policy.NewEngine(p, policy.Config{Backends: local}); err != nil {
		fmt.Println(err)
	}

	p.Domains[0].Rules = p.Domains[0].Rules[:1]
	clock := admittest.NewManualClock(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	e, err := policy.NewEngine(p, policy.Config{Options: admit.Options{Clock: clock}, Backends: local})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	req := &policy.Request{Domain: "api", Hits: 1, Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "user", Value: "alice"}}}}}
	for range 3 {
		var res policy.Result
		if err := e.Check(context.Background(), req, nil, &res); err != nil {
			panic(err)
		}
		fmt.Println(res.Decision.Allowed, res.Decision.Rule, res.Decision.Remaining)
	}
	// Output:
	// policy.yaml:10:12: rules[1].store: policy: no such store: the rule is kept in store "redis", which the engine was not given (it has local; see Config.Backends)
	// true per-user 1
	// true per-user 0
	// false per-user 0
}
