package httplimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// KeyFunc returns the key a request is limited under: its client address,
// API key, user, route, or a combination. An error means the request
// cannot be keyed (the middleware refuses it with 400, or serves it
// without a limit under Config.SkipUnkeyed); the KeyFuncs of this package
// return errors wrapping ErrNoKey. A KeyFunc must be safe for concurrent
// use, and should return a substring of the request rather than a new
// string where it can, to save an allocation.
type KeyFunc func(r *http.Request) (string, error)

// Const returns a KeyFunc that gives every request the key key: one limit
// shared by all requests (a global limit, or a limit per route when the
// middleware wraps one route).
func Const(key string) KeyFunc {
	return func(*http.Request) (string, error) { return key, nil }
}

// Header returns a KeyFunc that keys a request by the value of its header
// name, which must appear exactly once with a non-empty value. A missing
// header is an error wrapping ErrNoKey; an empty or repeated one is an
// error wrapping ErrBadKey (repeated, since a proxy may have added a line
// to the client's, and which one to trust is not for this function to
// guess), which never lifts the limit. The value is not trimmed beyond
// what net/http does.
func Header(name string) KeyFunc {
	canon := textproto.CanonicalMIMEHeaderKey(name)
	missing := fmt.Errorf("%w: header %s is missing", ErrNoKey, canon)
	empty := fmt.Errorf("%w: header %s is empty", ErrBadKey, canon)
	repeated := fmt.Errorf("%w: header %s appears more than once", ErrBadKey, canon)
	return func(r *http.Request) (string, error) {
		v := r.Header[canon]
		switch {
		case len(v) > 1:
			return "", repeated
		case len(v) == 0:
			return "", missing
		case v[0] == "":
			return "", empty
		}
		return v[0], nil
	}
}

// Method returns a KeyFunc that keys a request by its method ("GET" for
// an empty one).
func Method() KeyFunc {
	return func(r *http.Request) (string, error) {
		if r.Method == "" {
			return http.MethodGet, nil
		}
		return r.Method, nil
	}
}

// Route returns a KeyFunc that keys a request by the http.ServeMux pattern
// that matched it (Request.Pattern, Go 1.22+), such as "GET /items/{id}",
// so that all requests to one route share a limit whatever their path
// values. ServeMux sets the pattern when it routes the request, so it is
// set only in handlers the mux calls: wrap each route's handler,
//
//	mux.Handle("GET /items/{id}", m.Handler(items))
//
// rather than the mux (or use RouteOf). A request without a pattern is an
// error wrapping ErrNoKey.
func Route() KeyFunc {
	missing := fmt.Errorf("%w: the request has no route pattern (wrap the mux's handlers, not the mux; see Route)", ErrNoKey)
	return func(r *http.Request) (string, error) {
		if r.Pattern == "" {
			return "", missing
		}
		return r.Pattern, nil
	}
}

// RouteOf returns a KeyFunc that keys a request by the pattern of mux that
// matches it, found with mux.Handler: for middleware that wraps the whole
// mux, where Request.Pattern is not yet set. It routes each request twice
// (here and in the mux). A request no pattern matches (one the mux will
// answer 404, 405 or with a redirect) is an error wrapping ErrNoKey.
func RouteOf(mux *http.ServeMux) KeyFunc {
	missing := fmt.Errorf("%w: no route of the mux matches the request", ErrNoKey)
	return func(r *http.Request) (string, error) {
		_, p := mux.Handler(r)
		if p == "" {
			return "", missing
		}
		return p, nil
	}
}

// FromContext returns a KeyFunc that keys a request by what f finds in its
// context, such as the user an authentication middleware stored there:
//
//	httplimit.FromContext(func(ctx context.Context) (string, bool) {
//		user, ok := ctx.Value(userKey{}).(string)
//		return user, ok
//	})
//
// f's false, or an empty string, is an error wrapping ErrNoKey.
func FromContext(f func(ctx context.Context) (string, bool)) KeyFunc {
	if f == nil {
		panic("httplimit: FromContext(nil)")
	}
	missing := fmt.Errorf("%w: no key in the context", ErrNoKey)
	return func(r *http.Request) (string, error) {
		s, ok := f(r.Context())
		if !ok || s == "" {
			return "", missing
		}
		return s, nil
	}
}

// Bearer returns a KeyFunc that keys a request by its API key sent as
// the token of an "Authorization: Bearer <token>" header (the scheme in
// any case). A request without an Authorization header, or with one of
// another scheme, is an error wrapping ErrNoKey. A Bearer Authorization
// without a single token, or an Authorization header given twice, is an
// error wrapping ErrBadKey, which never lifts the limit. For an API key
// in another header use Header ("X-API-Key"), in the URL's query Query;
// First(Bearer(), Header("X-API-Key")) looks in both, in order. The key
// is used as it is: to keep secrets out of the limiter's memory and out
// of a shared store's key names, wrap the KeyFunc in Hashed.
func Bearer() KeyFunc {
	missing := fmt.Errorf("%w: no bearer token in the request", ErrNoKey)
	bad := fmt.Errorf("%w: the bearer token is repeated, empty or malformed", ErrBadKey)
	return func(r *http.Request) (string, error) {
		v, st := bearer(r.Header["Authorization"])
		return keyOf(v, st, missing, bad)
	}
}

