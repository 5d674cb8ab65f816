package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
	"github.com/admit-go/admit/policy"
)

// Config is what Run plays: a policy, traffic, and how.
type Config struct {
	// Policy is the policy the instances enforce, in either of
	// policy's formats (see policy.Parse). Required.
	Policy *policy.Policy
	// Traffic is what the clients send. Required.
	Traffic *Traffic
	// Seed, when not 0, replaces Traffic.Seed.
	Seed uint64
	// Algorithm, when not empty, is the algorithm every rate of the
	// policy is decided by instead of its own (an admit.ParseAlgorithm
	// name: "gcra", "fixed_window"...), to compare algorithms on the same
	// traffic.
	Algorithm string
	// Progress, if not nil, is called as the run goes, with the simulated
	// time done and the whole (about 300 times in a run, and at the end).
	Progress func(done, total time.Duration)
}

// Limits of a run, so that no input makes it unbounded.
const (
	maxRequests = 200_000_000 // requests expected from the arrival processes
	maxAttempts = 400_000_000 // attempts made, retries included
	maxPending  = 20_000_000  // events scheduled at once
	maxTenants  = 10_000      // tenants in Result.Tenants
)

// ErrTooBig is the error of a run beyond the limits above.
var errTooBig = errors.New("sim: run too big")

// Run plays c.Traffic against c.Policy on a simulated clock and returns
// what it measured. The instances are policy.Engines, as in admit serve,
// over the limiters of package keyed, quota and concurrency (the shared
// stores are simulated in memory, one for the fleet; see Traffic.Store),
// asked at simulated instants; nothing sleeps, so an hour of traffic
// takes seconds. The same inputs and seed give the same Result.
//
// The error says what is wrong with an input (a Traffic that fails its
// documented bounds, a policy the engine refuses, a fault naming a store
// no rule uses), that the run would be too big (about 2×10⁸ requests, or
// 4×10⁸ attempts), or that ctx ended.
func Run(ctx context.Context, c Config) (*Result, error) {
	if c.Policy == nil || c.Traffic == nil {
		return nil, fmt.Errorf("%w: sim: Config needs a Policy and a Traffic", admit.ErrInvalidConfig)
	}
	if err := c.Traffic.check(); err != nil {
		return nil, err
	}
	r, err := newRun(c)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.loop(ctx); err != nil {
		return nil, err
	}
	return r.result(), nil
}

// run is one simulation.
type run struct {
	cfg        Config
	t          *Traffic
	end        int64 // Duration, in ns
	step       int64
	nsteps     int
	clk        *clock
	seed       uint64
	svc        *rand.Rand // the backend's service times
	jit        *rand.Rand // the retries' jitter
	bal        *rand.Rand // random balancing
	arr        *rand.Rand // the arrivals
	engines    []*policy.Engine
	outs       []policy.Result
	balance    int // the next instance, round robin
	clients    []client
	reps       []replica
	ev         events
	back       *backend
	slots      []*slot
	free       []int32
	acct       *accounting
	pol        *policy.Policy
	prefetched []string          // rules that prefetch in admit serve
	keyReps    map[string]keyRep // descriptors' keys: how many tenants send each, and the first
	ctx        context.Context
}

// client is a Traffic.Clients entry as the run plays it.
type client struct {
	c    *Client
	arr  arrivals
	hits int64
	max  int // attempts
	Tally
}

// replica is one of a client's Count: one tenant.
type replica struct {
	client int32
	n      int // requests so far (constant, replay)
	tokens float64
	req    policy.Request
	keys   []string // one per descriptor: its entries, as the oracle's key
	byKey  map[string]*replayReq
	Tally
}

// keyRep says how many tenants send a descriptor's key, and which first.
type keyRep struct{ n, owner int32 }

// replayReq is the request of a replayed key.
type replayReq struct {
	req  policy.Request
	keys []string
}

// slot is an admitted request, until it is done.
type slot struct {
	id       int32
	held     compose.Held
	rep      int32
	admitted int64 // when it was admitted, and so queued for the backend
}

