// Package admittest is admit's exported test kit: named instants, timeline
// tables, a manual clock, the conformance suite that every limiter — the
// single-key limiters of package admit, keyed limiters in memory, Redis —
// must pass unchanged, an exact reference model, and checks of the bounds
// the algorithms promise.
//
// It depends on the standard library and package admit only, so any test
// may import it.
//
// # Which helper should I use?
//
//   - To test a new backend (a keyed limiter, a Redis store): write a
//     Factory that returns a fresh, empty admit.KeyedLimiter per call, and
//     call Run from a test (one call: the suite asks the limiter
//     admit.Requests at explicit instants, and checks its partial grants
//     if it is an admit.PartialAllower). Then call RunDifferential
//     (random timelines, decisions compared with Model's) and add a fuzz
//     test that feeds TimelineFromBytes to Differential. The three together are what
//     "decides exactly as package admit does" means.
//   - To write your own timeline tests in the manner of golang.org/x/time/rate
//     (explicit instants, no sleeping): build a Scenario of Steps at instants
//     named with At (step n of 100ms is At(n * Tick)), with Allow, Deny
//     and Never for the expected decisions, and call its Play method.
//   - To drive blocking code (WaitN, a Pacer, anything taking an admit.Clock)
//     without sleeping: ManualClock, with BlockUntilTimers to wait until the
//     code under test is parked on a timer and Advance to fire it.
//   - To check what a limiter admitted (from a fuzz test, a load test, a
//     simulation): record the admitted requests as Events and call
//     CheckBound with the algorithm.
//   - To know what a decision should be: Model, a slow, obviously correct
//     implementation of every algorithm in exact rational arithmetic
//     (math/big), sharing no code with package admit.
//
// # Errors and refusals
//
// A denial is a Decision, not an error. The suite accepts an error from a
// limiter under test in one case only: where the decision would be a refusal for good
// (Allowed false, RetryAfter admit.InfDuration): an error wrapping
// admit.ErrInvalidCost for n < 0, and one wrapping admit.ErrExceedsBurst for
// n > 0 above the burst or under a zero limit. Any other error fails the
// step: a backend error must never pass for a decision.
package admittest
