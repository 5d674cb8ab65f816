package server

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptrace"
	"testing"
)

// TestWriteBodilessAsRequestWrite: writeBodiless writes the requests
// h1Pool takes byte for byte as http.Request.Write does.
func TestWriteBodilessAsRequestWrite(t *testing.T) {
	type tc struct {
		name, method, url, host string
		header                  http.Header
		ctx                     context.Context
		noBody                  bool // Body http.NoBody rather than nil
	}
	traced := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{WroteHeaderField: func(string, []string) {}})
	cases := []tc{
		{name: "plain", method: "GET", url: "http://up:8080/a/b?x=1&y=2"},
		{name: "no method", url: "http://up/"},
		{name: "head", method: "HEAD", url: "http://up/"},
		{name: "options", method: "OPTIONS", url: "http://up/x"},
		{name: "trace", method: "TRACE", url: "http://up/x"},
		{name: "options star", method: "OPTIONS", url: "http://up/*"},
		{name: "headers", method: "GET", url: "http://127.0.0.1:9/p", header: http.Header{
			"X-Forwarded-For": {"192.0.2.1"}, "Accept": {"a/b", "c/d"}, "A": {"  padded\t"},
			"B": {"line\r\nbreak"}, "C": {"lf\nonly"}, "Empty": {""}, "None": {},
			"Content-Length": {"7"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"}, "Host": {"evil"},
		}},
		{name: "user agent", method: "GET", url: "http://up/", header: http.Header{"User-Agent": {" curl/8 "}}},
		{name: "user agent empty", method: "GET", url: "http://up/", header: http.Header{"User-Agent": {""}}},
		{name: "user agent none", method: "GET", url: "http://up/", header: http.Header{"User-Agent": nil}},
		{name: "user agent two", method: "GET", url: "http://up/", header: http.Header{"User-Agent": {"a", "b"}}},
		{name: "user agent blank", method: "GET", url: "http://up/", header: http.Header{"User-Agent": {" "}}},
		{name: "bad field name", method: "GET", url: "http://up/", header: http.Header{"Bad Name": {"x"}, "Ok": {"y"}}},
		{name: "host field", method: "GET", url: "http://up/", host: "front.example:8443"},
		{name: "ipv6", method: "GET", url: "http://[::1]:8080/"},
		{name: "ipv6 zone", method: "GET", url: "http://[fe80::1%25eth0]:8080/"},
		{name: "unicode host", method: "GET", url: "http://bücher.example/"},
		{name: "invalid host", method: "GET", url: "http://up/", host: "a b"},
		{name: "unicode path", method: "GET", url: "http://up/ü?q=ü"},
		{name: "raw path", method: "GET", url: "http://up/a%2Fb/c"},
		{name: "traced", method: "GET", url: "http://up/", ctx: traced},
		{name: "options no body", method: "OPTIONS", url: "http://up/", noBody: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := c.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			mk := func() *http.Request {
				r, err := http.NewRequestWithContext(ctx, c.method, c.url, nil)
				if err != nil {
					t.Fatal(err)
				}
				r.Header = c.header.Clone()
				if r.Header == nil {
					r.Header = http.Header{}
				}
				r.Host = c.host
				if c.noBody {
					r.Body = http.NoBody
				}
				return r
			}
			var want, got bytes.Buffer
			werr := mk().Write(&want)
			bw := bufio.NewWriter(&got)
			gerr := writeBodiless(bw, mk())
			_ = bw.Flush()
			if (werr == nil) != (gerr == nil) || want.String() != got.String() {
				t.Errorf("writeBodiless: %q, %v\nRequest.Write: %q, %v", got.String(), gerr, want.String(), werr)
			}
		})
	}
}
