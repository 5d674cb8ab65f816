package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type ctxKey struct{}

type stringer string

func (s stringer) String() string { return string(s) }

func request(target string, header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

func TestKeyFuncs(t *testing.T) {
	withCtx := func(v any) *http.Request {
		r := request("/")
		return r.WithContext(context.WithValue(r.Context(), ctxKey{}, v))
	}
	user := FromContext(func(ctx context.Context) (string, bool) {
		s, ok := ctx.Value(ctxKey{}).(string)
		return s, ok
	})
	// A string, or a fmt.Stringer giving one, in the context (what
	// ContextValue read before it was removed).
	value := FromContext(func(ctx context.Context) (string, bool) {
		switch v := ctx.Value(ctxKey{}).(type) {
		case string:
			return v, true
		case fmt.Stringer:
			return v.String(), true
		}
		return "", false
	})
	post := request("/")
	post.Method = http.MethodPost
	noMethod := request("/")
	noMethod.Method = ""
	for _, tc := range []struct {
		name string
		key  KeyFunc
		r    *http.Request
		want string // "" for an error wrapping ErrNoKey
	}{
		{"const", Const("global"), request("/"), "global"},
		{"header", Header("x-user"), request("/", "X-User", "alice"), "alice"},
		{"header missing", Header("X-User"), request("/"), ""},
		{"header empty", Header("X-User"), request("/", "X-User", ""), ""},
		{"header repeated", Header("X-User"), request("/", "X-User", "a", "X-User", "b"), ""},
		{"method", Method(), post, "POST"},
		{"method empty", Method(), noMethod, "GET"},
		{"context string", value, withCtx("bob"), "bob"},
		{"context stringer", value, withCtx(stringer("carol")), "carol"},
		{"context int", value, withCtx(42), ""},
		{"context empty", value, withCtx(""), ""},
		{"context none", value, request("/"), ""},
		{"from context", user, withCtx("dave"), "dave"},
		{"from context none", user, request("/"), ""},
		{"bearer", Bearer(), request("/", "Authorization", "Bearer tok123"), "tok123"},
		{"bearer case", Bearer(), request("/", "Authorization", "bearer   tok123 "), "tok123"},
		{"bearer basic", Bearer(), request("/", "Authorization", "Basic dXNlcg=="), ""},
		{"bearer empty", Bearer(), request("/", "Authorization", "Bearer "), ""},
		{"bearer spaces", Bearer(), request("/", "Authorization", "Bearer a b"), ""},
		{"bearer twice", Bearer(), request("/", "Authorization", "Bearer a", "Authorization", "Bearer b"), ""},
		{"api header", Header("x-api-key"), request("/", "X-Api-Key", "k1"), "k1"},
		{"api header twice", First(Header("X-API-Key"), Bearer()), request("/", "X-Api-Key", "k1", "X-Api-Key", "k2", "Authorization", "Bearer t"), ""},
		{"api query", Query("api_key"), request("/x?a=1&api_key=k%202&b"), "k 2"},
		{"api query plus", Query("api key"), request("/x?api+key=k+3"), "k 3"},
		{"api query twice", Query("api_key"), request("/x?api_key=a&api_key=b"), ""},
		{"api query empty", Query("api_key"), request("/x?api_key="), ""},
		{"api query bad escape", Query("api_key"), request("/x?api_key=%zz"), ""},
		{"api query bad name escape", Query("api_key"), request("/x?%zz=1&api_key=k"), "k"},
		{"api order", First(Header("X-Api-Key"), Query("k"), Bearer()), request("/x?k=q", "Authorization", "Bearer b"), "q"},
		{"api fallback", First(Header("X-Api-Key"), Bearer()), request("/x", "Authorization", "Bearer b"), "b"},
		{"api none", First(Header("X-Api-Key"), Query("k"), Bearer()), request("/x"), ""},
		{"hashed", Hashed(Header("X-User")), request("/", "X-User", "alice"), "2bd806c97f0e00af1a1fc3328fa763a9"},
		{"hashed error", Hashed(Header("X-User")), request("/"), ""},
		{"first", First(Bearer(), RemoteIP), request("/", "Authorization", "Bearer t"), "t"},
		{"first fallback", First(Bearer(), RemoteIP), request("/"), "192.0.2.1"},
		{"first none", First(Bearer(), Header("X")), request("/"), ""},
		{"join", Join(RemoteIP, Method(), Const(`a|b\c`)), request("/"), `192.0.2.1|GET|a\|b\\c`},
		{"join error", Join(RemoteIP, Header("X")), request("/"), ""},
		{"route unset", Route(), request("/"), ""},
	} {
		got, err := tc.key(tc.r)
		if tc.want == "" {
			if err == nil || !errors.Is(err, ErrNoKey) {
				t.Errorf("%s: %q, %v; want an error wrapping ErrNoKey", tc.name, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestHashedAllocs(t *testing.T) {
	k := Hashed(Header("X-User"))
	r := request("/", "X-User", "alice")
	if n := testing.AllocsPerRun(100, func() { _, _ = k(r) }); n > 1 {
		t.Errorf("Hashed: %v allocations per key, want 1", n)
	}
}

func TestRoute(t *testing.T) {
	mux := http.NewServeMux()
	var got []string
	record := func(k KeyFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s, err := k(r)
			if err != nil {
				s = "error"
			}
			got = append(got, s)
		})
	}
	mux.Handle("GET /items/{id}", record(Route()))
	mux.Handle("/", record(RouteOf(mux)))
	for _, p := range []string{"/items/1", "/items/2", "/other"} {
		mux.ServeHTTP(httptest.NewRecorder(), request(p))
	}
	if want := "GET /items/{id}|GET /items/{id}|/"; strings.Join(got, "|") != want {
		t.Errorf("routes %q, want %q", strings.Join(got, "|"), want)
	}
	// RouteOf in front of the mux.
	k := RouteOf(mux)
	if s, err := k(request("/items/9")); s != "GET /items/{id}" || err != nil {
		t.Errorf("RouteOf: %q, %v", s, err)
	}
	only := http.NewServeMux()
	only.Handle("GET /a", http.NotFoundHandler())
	if s, err := RouteOf(only)(request("/b")); !errors.Is(err, ErrNoKey) {
		t.Errorf("RouteOf without a match: %q, %v", s, err)
	}
}

func TestCombinatorsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"join empty":       func() { Join() },
		"join nil":         func() { Join(RemoteIP, nil) },
		"first empty":      func() { First() },
		"first nil":        func() { First(nil) },
		"hashed nil":       func() { Hashed(nil) },
		"from context nil": func() { FromContext(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}

// splitJoined undoes Join's escaping: the inverse that proves it
// injective.
func splitJoined(s string) []string {
	var (
		parts []string
		cur   []byte
	)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			cur = append(cur, s[i])
		case c == '|':
			parts = append(parts, string(cur))
			cur = cur[:0]
		default:
			cur = append(cur, c)
		}
	}
	return append(parts, string(cur))
}

func TestJoinUnambiguous(t *testing.T) {
	pairs := [][2][]string{
		{{"a|b", "c"}, {"a", "b|c"}},
		{{`a\`, "b"}, {"a", `\b`}},
		{{`a\|`, "b"}, {`a`, `|b`}},
		{{"", "a"}, {"a", ""}},
		{{"|", ""}, {"", "|"}},
	}
	for _, p := range pairs {
		a, b := joinStrings(p[0]), joinStrings(p[1])
		if a == b {
			t.Errorf("%q and %q both join to %q", p[0], p[1], a)
		}
		for i, s := range []string{a, b} {
			if got := splitJoined(s); strings.Join(got, "\x00") != strings.Join(p[i], "\x00") {
				t.Errorf("split(%q) = %q, want %q", s, got, p[i])
			}
		}
	}
}

func joinStrings(parts []string) string {
	keys := make([]KeyFunc, len(parts))
	for i, p := range parts {
		keys[i] = Const(p)
	}
	s, err := Join(keys...)(request("/"))
	if err != nil {
		panic(err)
	}
	return s
}
