// Package promlimit records what admit's limiters decide and do as
// Prometheus metrics: an admit.Observer for
// github.com/prometheus/client_golang.
//
//	reg := prometheus.NewRegistry() // or prometheus.DefaultRegisterer
//	obs, err := promlimit.New(reg, promlimit.Config{})
//	if err != nil {
//		return err
//	}
//	api, err := keyed.New(keyed.Config{
//		Options: admit.Options{Name: "api", Observer: obs},
//		Limit:   admit.PerSecond(100),
//	})
//	...
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// The metrics count decisions by limiter, rule, kind and outcome, time the
// calls to a remote store (Redis) and count their errors, show when a
// failure policy (compose.Guard) decides instead of its store, and follow
// the keys each limiter holds and forgets. Observer lists them.
//
// Observer.Watch adds the state of the limiters you name, read from them
// at each scrape (so watching costs their decisions nothing): the callers
// waiting for a Pacer, a concurrency.Limiter, a fair.Queue or an
// adaptive.Gradient and how long they waited, the slots held, the current
// limits of adaptive limiters with their floor and ceiling, the failures
// and fallback of a compose.Guard, the blocks of a prefetch.Limiter:
//
//	uploads, err := concurrency.New(concurrency.Config{Max: 8})
//	...
//	if err := obs.Watch("uploads", uploads); err != nil {
//		return err
//	}
//	// admit_limiter_in_flight{limiter="uploads"}, admit_limiter_waiting,
//	// admit_limiter_waits_total, admit_limiter_wait_seconds_total...
//
// # Which one should I use?
//
//   - One Observer per process, given to every limiter: the usual choice.
//     The limiters' names (admit.Options.Name in their Config) tell their series apart
//     in the limiter label, so name every limiter, and name each one
//     differently. One Observer costs one set of metrics, and its cap on
//     series (Config.MaxSeries) bounds them all together.
//   - One Observer per component, each with Config.ConstLabels of the same
//     label name (say {"component": "gateway"} and {"component": "jobs"})
//     on one registry, when the components of a process must stay apart
//     even where their limiters share names; or with Config.Namespace when
//     their metrics must have different names.
//     Two Observers of the same namespace and const labels cannot share a
//     registry: New returns an error wrapping
//     prometheus.AlreadyRegisteredError, whose ExistingCollector is the
//     Observer registered first, to share.
//   - Config.KeyLabel only when the keys are few and fixed (a dozen tenants);
//     never for client addresses, users or API keys, which would make a
//     series per client. Logs, or an admit.Observer of your own, are the
//     place for the decisions of single clients.
//   - An admit.Observer of your own, embedding admit.NopObserver, for
//     another metrics system: the interface has five methods.
//
// # Cost
//
// The limiters call the Observer on the request's goroutine, so its
// methods cost, once a label combination has been seen, a comparison with
// the combinations used lately and the update of the metrics (atomic
// additions), without a lock or an allocation: Decided takes a few tens of
// nanoseconds (see the package's benchmarks), less than resolving its
// counter with WithLabelValues would.
package promlimit
