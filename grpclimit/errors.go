package grpclimit

// This package has no error values of its own. Its constructors' errors
// wrap admit.ErrInvalidConfig, with a message naming the problem: a nil
// limiter or Decider given to NewServer, NewServerDecider or in a Config's
// Methods; a field of a Config out of its domain; a method pattern (of
// Config.Methods or Config.Exempt) that is neither a full method
// ("/package.Service/Method") nor a service ("/package.Service/"): "invalid
// method pattern"; and a Key that cannot find anything (a metadata name
// that gRPC would never send, prefix lengths out of range, a nil function,
// or no Key at all): "grpclimit: invalid key". Test them with errors.Is.

// badKey returns the error of a Key that cannot find anything.
func badKey(format string, args ...any) error {
	return invalid("invalid key: "+format, args...)
}
