// Package sim plays traffic against a policy on a simulated clock, with
// the same engine and limiters admit serve runs, to answer "what will this
// policy do to this traffic?" before it ships: admitted and denied by
// client, tenant and rule, retry amplification, fairness, the backend's
// queue and latency, and warnings about capacity, bursts and outages.
//
// A run is deterministic: the same policy, traffic and seed give the same
// Result. admit simulate is its command; Go tests may call Run with
// scenarios of their own.
package sim
