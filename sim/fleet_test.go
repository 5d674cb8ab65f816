package sim

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/admit-go/admit/policy"
)

const fleetPolicy = `
domain: api
rules:
  - name: per-tenant
    match: tenant
    rate: 10/s burst 10
    store: redis
    failure:
      policy: %s
      local_share: %d
`

func fleetTraffic(instances int, store string) *Traffic {
	c := tenant("t", Arrival{Process: "poisson", Rate: 30})
	c.Count = 5
	return &Traffic{Duration: 5 * time.Minute, Instances: instances, Store: store, Clients: []Client{c}}
}

// A fleet asking one shared store decides as one instance would: the
// same requests, the same decisions.
func TestSharedFleetDecidesAsOneInstance(t *testing.T) {
	p := mustPolicy(t, sprintf(fleetPolicy, "fallback", 4))
	one := mustRun(t, Config{Policy: p, Traffic: fleetTraffic(1, ""), Seed: 5})
	four := mustRun(t, Config{Policy: p, Traffic: fleetTraffic(4, "shared"), Seed: 5})
	if one.Total != four.Total {
		t.Errorf("1 instance: %+v\\n4 instances sharing a store: %+v", one.Total, four.Total)
	}
	if r := four.Rules[0]; r.Over != 0 || r.Under != 0 || r.OverBound != 0 {
		t.Errorf("a shared store is exact: %+v", r)
	}
}

// Local shares: each of 4 instances holds a quarter of the limit, and
// round robin spreads each tenant evenly, so the fleet admits about the
// limit; random balancing leaves some instances short while others have
// spare (under-admission), and the burst is rounded up per instance.
func TestLocalSharesAdmitAboutTheLimit(t *testing.T) {
	p := mustPolicy(t, sprintf(fleetPolicy, "fallback", 4))
	rr := mustRun(t, Config{Policy: p, Traffic: fleetTraffic(4, "local"), Seed: 5})
	r := rr.Rules[0]
	if r.Ideal == 0 || absInt(r.Admitted-r.Ideal) > r.Ideal/20 {
		t.Errorf("round robin over 4 local quarters: admitted %d, ideal %d (want within 5%%)", r.Admitted, r.Ideal)
	}
	tr := fleetTraffic(4, "local")
	tr.Balance = "random"
	rnd := mustRun(t, Config{Policy: p, Traffic: tr, Seed: 5})
	if rnd.Rules[0].Under == 0 {
		t.Errorf("random balancing over local shares should under-admit some keys: %+v", rnd.Rules[0])
	}
}

func absInt(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// A Redis outage: the failure policy decides. fallback with local_share
// 2 on 4 instances admits twice the limit (warned, with the numbers);
// local_share 4 keeps it; fail_closed admits nothing; fail_open admits
// everything.
func TestOutageFailurePolicies(t *testing.T) {
	cases := []struct {
		policy  string
		share   int
		warn    bool
		maxOver float64 // admitted during the outage, over the limit's bound then
	}{
		{"fallback", 2, true, 2.1},
		{"fallback", 4, false, 1.05},
		{"fail_closed", 0, false, 0},
		{"fail_open", 0, true, 4},
	}
	for _, c := range cases {
		text := sprintf(fleetPolicy, c.policy, c.share)
		if c.share == 0 {
			text = text[:strings.Index(text, "      local_share")]
		}
		p := mustPolicy(t, text)
		tr := fleetTraffic(4, "shared")
		tr.Faults = []Fault{{Store: "redis", From: time.Minute, To: 2 * time.Minute}}
		res := mustRun(t, Config{Policy: p, Traffic: tr, Seed: 5})
		var outage []string
		for _, w := range res.Warnings {
			if w.Kind == "outage" {
				outage = append(outage, w.Message)
			}
		}
		if (len(outage) > 0) != c.warn {
			t.Errorf("%s/%d: outage warnings %q, want some: %v", c.policy, c.share, outage, c.warn)
		}
		if c.warn && !strings.Contains(outage[0], "per-tenant") {
			t.Errorf("%s: the warning should name the rule: %s", c.policy, outage[0])
		}
		// Each tenant offers 30/s, 1800 in the minute; the limit allows 10 + 600.
		adm := res.Series[0].Points
		var during float64
		for i := 60; i < 120; i++ {
			during += adm[i]
		}
		perTenant := during / 5
		if perTenant > c.maxOver*610 || c.policy == "fail_closed" && perTenant != 0 {
			t.Errorf("%s/%d: %.0f admitted per tenant during the outage (the limit allows 610)", c.policy, c.share, perTenant)
		}
	}
}

// Retries: clients retrying at once multiply the attempts; honouring
// Retry-After with jitter and a budget keeps them near one per request.
func TestRetryStormAndItsCure(t *testing.T) {
	p := mustPolicy(t, sprintf(perTenant, "20/s burst 20", "gcra"))
	run := func(rt Retry) *Result {
		c := tenant("t", Arrival{Process: "on_off", Rate: 100, On: 2 * time.Second, Off: 8 * time.Second})
		c.Count, c.Retry = 10, rt
		return mustRun(t, Config{Policy: p, Traffic: &Traffic{Duration: 2 * time.Minute, Clients: []Client{c}}, Seed: 2})
	}
	storm := run(Retry{On429: "immediate", Delay: 10 * time.Millisecond, MaxAttempts: 10})
	polite := run(Retry{On429: "retry_after", Jitter: 1, Budget: 0.2, MaxAttempts: 10})
	giveUp := run(Retry{})
	perReq := func(r *Result) float64 { return float64(r.Total.Attempts) / float64(r.Total.Requests) }
	if perReq(giveUp) != 1 {
		t.Errorf("give_up: %v attempts per request, want 1", perReq(giveUp))
	}
	if perReq(storm) < 3 {
		t.Errorf("immediate retries: %.2f attempts per request, want a storm (>3)", perReq(storm))
	}
	if perReq(polite) > 1.25 {
		t.Errorf("Retry-After with a 0.2 budget: %.2f attempts per request, want at most 1.2 (+ rounding)", perReq(polite))
	}
	if storm.Amplification <= polite.Amplification {
		t.Errorf("amplification: storm %.2f, polite %.2f", storm.Amplification, polite.Amplification)
	}
}

// A run is a function of its inputs and seed.
func TestDeterministic(t *testing.T) {
	p := mustPolicy(t, speedPolicy)
	tr := speedTraffic()
	tr.Duration = 20 * time.Second
	tr.Instances = 3
	a := mustRun(t, Config{Policy: p, Traffic: tr, Seed: 11})
	b := mustRun(t, Config{Policy: p, Traffic: tr, Seed: 11})
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs of the same seed differ")
	}
	c := mustRun(t, Config{Policy: p, Traffic: tr, Seed: 12})
	if reflect.DeepEqual(a.Total, c.Total) {
		t.Error("two seeds gave the same run")
	}
}

