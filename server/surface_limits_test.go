package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/admit-go/admit/admittest"
	"github.com/admit-go/admit/server/admitv1"
)

// surfaceRequest is a check, as each surface is sent it.
type surfaceRequest struct {
	domain string
	descs  [][][2]string // descriptors, entries, key and value
}

// surfaces send a check to each API of the service, each on an engine of
// its own; they report whether it was taken (decided), and why not.
func surfaces(t *testing.T, yaml string) map[string]func(surfaceRequest) (bool, string) {
	clk := admittest.NewManualClock(grpcT0)
	h := startGRPC(t, grpcSource(grpcEngine(t, yaml, clk)), withGRPCClock(clk))
	api := newAPIHarness(t, yaml)
	rls := func(r surfaceRequest) *rlsv3.RateLimitRequest {
		out := &rlsv3.RateLimitRequest{Domain: r.domain, HitsAddend: 1}
		for _, d := range r.descs {
			rd := &ratelimitv3.RateLimitDescriptor{}
			for _, e := range d {
				rd.Entries = append(rd.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: e[0], Value: e[1]})
			}
			out.Descriptors = append(out.Descriptors, rd)
		}
		return out
	}
	return map[string]func(surfaceRequest) (bool, string){
		"POST /v1/check": func(r surfaceRequest) (bool, string) {
			type entry struct {
				Key   string `json:"key"`
				Value string `json:"value"`
			}
			type desc struct {
				Entries []entry `json:"entries"`
			}
			body := struct {
				Domain      string `json:"domain"`
				Descriptors []desc `json:"descriptors"`
			}{Domain: r.domain}
			for _, d := range r.descs {
				var es []entry
				for _, e := range d {
					es = append(es, entry{e[0], e[1]})
				}
				body.Descriptors = append(body.Descriptors, desc{es})
			}
			js, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			w := api.post("/v1/check", string(js))
			return w.Code == http.StatusOK, w.Body.String()
		},
		"POST /json": func(r surfaceRequest) (bool, string) {
			js, err := protojson.Marshal(rls(r))
			if err != nil {
				t.Fatal(err)
			}
			w := api.post("/json", string(js))
			return w.Code == http.StatusOK, w.Body.String()
		},
		"ShouldRateLimit": func(r surfaceRequest) (bool, string) {
			_, err := h.rls.ShouldRateLimit(context.Background(), rls(r))
			return err == nil, fmt.Sprint(err)
		},
		"admit.v1 Check": func(r surfaceRequest) (bool, string) {
			req := &admitv1.CheckRequest{Domain: r.domain}
			for _, d := range r.descs {
				ad := &admitv1.Descriptor{}
				for _, e := range d {
					ad.Entries = append(ad.Entries, &admitv1.Entry{Key: e[0], Value: e[1]})
				}
				req.Descriptors = append(req.Descriptors, ad)
			}
			_, err := h.admit.Check(context.Background(), req)
			return err == nil, fmt.Sprint(err)
		},
	}
}

// TestSurfaceLimitsAgree: every API takes exactly the requests docs/API.md
// says, and the same ones: up to 1000 descriptors of up to 32 entries,
// domains, keys and values of up to 4096 bytes (a value of 4096 bytes
// included, though its key is longer than the limiters take). Before,
// the HTTP API took 30,000 entries where gRPC stopped at 32, gRPC 128
// descriptors where HTTP took 1000, and a value of 4096 bytes was refused
// as "key too long: 4101 bytes".
func TestSurfaceLimitsAgree(t *testing.T) {
	const pol = `
domain: api
rules:
  - name: per-user
    match: user
    rate: 10000/s
  - name: deep
    match: [user, a]
    rate: 10000/s
`
	one := func(kv ...string) [][2]string {
		var d [][2]string
		for i := 0; i+1 < len(kv); i += 2 {
			d = append(d, [2]string{kv[i], kv[i+1]})
		}
		return d
	}
	entries := func(n int) [][2]string {
		d := one("user", "u")
		for i := 1; i < n; i++ {
			d = append(d, [2]string{fmt.Sprintf("k%d", i), "v"})
		}
		return d
	}
	descs := func(n int) [][][2]string {
		out := make([][][2]string, n)
		for i := range out {
			out[i] = one("user", fmt.Sprint("u", i))
		}
		return out
	}
	x := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name string
		req  surfaceRequest
		ok   bool
	}{
		{"32 entries", surfaceRequest{"api", [][][2]string{entries(defaultGRPCMaxEntries)}}, true},
		{"33 entries", surfaceRequest{"api", [][][2]string{entries(defaultGRPCMaxEntries + 1)}}, false},
		{"30,000 entries", surfaceRequest{"api", [][][2]string{entries(30_000)}}, false},
		{"1000 descriptors", surfaceRequest{"api", descs(defaultMaxDescriptors)}, true},
		{"1001 descriptors", surfaceRequest{"api", descs(defaultMaxDescriptors + 1)}, false},
		{"value of 4096 bytes", surfaceRequest{"api", [][][2]string{one("user", x(4096))}}, true},
		{"two values of 4096 bytes", surfaceRequest{"api", [][][2]string{one("user", x(4096), "a", x(4096))}}, true},
		{"value of 4097 bytes", surfaceRequest{"api", [][][2]string{one("user", x(4097))}}, false},
		{"key of 4096 bytes", surfaceRequest{"api", [][][2]string{one(x(4096), "v")}}, true},
		{"key of 4097 bytes", surfaceRequest{"api", [][][2]string{one(x(4097), "v")}}, false},
		{"domain of 4096 bytes", surfaceRequest{x(4096), [][][2]string{one("user", "u")}}, true},
		{"domain of 4097 bytes", surfaceRequest{x(4097), [][][2]string{one("user", "u")}}, false},
		{"empty value", surfaceRequest{"api", [][][2]string{one("user", "")}}, true},
		{"empty key", surfaceRequest{"api", [][][2]string{one("", "v")}}, false},
		{"no entries", surfaceRequest{"api", [][][2]string{{}}}, false},
		{"no descriptors", surfaceRequest{"api", nil}, false},
		{"no domain", surfaceRequest{"", [][][2]string{one("user", "u")}}, false},
	}
	for name, send := range surfaces(t, pol) {
		for _, c := range cases {
			if ok, why := send(c.req); ok != c.ok {
				if len(why) > 300 {
					why = why[:300]
				}
				t.Errorf("%s, %s: taken %v, want %v (%s)", name, c.name, ok, c.ok, why)
			}
		}
	}
}

