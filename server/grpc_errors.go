package server

import "errors"

// Errors of the gRPC APIs, wrapped with %w where there is more to say:
// test them with errors.Is. (They live here rather than in errors.go so
// that the gRPC side of the package can be built on its own.)
var (

	// errBadGRPCRequest reports a gRPC request that cannot be decided: no
	// domain, no descriptors or too many, an empty key, a value too long,
	// a cost out of range, an invalid inline limit. The server answers
	// INVALID_ARGUMENT with the error's text.
	errBadGRPCRequest = errors.New("server: invalid request")
)
