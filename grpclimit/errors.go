package grpclimit

import "errors"

// Errors returned by this package's constructors. They are wrapped with %w
// where a call has more to say, so test them with errors.Is.
var (
	// ErrNilLimiter reports a nil limiter or Decider given to NewServer,
	// NewServerDecider or WithMethod.
	ErrNilLimiter = errors.New("grpclimit: nil limiter")

	// ErrInvalidKey reports a Key that cannot find anything: a metadata
	// name that gRPC would never send, prefix lengths out of range, a nil
	// function, or no Key at all.
	ErrInvalidKey = errors.New("grpclimit: invalid key")

	// ErrInvalidMethod reports a method pattern that is neither a full
	// method ("/package.Service/Method") nor a service ("/package.Service/").
	ErrInvalidMethod = errors.New("grpclimit: invalid method pattern")

	// ErrInvalidOption reports an option given an invalid value, such as a
	// negative number of retries, or an option that does not apply to the
	// constructor it was given to.
	ErrInvalidOption = errors.New("grpclimit: invalid option")
)
