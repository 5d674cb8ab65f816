package promlimit

import "errors"

var (
	// ErrNilRegisterer is returned by New when it is given no
	// prometheus.Registerer. New never falls back on the global registry
	// (prometheus.DefaultRegisterer): pass it explicitly to use it.
	ErrNilRegisterer = errors.New("promlimit: nil prometheus.Registerer")

	// ErrInvalidOption is wrapped by the errors New returns for an option
	// with an invalid value.
	ErrInvalidOption = errors.New("promlimit: invalid option")

	// ErrRegistration is wrapped by the errors New returns when the
	// registry refuses the metrics. The registry's own error is wrapped
	// too: errors.As finds a prometheus.AlreadyRegisteredError when an
	// Observer of the same namespace and const labels is registered
	// already (its ExistingCollector is that *Observer).
	ErrRegistration = errors.New("promlimit: cannot register the metrics")
)
