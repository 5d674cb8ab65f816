package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/envoyunit"
	"github.com/admit-go/admit/policy"
)

// The codes of the API's error bodies, {"code": ..., "message": ...}.
const (
	apiCodeInvalidJSON        = "INVALID_JSON"           // 400: not JSON, or a value of the wrong type
	apiCodeUnknownField       = "UNKNOWN_FIELD"          // 400
	apiCodeMissingField       = "MISSING_FIELD"          // 400: a required field missing or empty
	apiCodeInvalidArgument    = "INVALID_ARGUMENT"       // 422: a value outside its domain
	apiCodeUnknownDomain      = "UNKNOWN_DOMAIN"         // 422, WithStrictDomains
	apiCodeBodyTooLarge       = "BODY_TOO_LARGE"         // 413
	apiCodeTooManyDescriptors = "TOO_MANY_DESCRIPTORS"   // 413
	apiCodeUnsupportedMedia   = "UNSUPPORTED_MEDIA_TYPE" // 415
	apiCodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"     // 405
	apiCodeNotFound           = "NOT_FOUND"              // 404
	apiCodeLeaseNotFound      = "LEASE_NOT_FOUND"        // 404
	apiCodeForbidden          = "FORBIDDEN"              // 403: /v1/reset not enabled
	apiCodeTooManyLeases      = "TOO_MANY_LEASES"        // 503
	apiCodeNoPolicy           = "NO_POLICY"              // 503
	apiCodeUnavailable        = "UNAVAILABLE"            // 503
	apiCodeResourceExhausted  = "RESOURCE_EXHAUSTED"     // 503: the engine's limiters are full
	apiCodeInternal           = "INTERNAL"               // 500
)

// apiError is an error answer: an HTTP status and the body's code and
// message.
type apiError struct {
	status  int
	code    string
	message string
}

func apiBadRequest(code, format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, code, fmt.Sprintf(format, args...)}
}

func apiUnprocessable(format string, args ...any) *apiError {
	return &apiError{http.StatusUnprocessableEntity, apiCodeInvalidArgument, fmt.Sprintf(format, args...)}
}

// apiMaxEcho is the most bytes of a client's text an error message quotes.
const apiMaxEcho = 64