// Query returns a KeyFunc that keys a request by the value of its URL
// query parameter param (such as "api_key"), which must appear exactly
// once with a non-empty value that unescapes. A missing parameter is an
// error wrapping ErrNoKey; a repeated, empty or badly escaped one is an
// error wrapping ErrBadKey, which never lifts the limit. Wrap it in
// Hashed to keep a secret out of the limiter.
func Query(param string) KeyFunc {
	missing := fmt.Errorf("%w: query parameter %q is missing", ErrNoKey, param)
	bad := fmt.Errorf("%w: query parameter %q is repeated, empty or badly escaped", ErrBadKey, param)
	return func(r *http.Request) (string, error) {
		v, st := queryParam(r.URL.RawQuery, param)
		return keyOf(v, st, missing, bad)
	}
}

// keyOf returns the key v of a source in state st, or the error of its
// state.
func keyOf(v string, st keyState, missing, bad error) (string, error) {
	switch st {
	case keyOK:
		return v, nil
	case keyBad:
		return "", bad
	}
	return "", missing
}

// keyState is what a source of a key holds.
type keyState uint8

const (
	keyAbsent keyState = iota // nothing: ErrNoKey
	keyOK                     // one usable key
	keyBad                    // repeated, empty or malformed: ErrBadKey
)

// bearer returns the token of a single "Bearer" Authorization header. An
// Authorization of another scheme holds no API key.
func bearer(vs []string) (string, keyState) {
	switch {
	case len(vs) == 0:
		return "", keyAbsent
	case len(vs) > 1:
		return "", keyBad
	}
	scheme, tok, _ := strings.Cut(strings.TrimLeft(vs[0], " \t"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", keyAbsent
	}
	tok = strings.Trim(tok, " \t")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", keyBad
	}
	return tok, keyOK
}

// queryParam finds the value of param in a raw query, without building
// url.Values: keyOK when it is present once with a non-empty value that
// unescapes, keyBad when it is present otherwise.
func queryParam(raw, param string) (string, keyState) {
	var (
		v  string
		st = keyAbsent
	)
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		k, val, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(k, "%+") {
			uk, err := url.QueryUnescape(k)
			if err != nil {
				continue
			}
			k = uk
		}
		if k != param {
			continue
		}
		if st != keyAbsent {
			return "", keyBad
		}
		st = keyOK
		if strings.ContainsAny(val, "%+") {
			uv, err := url.QueryUnescape(val)
			if err != nil {
				st = keyBad
			}
			val = uv
		}
		if val == "" {
			st = keyBad
		}
		v = val
	}
	if st != keyOK {
		return "", st
	}
	return v, st
}

// Hashed returns a KeyFunc that keys a request by the SHA-256 of k's key
// (its first 128 bits, in 32 hex digits): for secrets such as API keys,
// which then appear neither in the limiter's memory nor in a shared
// store's key names. k's errors pass through. Hashed panics if k is nil.
func Hashed(k KeyFunc) KeyFunc {
	if k == nil {
		panic("httplimit: Hashed(nil)")
	}
	return func(r *http.Request) (string, error) {
		s, err := k(r)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256([]byte(s))
		var buf [32]byte
		return string(hex.AppendEncode(buf[:0], sum[:16])), nil
	}
}

// First returns a KeyFunc that keys a request by the first of keys that
// can key it: First(Bearer(), clientIP.Key) limits clients by API key when
// they send one and by address otherwise. (Prefix the keys, with Join and
// Const, if an API key could collide with an address.) If none can, the
// error is the last one's. A key sent oddly (an error wrapping ErrBadKey,
// such as a repeated API key) stops the search with its error rather than
// falling back. First panics if keys is empty or holds a nil KeyFunc.
func First(keys ...KeyFunc) KeyFunc {
	ks := checkKeys("First", keys)
	return func(r *http.Request) (string, error) {
		var err error
		for _, k := range ks {
			var s string
			if s, err = k(r); err == nil {
				return s, nil
			}
			if errors.Is(err, ErrBadKey) {
				return "", err
			}
		}
		return "", err
	}
}

// Join returns a KeyFunc that keys a request by all of keys at once, such
// as the client and the route: the keys joined with '|' after escaping
// each '\' and '|' in them with a '\', so that different lists of keys
// always give different joined keys ("a|b" then "c" is `a\|b|c`, "a" then
// "b|c" is `a|b\|c`). An error of any of keys is the joined KeyFunc's
// error. Join panics if keys is empty or holds a nil KeyFunc.
func Join(keys ...KeyFunc) KeyFunc {
	ks := checkKeys("Join", keys)
	return func(r *http.Request) (string, error) {
		var stack [128]byte
		b := stack[:0]
		for i, k := range ks {
			s, err := k(r)
			if err != nil {
				return "", err
			}
			if i > 0 {
				b = append(b, '|')
			}
			b = appendEscaped(b, s)
		}
		return string(b), nil
	}
}

func checkKeys(fn string, keys []KeyFunc) []KeyFunc {
	if len(keys) == 0 {
		panic("httplimit: " + fn + " needs at least one KeyFunc")
	}
	for _, k := range keys {
		if k == nil {
			panic("httplimit: " + fn + " given a nil KeyFunc")
		}
	}
	return append([]KeyFunc(nil), keys...)
}

// appendEscaped appends s with '\' and '|' escaped by a '\'.
func appendEscaped(b []byte, s string) []byte {
	for {
		i := strings.IndexAny(s, `\|`)
		if i < 0 {
			return append(b, s...)
		}
		b = append(b, s[:i]...)
		b = append(b, '\\', s[i])
		s = s[i+1:]
	}
}
