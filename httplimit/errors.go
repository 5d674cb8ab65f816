package httplimit

import (
	"errors"
	"fmt"

	"github.com/admit-go/admit"
)

// Errors returned by this package. They are wrapped with %w where a call
// has more to say, so test them with errors.Is. Besides these, a
// constructor given a nil limiter, key function, chain or Decider fails
// with an error wrapping admit.ErrInvalidConfig; a key longer than
// Config.MaxKeyLength is admit.ErrKeyTooLong (431), and a negative cost
// admit.ErrInvalidCost (400, and ErrBadKey).
var (
	// ErrNoKey reports a request that a KeyFunc cannot key: the header,
	// API key, route or context value it looks for is missing. The
	// middleware refuses such a request with 400 Bad Request, or serves it
	// without a limit under Config.SkipUnkeyed. A Decider may return it
	// (wrapped) for the same treatment.
	ErrNoKey = errors.New("httplimit: request has no key")

	// ErrBadKey reports a request that carries its key in a form that
	// cannot be trusted: a header or query parameter that is repeated or
	// present but empty, several API keys, or a forwarding header from
	// trusted proxies that is too short or malformed. It wraps ErrNoKey,
	// but unlike a missing key it is never a reason to serve the request
	// without a limit: the middleware refuses it with 400
	// {"code":"KEY_INVALID"} whatever Config.SkipUnkeyed says, and
	// policy.HTTP does not leave its descriptor out. So a client cannot
	// escape its own limit by repeating or emptying the header it is keyed
	// by.
	ErrBadKey error = &kindOf{"httplimit: request has an invalid key", ErrNoKey}

	// ErrNoClientIP reports a request whose client address cannot be
	// trusted or parsed: an unparsable RemoteAddr (a Unix socket), or, when
	// proxies are trusted, a forwarding header whose trusted part is
	// missing, too short, malformed, or names the client as "unknown" or by
	// an obfuscated identifier. It wraps ErrNoKey; the errors about a
	// forwarding header (which a client may have sent itself, bypassing
	// the proxies) wrap ErrBadKey too.
	ErrNoClientIP error = &kindOf{"httplimit: no trustworthy client address", ErrNoKey}
)

// errKeyTooLong reports a key longer than Config.MaxKeyLength: the
// middleware refuses the request with 431 Request Header Fields Too Large
// without asking the limiter, as it does when the limiter itself finds the
// key too long.
var errKeyTooLong = fmt.Errorf("%w: httplimit: key longer than Config.MaxKeyLength", admit.ErrKeyTooLong)

// errNegativeCost reports a cost function that returned a negative cost:
// it is admit.ErrInvalidCost and ErrBadKey, so the request is refused with
// 400 (an error of the cost function is treated alike), never served
// without a limit.
var errNegativeCost error = &kindsOf{"httplimit: negative cost", []error{admit.ErrInvalidCost, ErrBadKey}}

// kindOf is a sentinel error that is a kind of another: errors.Is matches
// both, and its message is its own.
type kindOf struct {
	msg  string
	base error
}

func (e *kindOf) Error() string { return e.msg }
func (e *kindOf) Unwrap() error { return e.base }

// kindsOf is an error that is a kind of each of several others: errors.Is
// matches them all, and its message is its own.
type kindsOf struct {
	msg   string
	bases []error
}

func (e *kindsOf) Error() string   { return e.msg }
func (e *kindsOf) Unwrap() []error { return e.bases }