func newRun(c Config) (*run, error) {
	t := c.Traffic
	seed := t.Seed
	if c.Seed != 0 {
		seed = c.Seed
	}
	r := &run{cfg: c, t: t, end: int64(t.Duration), clk: &clock{}, seed: seed, ctx: context.Background()}
	r.svc, r.jit, r.bal, r.arr = r.stream(1<<62), r.stream(1<<62+1), r.stream(1<<62+2), r.stream(1<<62+3)
	r.cfg.Seed = seed
	r.step = int64(t.Step)
	if r.step == 0 {
		r.step = max(ceilDiv(r.end/300, int64(time.Millisecond))*int64(time.Millisecond), int64(time.Millisecond))
	}
	r.nsteps = int(ceilDiv(r.end, r.step))
	var alg *admit.Algorithm
	if c.Algorithm != "" {
		a, err := admit.ParseAlgorithm(c.Algorithm)
		if err != nil {
			return nil, fmt.Errorf("sim: Config.Algorithm: %w", err)
		}
		alg = &a
	}
	pol, prefetched := prepare(c.Policy, alg)
	r.pol, r.prefetched = pol, prefetched
	if err := r.buildEngines(pol); err != nil {
		r.close()
		return nil, err
	}
	if err := r.buildClients(); err != nil {
		r.close()
		return nil, err
	}
	if n := r.expectedRequests(); n > maxRequests {
		r.close()
		return nil, fmt.Errorf("%w: the clients would send about %.3g requests (count × rate × time); a run takes at most %d: shorten it, or lower the counts or the rates", errTooBig, n, maxRequests)
	}
	if t.Backend != nil {
		r.back = newBackend(t.Backend)
	}
	r.acct = newAccounting(r)
	return r, nil
}

func (r *run) close() {
	for _, e := range r.engines {
		_ = e.Close()
	}
}

// buildEngines builds one engine per instance, over the fleet's stores.
func (r *run) buildEngines(pol *policy.Policy) error {
	n := max(r.t.Instances, 1)
	names := storeNames(pol)
	for _, f := range r.t.Faults {
		if f.Store != "" && !slices.Contains(names, f.Store) {
			return fmt.Errorf("%w: sim: a fault names store %q, which no rule of the policy is kept in (its shared stores: %s)", admit.ErrInvalidConfig, f.Store, strings.Join(names, ", "))
		}
	}
	shared := map[string]policy.Backend{}
	for _, name := range names {
		if r.t.Store == "local" {
			shared[name] = localShare{n: n}
		} else {
			shared[name] = newSharedStore(name, r.clk, r.t.Faults)
		}
	}
	for range n {
		bs := map[string]policy.Backend{policy.StoreLocal: memory{}}
		for name, b := range shared {
			bs[name] = b
		}
		e, err := policy.NewEngine(pol, policy.Config{Options: admit.Options{Clock: r.clk}, Backends: bs, DefaultStore: defaultStore})
		if err != nil {
			return fmt.Errorf("sim: the policy: %w", err)
		}
		r.engines = append(r.engines, e)
	}
	r.outs = make([]policy.Result, n)
	return nil
}

// domainNames lists the policy's domains, quoted.
func domainNames(p *policy.Policy) string {
	var names []string
	for _, d := range p.Domains {
		names = append(names, strconv.Quote(d.Name))
	}
	if names == nil {
		return "none"
	}
	return strings.Join(names, ", ")
}

// buildClients lays out the clients and their replicas, with their
// requests built once.
func (r *run) buildClients() error {
	r.clients = make([]client, len(r.t.Clients))
	total := 0
	for i := range r.t.Clients {
		total += max(r.t.Clients[i].Count, 1)
	}
	r.reps = make([]replica, 0, total)
	r.keyReps = map[string]keyRep{}
	for ci := range r.t.Clients {
		c := &r.t.Clients[ci]
		if !r.engines[0].HasDomain(c.Domain) {
			return fmt.Errorf("%w: sim: clients[%d].domain: the policy has no domain %q (it has %s), so nothing would limit client %s", admit.ErrInvalidConfig, ci, c.Domain, domainNames(r.pol), c.Name)
		}
		k := &r.clients[ci]
		k.c, k.arr, k.hits, k.max = c, newArrivals(c, r.end), max(c.Hits, 1), c.Retry.MaxAttempts
		k.Name = c.Name
		if k.max == 0 {
			k.max = 5
		}
		if c.Arrival.Process == "replay" {
			lines, err := readReplay(c.Arrival.Log)
			if err != nil {
				return err
			}
			k.arr.lines = lines
		}
		count := max(c.Count, 1)
		for i := range count {
			rp := replica{client: int32(ci)}
			rp.Name = c.Name
			if count > 1 {
				rp.Name = c.Name + "-" + strconv.Itoa(i)
			}
			if k.arr.lines != nil {
				rp.byKey = map[string]*replayReq{}
			} else {
				rp.req, rp.keys = buildRequest(c, strconv.Itoa(i), "", k.hits)
				for _, key := range rp.keys {
					if r.t.Backend == nil {
						break // only the capacity warning reads them
					}
					kr := r.keyReps[key]
					if kr.n == 0 {
						kr.owner = int32(len(r.reps))
					}
					kr.n++
					r.keyReps[key] = kr
				}
			}
			r.reps = append(r.reps, rp)
		}
	}
	return nil
}