// apiEcho returns s for an error message: at most apiMaxEcho bytes, valid UTF-8.
func apiEcho(s string) string {
	if len(s) > apiMaxEcho {
		s = s[:apiMaxEcho]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		return s + "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// apiEchoLong returns a longer text (an error of a decoder or of the
// rate-limit service) for a message: at most 4×apiMaxEcho bytes.
func apiEchoLong(s string) string {
	if len(s) > 4*apiMaxEcho {
		return apiEcho(s[:4*apiMaxEcho])
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// apiInt is an optional JSON integer: set reports that the field was
// given (not null), big that it does not fit an int64.
type apiInt struct {
	v        int64
	set, big bool
}

var apiIntType = reflect.TypeFor[apiInt]()

// UnmarshalJSON accepts null (not set) and integer literals, whatever
// their size; a fraction, an exponent or another type is a type error.
func (n *apiInt) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*n = apiInt{}
		return nil
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		what := "number " + apiEcho(s)
		switch {
		case s[0] == '"':
			what = "string"
		case s[0] == '{':
			what = "object"
		case s[0] == '[':
			what = "array"
		case s == "true" || s == "false":
			what = "bool"
		}
		return &json.UnmarshalTypeError{Value: what, Type: apiIntType}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	*n = apiInt{v: v, set: true, big: err != nil}
	return nil
}

// apiEntry, apiLimit, apiDescriptor and apiBody are the JSON requests of
// /v1/check and /v1/acquire.
type apiEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type apiLimit struct {
	RequestsPerUnit apiInt  `json:"requests_per_unit"`
	Unit            *string `json:"unit"`
	Rate            *string `json:"rate"`
}

type apiDescriptor struct {
	Entries []apiEntry `json:"entries"`
	Hits    apiInt     `json:"hits"`
	Limit   *apiLimit  `json:"limit"`
}

type apiBody struct {
	Domain      string          `json:"domain"`
	Descriptors []apiDescriptor `json:"descriptors"`
	Hits        apiInt          `json:"hits"`
	TTL         apiInt          `json:"ttl_ms"` // /v1/acquire only
}

// reset empties b for the next request, keeping the capacity of the
// descriptors and their entries. encoding/json decodes into the elements
// it finds within a slice's capacity without zeroing them first, so every
// element is zeroed here: nothing of a previous request can leak into
// the next.
func (b *apiBody) reset() {
	ds := b.Descriptors[:cap(b.Descriptors)]
	for i := range ds {
		es := ds[i].Entries[:cap(ds[i].Entries)]
		clear(es)
		ds[i] = apiDescriptor{Entries: es[:0]}
	}
	*b = apiBody{Descriptors: ds[:0]}
}

// apiLeaseBody is the JSON request of /v1/release and /v1/extend.
type apiLeaseBody struct {
	LeaseID string `json:"lease_id"`
	Failed  *bool  `json:"failed"` // /v1/release only
	TTL     apiInt `json:"ttl_ms"` // /v1/extend only
}

// apiCheckContentType accepts a request without Content-Type, or of JSON.
func apiCheckContentType(r *http.Request) *apiError {
	ct := r.Header.Get("Content-Type")
	if ct == "" || ct == "application/json" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return nil
	}
	return &apiError{http.StatusUnsupportedMediaType, apiCodeUnsupportedMedia,
		fmt.Sprintf("Content-Type %q is not JSON: send application/json", apiEcho(ct))}
}

// apiBodyBuf is a buffer a request body is read into, and a reader of it.
type apiBodyBuf struct {
	b bytes.Buffer
	r bytes.Reader
}

// apiBodyPool holds the buffers request bodies are read into.
var apiBodyPool = sync.Pool{New: func() any { return new(apiBodyBuf) }}

// apiMaxPooledBody is the capacity beyond which a body buffer is not
// pooled.
const apiMaxPooledBody = 64 << 10

// apiDecodeJSON decodes the body of r, at most max bytes, into v: one JSON
// value in valid UTF-8, no unknown field, nothing after it.
func apiDecodeJSON(w http.ResponseWriter, r *http.Request, max int64, v any) *apiError {
	bb := apiBodyPool.Get().(*apiBodyBuf)
	buf := &bb.b
	defer func() {
		if buf.Cap() <= apiMaxPooledBody {
			buf.Reset()
			bb.r.Reset(nil)
			apiBodyPool.Put(bb)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, max)); err != nil {
		return apiDecodeError(err)
	}
	// encoding/json would read invalid UTF-8 and lone surrogates as
	// U+FFFD, so that different keys would become one, and a body that
	// gRPC refuses would pass here.
	if off, ok := apiValidText(buf.Bytes()); !ok {
		return apiBadRequest(apiCodeInvalidJSON, "invalid JSON at byte %d: not valid UTF-8 (or an unpaired surrogate escape)", off)
	}
	bb.r.Reset(buf.Bytes())
	dec := json.NewDecoder(&bb.r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apiDecodeError(err)
	}
	// Nothing but white space may follow.
	switch _, err := dec.Token(); {
	case err == io.EOF:
		return nil
	case err != nil:
		return apiDecodeError(err)
	}
	return apiBadRequest(apiCodeInvalidJSON, "the body holds more than one JSON value")
}

// apiDecodeError describes an error of encoding/json.
func apiDecodeError(err error) *apiError {
	var (
		maxErr  *http.MaxBytesError
		synErr  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &maxErr):
		return &apiError{http.StatusRequestEntityTooLarge, apiCodeBodyTooLarge,
			fmt.Sprintf("the body is larger than %d bytes", maxErr.Limit)}
	case err == io.EOF:
		return apiBadRequest(apiCodeInvalidJSON, "the body is empty: want a JSON object")
	case err == io.ErrUnexpectedEOF:
		return apiBadRequest(apiCodeInvalidJSON, "the body ends in the middle of its JSON value")
	case errors.As(err, &synErr):
		return apiBadRequest(apiCodeInvalidJSON, "invalid JSON at byte %d: %s", synErr.Offset, strings.TrimPrefix(synErr.Error(), "json: "))
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return apiBadRequest(apiCodeInvalidJSON, "the body is a JSON %s: want an object", typeErr.Value)
		}
		return apiBadRequest(apiCodeInvalidJSON, "%s: want %s, got a JSON %s", typeErr.Field, apiJSONKind(typeErr.Type), typeErr.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		if s, err := strconv.Unquote(f); err == nil {
			f = strconv.Quote(apiEcho(s))
		}
		return apiBadRequest(apiCodeUnknownField, "unknown field %s", f)
	}
	return apiBadRequest(apiCodeInvalidJSON, "reading the body: %s", apiEcho(msg))
}

// apiJSONKind names the JSON type that decodes into t.
func apiJSONKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	if t == apiIntType {
		return "an integer"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

// hits returns the cost n says, or def if it is not set.
func apiHits(n apiInt, def int64, field string) (int64, *apiError) {
	switch {
	case !n.set:
		return def, nil
	case n.big || n.v < 0 || n.v > maxHits:
		return 0, apiUnprocessable("%s: %s is outside [0, %d]", field, apiIntText(n), int64(maxHits))
	}
	return n.v, nil
}

func apiIntText(n apiInt) string {
	if n.big {
		return "the value"
	}
	return strconv.FormatInt(n.v, 10)
}

// request turns a decoded body into the engine's request, in req (whose
// descriptors' capacity it reuses); entries and limits hold the
// descriptors' entries and inline limits, which req points to.
func (a *API) request(b *apiBody, req *policy.Request, entries *[]policy.Entry, limits *[]admit.Limit) *apiError {
	o := &a.o
	switch {
	case b.Domain == "":
		return apiBadRequest(apiCodeMissingField, "domain is required")
	case len(b.Domain) > o.maxValue:
		return apiUnprocessable("domain: %d bytes, the maximum is %d", len(b.Domain), o.maxValue)
	case len(b.Descriptors) == 0:
		return apiBadRequest(apiCodeMissingField, "descriptors: at least one descriptor is required")
	case len(b.Descriptors) > o.maxDescriptors:
		return &apiError{http.StatusRequestEntityTooLarge, apiCodeTooManyDescriptors,
			fmt.Sprintf("%d descriptors, the maximum is %d", len(b.Descriptors), o.maxDescriptors)}
	}
	hits, err := apiHits(b.Hits, 1, "hits")
	if err != nil {
		return err
	}
	req.Domain, req.Hits = b.Domain, hits
	sizeRequest(b, req, entries, limits)
	for i := range b.Descriptors {
		bd := &b.Descriptors[i]
		d := &req.Descriptors[i]
		if err := a.checkEntries(bd, i); err != nil {
			return err
		}
		start := len(*entries)
		for _, en := range bd.Entries {
			*entries = append(*entries, policy.Entry{Key: en.Key, Value: en.Value})
		}
		d.Entries = (*entries)[start:len(*entries):len(*entries)]
		if bd.Hits.set {
			n, err := apiHits(bd.Hits, 0, "descriptors["+strconv.Itoa(i)+"].hits")
			if err != nil {
				return err
			}
			d.Hits, d.OwnHits = n, true
		}
		if bd.Limit != nil {
			l, err := apiInlineLimit(bd.Limit, i)
			if err != nil {
				return err
			}
			*limits = append(*limits, l)
			d.Limit = &(*limits)[len(*limits)-1]
		}
	}
	return nil
}

// sizeRequest makes room in req for b's descriptors, cleared, and in
// entries and limits for all their entries and inline limits, reusing the
// capacity each has; entries and limits are left empty.
func sizeRequest(b *apiBody, req *policy.Request, entries *[]policy.Entry, limits *[]admit.Limit) {
	nd := len(b.Descriptors)
	if cap(req.Descriptors) < nd {
		req.Descriptors = make([]policy.Descriptor, nd)
	} else {
		req.Descriptors = req.Descriptors[:nd]
		clear(req.Descriptors)
	}
	// Room for every entry and limit first: req points into both.
	nl, ne := 0, 0
	for i := range b.Descriptors {
		ne += len(b.Descriptors[i].Entries)
		if b.Descriptors[i].Limit != nil {
			nl++
		}
	}
	if cap(*limits) < nl {
		*limits = make([]admit.Limit, 0, nl)
	}
	if cap(*entries) < ne {
		*entries = make([]policy.Entry, 0, ne)
	}
	*limits, *entries = (*limits)[:0], (*entries)[:0]
}

// checkEntries checks the entries of bd, descriptor i of a body: at least
// one and at most the maximum, each with a key, its key and value within
// the longest value allowed.
func (a *API) checkEntries(bd *apiDescriptor, i int) *apiError {
	o := &a.o
	switch {
	case len(bd.Entries) == 0:
		return apiBadRequest(apiCodeMissingField, "descriptors[%d].entries: at least one entry is required", i)
	case len(bd.Entries) > o.maxEntries:
		return apiUnprocessable("descriptors[%d].entries: %d entries, the maximum is %d", i, len(bd.Entries), o.maxEntries)
	}
	for j := range bd.Entries {
		en := &bd.Entries[j]
		switch {
		case en.Key == "":
			return apiBadRequest(apiCodeMissingField, "descriptors[%d].entries[%d].key is required", i, j)
		case len(en.Key) > o.maxValue:
			return apiUnprocessable("descriptors[%d].entries[%d].key: %d bytes, the maximum is %d", i, j, len(en.Key), o.maxValue)
		case len(en.Value) > o.maxValue:
			return apiUnprocessable("descriptors[%d].entries[%d].value: %d bytes, the maximum is %d", i, j, len(en.Value), o.maxValue)
		}
	}
	return nil
}

// apiInlineLimit reads descriptor i's limit: {"requests_per_unit": N,
// "unit": "second"} as Envoy gives it, or {"rate": "100/s burst 20"}.
func apiInlineLimit(bl *apiLimit, i int) (admit.Limit, *apiError) {
	field := "descriptors[" + strconv.Itoa(i) + "].limit"
	switch {
	case bl.Rate != nil && (bl.RequestsPerUnit.set || bl.Unit != nil):
		return admit.Limit{}, apiUnprocessable("%s: give either rate or requests_per_unit and unit, not both", field)
	case bl.Rate != nil:
		l, err := policy.ParseRate(*bl.Rate)
		if err != nil {
			return admit.Limit{}, apiUnprocessable("%s.rate: %s", field, apiEcho(err.Error()))
		}
		return l, nil
	case !bl.RequestsPerUnit.set || bl.Unit == nil:
		return admit.Limit{}, apiUnprocessable("%s: want rate, or requests_per_unit and unit", field)
	}
	rpu := bl.RequestsPerUnit
	if rpu.big || rpu.v < 0 || rpu.v > maxHits {
		return admit.Limit{}, apiUnprocessable("%s.requests_per_unit: %s is outside [0, %d]", field, apiIntText(rpu), int64(maxHits))
	}
	u, err := envoyunit.Parse(*bl.Unit)
	if err != nil {
		return admit.Limit{}, apiUnprocessable("%s.unit: %q: want second, minute, hour, day, week, month or year", field, apiEcho(*bl.Unit))
	}
	l, err := envoyunit.Limit(uint32(rpu.v), u)
	if err != nil {
		return admit.Limit{}, apiUnprocessable("%s: %s", field, apiEcho(err.Error()))
	}
	return l, nil
}

// apiValidText reports whether a JSON text is valid UTF-8 whose \u
// escapes name no unpaired surrogate; if not, it returns the offset of the
// first fault. (A backslash outside a string is a syntax error the decoder
// reports anyway.)
func apiValidText(b []byte) (int, bool) {
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, n := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && n <= 1 {
				return off, false
			}
			off += n
		}
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++ // the escaped character: '\\' is one escape, not two
		if i >= len(b) || b[i] != 'u' {
			continue
		}
		u, ok := apiHex4(b[i+1:])
		switch {
		case !ok || u < 0xD800 || u > 0xDFFF:
			continue
		case u >= 0xDC00:
			return i - 1, false // a low surrogate first
		}
		// A high surrogate: a low one must follow.
		if j := i + 5; j+1 < len(b) && b[j] == '\\' && b[j+1] == 'u' {
			if lo, ok := apiHex4(b[j+2:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i = j + 5
				continue
			}
		}
		return i - 1, false
	}
	return 0, true
}

// apiHex4 parses the four hexadecimal digits b starts with.
func apiHex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
