// Package parity checks that admit's TokenBucket answers as
// golang.org/x/time/rate's Limiter does, so that one can replace the other
// line for line. The package has no code; its tests run both limiters side
// by side on long seeded random sequences of calls (AllowN, ReserveN,
// CancelAt in and out of order, Delay and OK, TokensAt, SetLimitAt and
// SetBurstAt, instants forward and backward) and compare every answer, and
// show each deliberate difference on both.
//
// Run them with
//
//	go test -race ./parity
//
// (-short runs a tenth of the sequences).
package parity
