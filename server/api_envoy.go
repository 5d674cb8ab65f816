package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// apiEnvoyJSON serves /json, envoyproxy/ratelimit's JSON endpoint, as
// envoyproxy/ratelimit does: the body is a RateLimitRequest in the proto3
// JSON mapping (field names in lowerCamelCase or as in the .proto,
// integers as numbers or strings, unknown fields refused), decided by
// Envoy's rate-limit service (the API's RLS, so that /json and gRPC
// answer alike), and the answer is the RateLimitResponse in the same
// mapping, with status 200 if its overall code is OK and 429 if it is
// OVER_LIMIT. A request the service refuses to decide gets 400, as
// envoyproxy/ratelimit answers it; a body over the cap 413; no policy, a
// store failing or limiters full 503; each with this API's error body.
// Any Content-Type is accepted, since envoyproxy/ratelimit's own example
// posts with curl --data.
func (a *API) apiEnvoyJSON(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.o.maxBody))
	if err != nil {
		apiWriteError(w, apiDecodeError(err))
		return
	}
	var in rlsv3.RateLimitRequest
	if err := protojson.Unmarshal(data, &in); err != nil {
		apiWriteError(w, apiBadRequest(apiCodeInvalidJSON, "not a RateLimitRequest in JSON: %s", apiEchoLong(err.Error())))
		return
	}
	if _, ae := a.engine(); ae != nil {
		apiWriteError(w, ae)
		return
	}
	if a.o.strictDomains && in.Domain != "" {
		if e := a.src.Engine(); e != nil && !e.HasDomain(in.Domain) {
			apiWriteError(w, apiBadRequest(apiCodeUnknownDomain, "the policy has no domain %q", apiEcho(in.Domain)))
			return
		}
	}
	out, err := a.rls.ShouldRateLimit(r.Context(), &in)
	if err != nil {
		apiWriteError(w, apiGRPCError(err))
		return
	}
	js, err := protojson.Marshal(out)
	if err != nil {
		apiWriteError(w, &apiError{http.StatusInternalServerError, apiCodeInternal, "encoding the response: " + err.Error()})
		return
	}
	// protojson's spacing varies from build to build; compacted, the
	// answer is the same bytes every time.
	var buf bytes.Buffer
	buf.Grow(len(js) + 1)
	if json.Compact(&buf, js) != nil {
		buf.Reset()
		buf.Write(js)
	}
	buf.WriteByte('\n')
	w.Header()[apiKeyContentType] = apiJSONContentType
	switch out.OverallCode {
	case rlsv3.RateLimitResponse_OK:
	case rlsv3.RateLimitResponse_OVER_LIMIT:
		w.WriteHeader(http.StatusTooManyRequests)
	default:
		w.WriteHeader(http.StatusInternalServerError)
	}
	_, _ = w.Write(buf.Bytes())
}

// apiGRPCError turns an error of Envoy's rate-limit service into an
// answer: INVALID_ARGUMENT is envoyproxy/ratelimit's 400, the other codes
// the service's failures.
func apiGRPCError(err error) *apiError {
	s := status.Convert(err)
	switch s.Code() {
	case codes.InvalidArgument:
		return apiBadRequest(apiCodeInvalidArgument, "%s", apiEchoLong(s.Message()))
	case codes.ResourceExhausted:
		return &apiError{http.StatusServiceUnavailable, apiCodeResourceExhausted, apiEchoLong(s.Message())}
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded:
		return &apiError{http.StatusServiceUnavailable, apiCodeUnavailable, apiEchoLong(s.Message())}
	}
	return &apiError{http.StatusInternalServerError, apiCodeInternal, apiEchoLong(s.Message())}
}