// expectedRequests is the mean number of requests the clients' arrival
// processes send in the run.
func (r *run) expectedRequests() float64 {
	var n float64
	for i := range r.clients {
		a := &r.clients[i].arr
		if a.process == "replay" {
			n += float64(len(a.lines))
			continue
		}
		c := r.clients[i].c
		rate := c.Arrival.Rate
		switch a.process {
		case "on_off":
			rate *= float64(a.on) / float64(a.cycle)
		case "diurnal":
			rate = (c.Arrival.Rate + c.Arrival.Peak) / 2
		}
		n += float64(max(c.Count, 1)) * rate * time.Duration(max(a.stop-a.start, 0)).Seconds()
	}
	return n
}

// stream returns the random numbers of one purpose: the arrivals, the
// backend's service times, the jitter and the balancing each have their
// own, so that what the limits decide changes none of the arrivals (the
// arrivals draw in the order of their own instants, which no decision
// moves: runs of several algorithms see the same traffic).
func (r *run) stream(n uint64) *rand.Rand {
	return rand.New(rand.NewPCG(r.seed, n^0x9e3779b97f4a7c15))
}

// buildRequest returns the request of a client with its substitutions
// ({i}, {key}) made, and its descriptors' keys for the oracle.
func buildRequest(c *Client, i, key string, hits int64) (policy.Request, []string) {
	req := policy.Request{Domain: c.Domain, Hits: hits, Descriptors: make([]policy.Descriptor, len(c.Descriptors))}
	keys := make([]string, len(c.Descriptors))
	sub := strings.NewReplacer("{i}", i, "{key}", key)
	for d, desc := range c.Descriptors {
		nd := desc
		nd.Entries = make([]policy.Entry, len(desc.Entries))
		var b strings.Builder
		for e, en := range desc.Entries {
			nd.Entries[e] = policy.Entry{Key: en.Key, Value: sub.Replace(en.Value)}
			fmt.Fprintf(&b, "%d:%s%d:%s", len(en.Key), en.Key, len(nd.Entries[e].Value), nd.Entries[e].Value)
		}
		req.Descriptors[d] = nd
		keys[d] = b.String()
	}
	return req, keys
}

// prepare returns the policy a run enforces: p, or a copy of it whose
// rates are all decided by alg (if set) and whose rules do not prefetch
// (a simulation decides them exactly in the shared store; see
// Warning's kind "model"), with the names of the rules that did.
func prepare(p *policy.Policy, alg *admit.Algorithm) (*policy.Policy, []string) {
	var prefetched []string
	for _, d := range p.Domains {
		if d.Override.Prefetch != 0 {
			prefetched = append(prefetched, d.Name+" (inline limits)")
		}
		for _, ru := range d.Rules {
			if ru.Prefetch != 0 {
				prefetched = append(prefetched, ru.Name)
			}
		}
	}
	if alg == nil && prefetched == nil {
		return p, nil
	}
	np := &policy.Policy{Domains: make([]*policy.Domain, len(p.Domains))}
	for i, d := range p.Domains {
		nd := *d
		nd.Override.Prefetch = 0
		if alg != nil {
			nd.Override.Algorithm = *alg
		}
		nd.Rules = make([]*policy.Rule, len(d.Rules))
		for j, ru := range d.Rules {
			nr := *ru
			nr.Prefetch = 0
			if alg != nil {
				withAlgorithm(&nr, *alg)
			}
			nd.Rules[j] = &nr
		}
		np.Domains[i] = &nd
	}
	return np, prefetched
}

// withAlgorithm makes every rate of r (a copy) decided by alg.
func withAlgorithm(r *policy.Rule, alg admit.Algorithm) {
	r.Algorithm = alg
	if r.Tiers == nil {
		return
	}
	tt := *r.Tiers
	tt.Tiers = make(map[string]*policy.Tier, len(r.Tiers.Tiers))
	for name, tier := range r.Tiers.Tiers {
		nt := *tier
		nt.Algorithm = alg
		tt.Tiers[name] = &nt
	}
	r.Tiers = &tt
}

// algorithm is the algorithm the run decides a rule's rate by: alg, the
// rule's, unless Config.Algorithm replaces it.
func (r *run) algorithm(alg admit.Algorithm) admit.Algorithm {
	if r.cfg.Algorithm != "" {
		if a, err := admit.ParseAlgorithm(r.cfg.Algorithm); err == nil {
			return a
		}
	}
	return alg
}
