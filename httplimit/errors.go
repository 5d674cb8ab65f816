package httplimit

import (
	"errors"

	"github.com/admit-go/admit"
)

// Errors returned by this package. They are wrapped with %w where a call
// has more to say, so test them with errors.Is.
var (
	// ErrInvalidOption reports an option given an invalid value, such as a
	// refusal status outside 400-599 or a negative maximum key length.
	ErrInvalidOption = errors.New("httplimit: invalid option")

	// ErrNilArgument reports a nil limiter, key function, chain or Decider
	// given to a constructor.
	ErrNilArgument = errors.New("httplimit: nil argument")

	// ErrNoKey reports a request that a KeyFunc cannot key: the header,
	// API key, route or context value it looks for is missing, empty or
	// ambiguous. The middleware refuses such a request with 400 Bad Request,
	// or serves it without a limit under WithSkipUnkeyed. A Decider may
	// return it (wrapped) for the same treatment.
	ErrNoKey = errors.New("httplimit: request has no key")

	// ErrNoClientIP reports a request whose client address cannot be
	// trusted or parsed: an unparsable RemoteAddr (a Unix socket), or, when
	// proxies are trusted, a forwarding header whose trusted part is
	// missing, too short, malformed, or names the client as "unknown" or by
	// an obfuscated identifier. It wraps ErrNoKey.
	ErrNoClientIP error = &kindOf{"httplimit: no trustworthy client address", ErrNoKey}

	// ErrKeyTooLong reports a key longer than the maximum (see
	// WithMaxKeyLength). The middleware refuses the request with 431
	// Request Header Fields Too Large without asking the limiter, as it
	// does when the limiter itself finds the key too long. It is
	// admit.ErrKeyTooLong.
	ErrKeyTooLong = admit.ErrKeyTooLong

	// ErrInvalidCost reports a cost function that returned a negative cost.
	// It wraps ErrNoKey: the request is treated as one that cannot be keyed.
	ErrInvalidCost error = &kindOf{"httplimit: negative cost", ErrNoKey}
)

// kindOf is a sentinel error that is a kind of another: errors.Is matches
// both, and its message is its own.
type kindOf struct {
	msg  string
	base error
}

func (e *kindOf) Error() string { return e.msg }
func (e *kindOf) Unwrap() error { return e.base }
