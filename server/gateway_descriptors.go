package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/admit-go/admit/httplimit"
	"github.com/admit-go/admit/policy"
)

// defaultDescriptorSpecs are the descriptors a Gateway derives from each
// request when it is given none (see ParseDescriptor for the syntax): the
// keys of the built-in policy (DefaultPolicyYAML), which is the multi-tenant
// API of the reference design.
//
//	remote_address=client_ip     the client's address (see Config.TrustedProxies)
//	user=header:X-User           the user an authenticating proxy named
//	tenant=header:X-Tenant       the tenant it named
//	route=path                   the URL path, such as /login
//	generic_key=const:global     one value shared by every request
//
// A request without an X-User or X-Tenant header carries no user or
// tenant descriptor, so the per-user and per-tenant rules do not apply to
// it. The gateway takes the headers as they come: put it behind the proxy
// that authenticates users and sets them, or derive the descriptors from
// something a client cannot forge.
var defaultDescriptorSpecs = []string{
	"remote_address=client_ip",
	"user=header:X-User",
	"tenant=header:X-Tenant",
	"route=path",
	"generic_key=const:global",
}

// maxDescriptorSpec bounds the length of one descriptor specification.
const maxDescriptorSpec = 4096

// parseDescriptor reads the specification of a descriptor a Gateway
// derives from each request: its entries, separated by commas, each
// KEY=SOURCE, outermost first:
//
//	remote_address=client_ip
//	tenant=header:X-Tenant,route=path
//
// KEY is the descriptor key the policy's rules match. SOURCE is where the
// entry's value comes from:
//
//	client_ip        the client's address, as clientIP finds it (the peer,
//	                 or the address trusted proxies forwarded; IPv6
//	                 clients grouped by /64)
//	header:NAME      the value of header NAME
//	query:NAME       the value of query parameter NAME
//	path             the URL path ("/" for an empty one)
//	method           the request method
//	host             the Host the client asked for
//	const:VALUE      VALUE for every request
//
// A request for which a source has no value (a header or query parameter
// it does not send, no Host) does not carry the descriptor, so the rules
// matching it do not apply to that request, as in Envoy. A SOURCE
// starting with '!' is required instead: a request without its value is
// refused with 400 Bad Request ("tenant=!header:X-Tenant"). A value that
// is present but cannot be trusted is refused with 400 {"code":
// "KEY_INVALID"}, required or not, so that a client never escapes its own
// limit by sending it oddly: a header or query parameter that is repeated
// or empty, a badly escaped query parameter, or a forwarding header from
// trusted proxies that is too short or malformed (see httplimit.ErrBadKey).
// Keys, names and values may not contain ',', '=' or white space, nor be
// empty. The error wraps ErrInvalidDescriptor.
func parseDescriptor(spec string, clientIP *httplimit.ClientIP) (policy.HTTPDescriptor, error) {
	if len(spec) > maxDescriptorSpec {
		return nil, fmt.Errorf("%w: %d bytes, the maximum is %d", errInvalidDescriptor, len(spec), maxDescriptorSpec)
	}
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("%w: empty (want KEY=SOURCE[,KEY=SOURCE...])", errInvalidDescriptor)
	}
	if clientIP == nil {
		clientIP = &httplimit.ClientIP{}
	}
	parts := strings.Split(spec, ",")
	d := make(policy.HTTPDescriptor, 0, len(parts))
	for _, part := range parts {
		part = strings.TrimSpace(part)
		key, src, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%w: %q: want KEY=SOURCE", errInvalidDescriptor, truncateString(part, 64))
		}
		if err := checkToken(key, "key"); err != nil {
			return nil, err
		}
		required := strings.HasPrefix(src, "!")
		src = strings.TrimPrefix(src, "!")
		value, err := descriptorSource(src, clientIP)
		if err != nil {
			return nil, fmt.Errorf("%w (entry %q)", err, truncateString(key, 64))
		}
		d = append(d, policy.HTTPEntry{Key: key, Value: value, Required: required})
	}
	return d, nil
}

// parseDescriptors reads several specifications (see ParseDescriptor).
func parseDescriptors(specs []string, clientIP *httplimit.ClientIP) ([]policy.HTTPDescriptor, error) {
	out := make([]policy.HTTPDescriptor, 0, len(specs))
	for _, s := range specs {
		d, err := parseDescriptor(s, clientIP)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// checkToken checks a key, a name or a value of a specification.
func checkToken(s, what string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s", errInvalidDescriptor, what)
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return r == ',' || r == '=' || r <= ' ' || r == 0x7f
	}); i >= 0 {
		return fmt.Errorf("%w: %s %q has a comma, '=', white space or a control character", errInvalidDescriptor, what, truncateString(s, 64))
	}
	return nil
}

// descriptorSource returns the KeyFunc of a SOURCE.
func descriptorSource(src string, clientIP *httplimit.ClientIP) (httplimit.KeyFunc, error) {
	kind, arg, hasArg := strings.Cut(src, ":")
	switch kind {
	case "client_ip", "path", "method", "host":
		if hasArg {
			return nil, fmt.Errorf("%w: source %s takes no argument", errInvalidDescriptor, kind)
		}
	case "header", "query":
		if err := checkToken(arg, kind+" name"); err != nil {
			return nil, err
		}
	case "const":
		if err := checkToken(arg, "const value"); err != nil {
			return nil, err
		}
	case "":
		return nil, fmt.Errorf("%w: empty source", errInvalidDescriptor)
	default:
		return nil, fmt.Errorf("%w: unknown source %q (want client_ip, header:NAME, query:NAME, path, method, host or const:VALUE)",
			errInvalidDescriptor, truncateString(kind, 32))
	}
	switch kind {
	case "client_ip":
		return clientIP.Key, nil
	case "path":
		return pathKey, nil
	case "method":
		return httplimit.Method(), nil
	case "host":
		return hostKey, nil
	case "header":
		for i := 0; i < len(arg); i++ {
			if !isTokenChar(arg[i]) {
				return nil, fmt.Errorf("%w: %q is not a header name", errInvalidDescriptor, truncateString(arg, 64))
			}
		}
		return httplimit.Header(arg), nil
	case "query":
		return queryKey(arg), nil
	}
	return httplimit.Const(arg), nil
}

// isTokenChar reports whether c may appear in a header name (RFC 9110's
// tchar).
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

var errNoHost = fmt.Errorf("%w: the request has no Host", httplimit.ErrNoKey)

func pathKey(r *http.Request) (string, error) {
	if r.URL == nil || r.URL.Path == "" {
		return "/", nil
	}
	return r.URL.Path, nil
}

func hostKey(r *http.Request) (string, error) {
	if r.Host == "" {
		return "", errNoHost
	}
	return r.Host, nil
}

func queryKey(name string) httplimit.KeyFunc {
	missing := fmt.Errorf("%w: query parameter %s is missing", httplimit.ErrNoKey, name)
	bad := fmt.Errorf("%w: query parameter %s is repeated, empty or badly escaped", httplimit.ErrBadKey, name)
	return func(r *http.Request) (string, error) {
		if r.URL == nil {
			return "", missing
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		vs, ok := q[name]
		switch {
		case err != nil:
			// A pair that does not unescape is left out of q: it may be
			// this one.
			return "", bad
		case !ok:
			return "", missing
		case len(vs) != 1 || vs[0] == "":
			return "", bad
		}
		return vs[0], nil
	}
}
