package adaptive

import "strconv"

// Outcome is what became of a request an adaptive limiter admitted: the
// signal the limit adapts to. The zero Outcome is Succeeded.
type Outcome uint8

const (
	// Succeeded: the request was served. An AIMD grows its rate; a
	// Gradient takes the request's latency as a sample.
	Succeeded Outcome = iota
	// Dropped: the request failed because what the limiter protects is
	// overloaded: a timeout, a 503 or 429 from the backend, a queue that
	// refused it. It counts as overload: an AIMD cuts its rate, a Gradient
	// cuts its limit. Report failures that say nothing about load as
	// Ignored, or a steady trickle of them keeps the limit down.
	Dropped
	// Ignored: the request says nothing about load (a client error, a
	// cancellation by the caller). It gives back its slots and changes
	// nothing else.
	Ignored
)

var outcomeNames = [...]string{Succeeded: "succeeded", Dropped: "dropped", Ignored: "ignored"}

// String returns "succeeded", "dropped" or "ignored".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// valid reports whether o is one of the three outcomes.
func (o Outcome) valid() bool { return o <= Ignored }
