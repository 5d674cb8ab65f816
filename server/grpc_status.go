package server

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/policy"
)

// grpcCheckError is the gRPC status of an error of policy.Engine.Check.
func grpcCheckError(err error) error {
	switch {
	case errors.Is(err, policy.ErrInvalidRequest),
		errors.Is(err, admit.ErrKeyTooLong):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, admit.ErrTooManyKeys): // keyed's arena, policy's inline limits and adaptive keys too
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	// A closed engine (replaced while the request was on its way), a
	// store that failed: another try may succeed.
	return status.Error(codes.Unavailable, "the request could not be decided: "+err.Error())
}

// grpcOptionError is an admit.ErrInvalidConfig saying what is wrong.
func grpcOptionError(msg string) error {
	return fmt.Errorf("%w: %s", errInvalidConfig, msg)
}
