package sim

import "time"

// Result is what a run measured: counts by client, tenant and rule, the
// backend's queue, fairness, retries, time series for charts, and the
// warnings a user can act on. It is plain data: encoding/json writes it
// as the report's JSON.
type Result struct {
	// Duration and Step are the run's (Traffic.Duration, and the width of
	// the buckets of Series).
	Duration time.Duration
	Step     time.Duration
	// Seed is the seed the run used; Algorithm the algorithm every rate
	// was decided by when Config.Algorithm replaced the policy's ("" if
	// not).
	Seed      uint64
	Algorithm string

	// Total counts every request of the run.
	Total Tally
	// Clients has one Tally per Traffic.Clients entry, in their order.
	Clients []Tally
	// Tenants has one Tally per client of a Count (Name-i), in order; at
	// most 10,000 (the rest are counted in Clients and Total only).
	Tenants []Tally
	// Rules has one Tally per rule asked (named as Decision.Rule: the
	// rule, then its tier), sorted by name; Requests are the requests it
	// was asked about, Admitted and Denied what it said (Requests counts
	// retries: each attempt is a request to the policy).
	Rules []Tally

	// Amplification is the attempts per successful request: Attempts /
	// Succeeded over the run (0 if none succeeded). With no retries it is
	// 1/(share admitted); retries raise it.
	Amplification float64
	// Fairness is Jain's index over the tenants' satisfaction (each one's
	// Succeeded/Requests): 1 when every tenant gets the same share of
	// what it asks, 1/n when one gets everything. 0 without tenants.
	Fairness float64

	// The backend's figures (zero without a Backend). Latency is from
	// admission to the end of service (the queue's wait included), of the
	// requests served; Queue counts the requests waiting, weighted by
	// time.
	LatencyP50, LatencyP99 time.Duration
	QueueP50, QueueP99     float64
	// Little's law on the simulated backend: L, the mean number of
	// requests in it (waiting or served) over the run; Lambda, the
	// requests per second that left it; W, their mean time in it
	// (seconds); LittleError, |L - Lambda×W| / L.
	L, Lambda, W, LittleError float64
	// Capacity is the backend's throughput at full use (Concurrency /
	// Service), in requests per second.
	Capacity float64

	// Series are the time series of the run, one point per Step.
	Series []Series
	// Warnings are the findings a user should act on, with their
	// figures.
	Warnings []Warning
}

// Tally counts requests. For a client or a tenant, Requests are the
// requests it meant to send and Attempts what it sent, retries included;
// for a rule, see Result.Rules.
type Tally struct {
	Name      string
	Requests  int64 // requests (first attempts)
	Attempts  int64 // attempts, retries included
	Admitted  int64 // attempts admitted
	Denied    int64 // attempts refused (by a limit, or an error of the check)
	GaveUp    int64 // requests abandoned after a refusal (Retry: give_up, budget, attempts)
	Succeeded int64 // requests admitted and served
	Failed    int64 // requests admitted that the backend failed (queue full, timeout)

	// For rules, in events (requests × cost): Ideal is what one exact
	// limiter of the rule's rate, by the policy's algorithm (also when
	// Config.Algorithm replaces it, so that algorithms are measured
	// against one yardstick), would have admitted of the same requests;
	// Over and Under sum what each key was admitted beyond it and short
	// of it. Bound is the most any one key may be admitted in the run by
	// the rule's rate under the algorithm in force (B + floor(Duration/T)
	// for the buckets; see admit.NewFixedWindow for the windows), and
	// OverBound the admissions beyond it, summed over keys (failure
	// policies, local shares). Zero for rules without a single rate.
	Ideal, Over, Under, Bound, OverBound int64
}

// Series is one time series of a run: Points[i] is the value over
// [i×Step, (i+1)×Step).
type Series struct {
	// Name is what it measures: "admitted", "denied", "retries"
	// (attempts per second) of Client; or "queue" (mean requests
	// waiting), "in_flight" (mean requests in service), "latency_p50",
	// "latency_p99" (seconds) of the backend, Client "".
	Name   string
	Client string
	Points []float64
}

// Warning is a finding with the figures behind it.
type Warning struct {
	// Kind is "capacity" (the sum of limits exceeds the backend's
	// capacity at the headroom), "burst" (a burst too small for the
	// arrivals' variance), "outage" (the fleet admitted more than a shared
	// limit during a fault), "bound" (a rule admitted a key more than
	// its limit allows), "error" (checks failed, or the run followed
	// fewer keys than it saw) or "model" (something admit serve does
	// that the simulation decides otherwise, such as prefetching).
	Kind string
	// Message says it in a sentence with its numbers.
	Message string
}
