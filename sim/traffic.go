package sim

import (
	"time"

	"github.com/admit-go/admit/policy"
)

// Traffic is what a simulation plays against a policy: the clients and
// how they send, how they behave when refused, the backend the admitted
// requests reach, the fleet of instances deciding, and the faults of the
// store. ParseTraffic reads one from its YAML format (docs/SIMULATE.md);
// it may as well be built in Go. The zero value of each field is the
// default its comment states.
type Traffic struct {
	// Duration is the simulated time the run lasts: from 0 to Duration.
	// It is required, and at most a year.
	Duration time.Duration
	// Step is the width of the buckets of the time series (Result.Series).
	// 0 means Duration/300, rounded up to a whole millisecond (at least
	// one millisecond); a Step leaving more than 100,000 buckets is an
	// error.
	Step time.Duration
	// Seed seeds the random numbers of the arrivals, the service times,
	// the jitter and the fleet's balancing: a run is a function of its
	// inputs and its seed. Config.Seed, when not 0, replaces it.
	Seed uint64
	// Headroom is the share of the backend's capacity the policy's limits
	// should stay within (the seeds' advice: plan for about 70%); the
	// warnings compare the sum of the clients' limits with it. 0 means
	// 0.7; otherwise it is in (0, 1].
	Headroom float64

	// Instances is the number of admit instances deciding: each request
	// goes to one of them (see Balance). 0 means 1.
	Instances int
	// Store says how the instances keep the rules of the policy's shared
	// stores (store: redis, and the default store of envoyproxy/ratelimit's
	// files): "shared" (the default) keeps them in one store all the
	// instances ask, as Redis would be; "local" gives each instance its
	// own limiters holding 1/Instances of each limit (admit.Limit.Share),
	// as a fleet without a shared store does.
	Store string
	// Balance is how requests are spread over the instances:
	// "round_robin" (the default) or "random".
	Balance string

	// Clients are the sources of requests; at least one.
	Clients []Client
	// Backend, if not nil, is the service behind admit: admitted requests
	// queue for its workers, and their outcomes feed the policy's
	// concurrency caps and adaptive limits. Nil: an admitted request is
	// done at once, and succeeds.
	Backend *Backend
	// Faults are the periods when a shared store does not answer; the
	// rules kept there are decided by their failure policies.
	Faults []Fault
}

// Client is a source of requests: one client, or Count alike. Each of them
// sends requests with the same descriptors (after substitution) by its
// arrival process, and behaves on a refusal as Retry says.
type Client struct {
	// Name names the client in the results; unique, and required.
	Name string
	// Count is the number of clients alike (tenants of a tier, say): 0
	// means 1. Each one is a tenant of its own in the results, named
	// Name-i for i from 0 (Name alone when Count is 1), and "{i}" in a
	// descriptor's values stands for i. At most 1,000,000 over all
	// clients.
	Count int
	// Domain is the policy's domain the requests are checked against.
	Domain string
	// Descriptors are the requests' descriptors, as admit serve would
	// receive them; "{i}" in a value is the client's index, and "{key}"
	// the key of a replayed log line. At least one.
	Descriptors []policy.Descriptor
	// Hits is each request's cost. 0 means 1.
	Hits int64
	// Start and Stop bound when the client sends: from Start to Stop
	// (0: the end of the run).
	Start, Stop time.Duration
	// Arrival is when the requests come.
	Arrival Arrival
	// Retry is what the client does when refused.
	Retry Retry
}

// Arrival is a client's arrival process. Rates are requests per second of
// each one of the client's Count.
type Arrival struct {
	// Process is one of:
	//   - "constant": a request every 1/Rate seconds, the first at Start;
	//   - "poisson": exponential gaps of mean 1/Rate (the default);
	//   - "on_off": Poisson at Rate during On, then silence during Off,
	//     and again;
	//   - "diurnal": Poisson at a rate going from Rate (at Start) up to
	//     Peak (half a Period later) and back, as a cosine, every Period;
	//   - "replay": the timestamps of the log Lines (see Log).
	Process string
	// Rate is the requests per second (constant, poisson, on_off; the
	// trough of diurnal). Positive, at most 1e7.
	Rate float64
	// Peak is diurnal's highest rate (at least Rate); Period its cycle
	// (0 means 24h).
	Peak   float64
	Period time.Duration
	// On and Off are on_off's phases, each positive.
	On, Off time.Duration
	// Log is the access log replayed (see Replay for its formats).
	Log *Replay
}

// Replay is an access log whose lines a client replays: each line is a
// request at its timestamp (relative to the first line's) whose key
// ({key} in the descriptors) is a column of the line.
type Replay struct {
	// Format is "csv" (a header line naming the columns, then one request
	// per line; the timestamp is RFC 3339 or Unix seconds, with a
	// fraction) or "clf" (the common log format: host ident user
	// [date] "request" status bytes).
	Format string
	// Time and Key name the columns of the timestamp and of the key in a
	// CSV log (0 means "timestamp" and "key"); in the common log format
	// the key is "host" (the default), "user" or "path".
	Time, Key string
	// Name is where the log came from, for errors ("access.log:12: ...").
	Name string
	// Data is the log's content. ParseTraffic reads it from the file the
	// YAML names, relative to the traffic file, through a size limit.
	Data []byte
}

// Retry is what a client does with a refused request (429).
type Retry struct {
	// On429 is one of "give_up" (the default), "immediate" (send it again
	// after Delay), or "retry_after" (send it again when the refusal's
	// Retry-After says, plus Delay).
	On429 string
	// Delay is added to each retry's wait (a client's round trip, say).
	Delay time.Duration
	// Jitter adds a uniform random wait of up to Jitter times the retry's
	// wait (retry_after: the Retry-After; immediate: Delay), in [0, 10].
	Jitter float64
	// Budget, if positive, caps the retries at Budget per request the
	// client sends (a retry budget, as gRPC's retry throttling and
	// Finagle's): each request adds Budget to the client's tokens (at most
	// 10 tokens held), each retry takes one, and a client without a token
	// gives up. 0 means no budget.
	Budget float64
	// MaxAttempts caps the attempts of each request, the first included.
	// 0 means 5; at most 1000.
	MaxAttempts int
}

// Backend is the service behind admit: Concurrency workers, each serving
// one request at a time for a service time drawn from Distribution, in
// front of a FIFO queue.
type Backend struct {
	// Concurrency is the workers. Required, at most 1,000,000.
	Concurrency int
	// Service is the mean service time (the median for "lognormal").
	// Required.
	Service time.Duration
	// Distribution of the service times: "exponential" (the default),
	// "constant", "uniform" (from Service-Spread to Service+Spread) or
	// "lognormal" (whose 99th percentile is Spread).
	Distribution string
	Spread       time.Duration
	// Queue caps the requests waiting for a worker; one more fails at
	// once (a 503). 0 means 100,000.
	Queue int
	// Timeout, if positive, is how long a request waits in the queue
	// before it fails (the client's deadline).
	Timeout time.Duration
}

// Fault is a period when a shared store does not answer.
type Fault struct {
	// Store names the store (a rule's store:); "" means every shared store.
	Store string
	// From and To bound the outage: [From, To).
	From, To time.Duration
}