// An adaptive concurrency limit learns from the simulated backend: under
// overload it holds the in-flight requests near the backend's workers and
// refuses the rest, so latency stays low.
func TestAdaptiveConcurrencyLearnsFromTheBackend(t *testing.T) {
	p := mustPolicy(t, `
domain: api
rules:
  - name: backend
    match: tenant
    adaptive_concurrency: {min: 2, max: 1000}
`)
	tr := &Traffic{Duration: time.Minute, Clients: []Client{{Name: "c", Domain: "api",
		Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "tenant", Value: "x"}}}},
		Arrival:     Arrival{Process: "poisson", Rate: 3000}}},
		Backend: &Backend{Concurrency: 20, Service: 10 * time.Millisecond, Distribution: "constant"}}
	with := mustRun(t, Config{Policy: p, Traffic: tr, Seed: 1})
	without := mustRun(t, Config{Policy: mustPolicy(t, "domain: api\nrules: []\n"), Traffic: tr, Seed: 1})
	if with.Total.Denied == 0 {
		t.Fatalf("3000/s into 2000/s of capacity: the adaptive limit refused nothing: %+v", with.Total)
	}
	if with.LatencyP99 >= without.LatencyP99/2 {
		t.Errorf("p99 latency with the adaptive limit %v, without %v: want it well below", with.LatencyP99, without.LatencyP99)
	}
}

