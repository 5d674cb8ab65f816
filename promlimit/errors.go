package promlimit

import "errors"

// Errors returned by New, besides admit.ErrInvalidConfig for a nil
// prometheus.Registerer (New never falls back on the global registry,
// prometheus.DefaultRegisterer: pass it explicitly to use it) or a Config
// with a field outside its domain.
var (
	// ErrRegistration is wrapped by the errors New returns when the
	// registry refuses the metrics. The registry's own error is wrapped
	// too: errors.As finds a prometheus.AlreadyRegisteredError when an
	// Observer of the same namespace and const labels is registered
	// already (its ExistingCollector is that *Observer).
	ErrRegistration = errors.New("promlimit: cannot register the metrics")
)
