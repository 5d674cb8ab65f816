package server

import (
	"bufio"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
)

// writeBodiless writes req, which h1Pool.takes, to bw as http.Request.Write
// would, byte for byte (TestWriteBodilessAsRequestWrite), without its
// allocations: the request line, Host, User-Agent unless empty (no
// Content-Length: the requests taken have no body), and the other fields
// sorted by name, each value with its line breaks turned to spaces and
// trimmed. A request it does not write as simply (a Host other than a
// plain host name or address and port, a URL or field name with a byte
// outside printable ASCII or a token, a client trace watching the write)
// is written by req.Write.
func writeBodiless(bw *bufio.Writer, req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	ruri := req.URL.RequestURI()
	if !plainHost(host) || !asciiPrintable(ruri) || tracesWrite(req) {
		return req.Write(bw)
	}
	ks := keysPool.Get().(*[]string)
	defer func() {
		clear(*ks)
		*ks = (*ks)[:0]
		keysPool.Put(ks)
	}()
	keys := (*ks)[:0]
	for k := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		if !isToken(k) {
			return req.Write(bw)
		}
		keys = append(keys, k)
	}
	*ks = keys
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	bw.WriteString(method)
	bw.WriteByte(' ')
	bw.WriteString(ruri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	ua, has := req.Header["User-Agent"]
	switch {
	case !has:
		bw.WriteString("User-Agent: Go-http-client/1.1\r\n")
	case len(ua) > 0 && ua[0] != "":
		writeField(bw, "User-Agent", ua[0])
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			writeField(bw, k, v)
		}
	}
	_, err := bw.WriteString("\r\n")
	return err
}

var keysPool = sync.Pool{New: func() any { s := make([]string, 0, 16); return &s }}

// writeField writes the header line "k: v", v's CR and LF turned to
// spaces and its leading and trailing blanks trimmed (http.Header.Write).
func writeField(bw *bufio.Writer, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	if strings.ContainsAny(v, "\r\n") {
		v = strings.NewReplacer("\n", " ", "\r", " ").Replace(v)
	}
	bw.WriteString(strings.Trim(v, " \t"))
	bw.WriteString("\r\n")
}

// tracesWrite reports whether req's context has a client trace that
// watches the request being written.
func tracesWrite(req *http.Request) bool {
	t := httptrace.ContextClientTrace(req.Context())
	return t != nil && (t.WroteHeaderField != nil || t.WroteHeaders != nil || t.WroteRequest != nil)
}

// plainHost reports whether h is a host name, an IPv4 address or an
// IPv6 one in brackets, with a port or not, which http.Request.Write
// sends as it is (no Punycode, no zone to remove, nothing invalid).
func plainHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_') {
			return false
		}
	}
	return h != ""
}

// isToken reports whether s is an HTTP token (RFC 9110 5.6.2), as a field
// name must be: http.Header.Write leaves out the fields whose names are
// not.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// asciiPrintable reports whether s is printable ASCII (no control
// character, nothing Punycode would change).
func asciiPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