// TestHTTPRefusesWhatGRPCCannotCarry: invalid UTF-8 and unpaired
// surrogate escapes, which protobuf cannot carry, are refused by the HTTP
// API too (400 INVALID_JSON, nothing decided), rather than read as U+FFFD,
// which would make different keys one.
func TestHTTPRefusesWhatGRPCCannotCarry(t *testing.T) {
	h := newAPIHarness(t, apiPolicy)
	for _, c := range []struct{ name, value string }{
		{"invalid byte", "a\xffb"},
		{"truncated rune", "a\xe2\x82"},
		{"lone low surrogate", `\udc00`},
		{"lone high surrogate", `\ud800`},
		{"high surrogate then a letter", `\ud800x`},
		{"high surrogate then another high", `\ud800\ud800`},
		{"surrogate, escaped backslash before", `\\\ud800`},
	} {
		body := `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"` + c.value + `"}]}]}`
		w := h.post("/v1/check", body)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "INVALID_JSON") || !strings.Contains(w.Body.String(), "UTF-8") {
			t.Errorf("%s: %d %s, want 400 INVALID_JSON naming UTF-8", c.name, w.Code, w.Body)
		}
		if w := h.post("/json", body); w.Code != http.StatusBadRequest {
			t.Errorf("/json, %s: %d %s, want 400", c.name, w.Code, w.Body)
		}
	}
	// Escapes that are valid pass, and a backslash escaping a backslash
	// before a 'u' is no escape.
	for _, v := range []string{`\ud83d\ude00`, `\u00e9`, `\\ud800`, "é😀", `\\\\`} {
		body := `{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"` + v + `"}]}]}`
		if w := h.post("/v1/check", body); w.Code != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", v, w.Code, w.Body)
		}
	}
}

// TestAPIOddKeysNeverEscape: on the HTTP API, a descriptor whose value is
// empty is limited like any other value (all empty values share one
// key), a descriptor sent several times in one request counts each time,
// and a request admitted only in part is refused whole: none of them gets
// more than the per-user limit of 2.
func TestAPIOddKeysNeverEscape(t *testing.T) {
	h := newAPIHarness(t, apiPolicy)
	allowed := 0
	for range 15 {
		if apiDecode(t, h.post("/v1/check", apiCheckBody("api", "user="))).Allowed {
			allowed++
		}
	}
	if allowed != 2 {
		t.Errorf("empty user: %d of 15 allowed, want 2", allowed)
	}
	allowed = 0
	for range 15 {
		if apiDecode(t, h.post("/v1/check", apiCheckBody("api", "user=a", "user=a", "user=a"))).Allowed {
			allowed++
		}
	}
	if allowed != 0 {
		t.Errorf("user a three times per request: %d of 15 allowed, want 0 (3 > 2)", allowed)
	}
	if !apiDecode(t, h.post("/v1/check", apiCheckBody("api", "user=a", "user=a"))).Allowed ||
		apiDecode(t, h.post("/v1/check", apiCheckBody("api", "user=a"))).Allowed {
		t.Error("user a twice: want both counted, then a refusal")
	}
}