// Bad configurations are errors that say what is wrong.
func TestRunRefusesBadConfig(t *testing.T) {
	p := mustPolicy(t, sprintf(fleetPolicy, "fallback", 4))
	tr := fleetTraffic(2, "shared")
	cases := []struct {
		name string
		c    Config
		want string
	}{
		{"no policy", Config{Traffic: tr}, "needs a Policy"},
		{"no traffic", Config{Policy: p}, "needs a Policy and a Traffic"},
		{"unknown algorithm", Config{Policy: p, Traffic: tr, Algorithm: "bogus"}, "Config.Algorithm"},
		{"fault of no store", Config{Policy: p, Traffic: func() *Traffic {
			t := fleetTraffic(2, "shared")
			t.Faults = []Fault{{Store: "memcached", From: 0, To: time.Second}}
			return t
		}()}, `store "memcached", which no rule`},
		{"unknown domain", Config{Policy: p, Traffic: func() *Traffic {
			t := fleetTraffic(2, "shared")
			t.Clients[0].Domain = "apx"
			return t
		}()}, `clients[0].domain: the policy has no domain "apx" (it has "api")`},
	}
	for _, c := range cases {
		_, err := Run(t.Context(), c.c)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// A run stops when its context ends.
func TestRunStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tr := speedTraffic()
	_, err := Run(ctx, Config{Policy: mustPolicy(t, speedPolicy), Traffic: tr})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// Runs under several algorithms see the same arrivals (each client's
// random numbers are its own), and are measured against the policy's
// algorithm: the fixed window's admissions differ from GCRA's ideal.
func TestCompareSeesTheSameTraffic(t *testing.T) {
	p := mustPolicy(t, sprintf(perTenant, "10/s burst 10", "gcra"))
	c := tenant("t", Arrival{Process: "on_off", Rate: 40, On: 3 * time.Second, Off: 4 * time.Second})
	c.Count, c.Retry = 20, Retry{On429: "retry_after", Jitter: 0.5}
	tr := &Traffic{Duration: 90 * time.Second, Clients: []Client{c}, Backend: &Backend{Concurrency: 4, Service: 5 * time.Millisecond}}
	var reqs []int64
	for _, alg := range []string{"gcra", "fixed_window", "sliding_window"} {
		res := mustRun(t, Config{Policy: p, Traffic: tr, Seed: 4, Algorithm: alg})
		reqs = append(reqs, res.Total.Requests)
		r := res.Rules[0]
		if alg == "gcra" && (r.Over != 0 || r.Under != 0) {
			t.Errorf("gcra against gcra's ideal: %+v", r)
		}
		if alg == "fixed_window" && r.Over+r.Under == 0 {
			t.Errorf("the fixed window against gcra's ideal should differ somewhere: %+v", r)
		}
		if r.OverBound != 0 {
			t.Errorf("%s broke its own bound: %+v", alg, r)
		}
	}
	if reqs[0] != reqs[1] || reqs[0] != reqs[2] {
		t.Errorf("requests sent under gcra, fixed_window, sliding_window: %v, want the same", reqs)
	}
}

// A run that would send too many requests is refused at once, not after
// hours.
func TestRunRefusesHugeRuns(t *testing.T) {
	c := tenant("t", Arrival{Process: "poisson", Rate: 1e7})
	c.Count = 1000
	tr := &Traffic{Duration: 365 * 24 * time.Hour, Clients: []Client{c}}
	_, err := Run(t.Context(), Config{Policy: mustPolicy(t, speedPolicy), Traffic: tr})
	if !errors.Is(err, errTooBig) || !strings.Contains(err.Error(), "about 3.15e+17 requests") {
		t.Errorf("error %v", err)
	}
}

// A breaker opened by an outage probes the store on the simulated clock
// and closes once it answers: the limit holds again a probe interval
// after the fault.
func TestBreakerRecoversOnTheSimulatedClock(t *testing.T) {
	text := strings.Replace(sprintf(fleetPolicy, "fallback", 2), "      policy: fallback\n", "      policy: fallback\n      breaker: true\n      probe_interval: 2s\n", 1)
	p := mustPolicy(t, text)
	tr := fleetTraffic(4, "shared")
	tr.Faults = []Fault{{Store: "redis", From: time.Minute, To: 2 * time.Minute}}
	res := mustRun(t, Config{Policy: p, Traffic: tr, Seed: 5})
	adm := res.Series[0].Points // all 5 tenants, per second
	per := func(from, to int) float64 {
		var s float64
		for i := from; i < to; i++ {
			s += adm[i]
		}
		return s / float64(to-from) / 5
	}
	if during := per(70, 110); during < 18 {
		t.Errorf("during the outage the fallback (2 of 4 shares) admits about 20/s per tenant, got %.1f", during)
	}
	if after := per(125, 180); after > 10.5 {
		t.Errorf("after the outage the store decides again: 10/s per tenant, got %.1f", after)
	}
}

// A budget shared by weight (share:) kept in the shared store decides as
// the engine's own share in memory does: a fleet of two on the store
// admits what one instance keeping it locally does, by the weights.
func TestShareInTheSharedStore(t *testing.T) {
	const pol = `
domain: api
rules:
  - name: backend
    match: [route, tenant]
    rate: 60/s
    share: {key: tenant, weights: {b: 2, c: 3}, default: 1}
    store: %s
`
	traffic := func(instances int) *Traffic {
		var cs []Client
		for _, name := range []string{"a", "b", "c"} {
			cs = append(cs, Client{Name: name, Domain: "api",
				Descriptors: []policy.Descriptor{{Entries: []policy.Entry{{Key: "route", Value: "/x"}, {Key: "tenant", Value: name}}}},
				Arrival:     Arrival{Process: "poisson", Rate: 100}})
		}
		return &Traffic{Duration: time.Minute, Instances: instances, Clients: cs}
	}
	local := mustRun(t, Config{Policy: mustPolicy(t, sprintf(pol, "local")), Traffic: traffic(1), Seed: 8})
	shared := mustRun(t, Config{Policy: mustPolicy(t, sprintf(pol, "redis")), Traffic: traffic(2), Seed: 8})
	for i, c := range local.Clients {
		if shared.Clients[i].Admitted != c.Admitted {
			t.Errorf("%s: admitted %d in the shared store by 2 instances, %d in memory by one", c.Name, shared.Clients[i].Admitted, c.Admitted)
		}
	}
	// 60/s by weights 1:2:3 over a minute: about 600, 1200, 1800.
	for i, want := range []float64{600, 1200, 1800} {
		if got := float64(local.Clients[i].Admitted); got < 0.9*want || got > 1.1*want {
			t.Errorf("%s admitted %v, want about %v", local.Clients[i].Name, got, want)
		}
	}
}
