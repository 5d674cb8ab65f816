package grpclimit

import "errors"

// Errors returned by this package's constructors. They are wrapped with %w
// where a call has more to say, so test them with errors.Is. Besides these,
// a nil limiter or Decider given to NewServer, NewServerDecider or in a
// Config's Methods is an error wrapping admit.ErrInvalidConfig.
var (
	// ErrInvalidKey reports a Key that cannot find anything: a metadata
	// name that gRPC would never send, prefix lengths out of range, a nil
	// function, or no Key at all.
	ErrInvalidKey = errors.New("grpclimit: invalid key")

	// ErrInvalidMethod reports a method pattern (of Config.Methods or
	// Config.Exempt) that is neither a full method
	// ("/package.Service/Method") nor a service ("/package.Service/"). The
	// error wraps admit.ErrInvalidConfig too.
	ErrInvalidMethod = errors.New("grpclimit: invalid method pattern")
)
