package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/admit-go/admit/httplimit"
)

func TestParseDescriptor(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "http://svc.example/v1/items?tenant=q1&empty=", nil)
	r.RemoteAddr = "192.0.2.7:4711"
	r.Header.Set("X-Tenant", "acme")
	r.Header.Set("X-Forwarded-For", "203.0.113.1")
	trusted, err := httplimit.NewClientIP(httplimit.ClientIPConfig{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec     string
		ip       *httplimit.ClientIP
		keys     []string
		values   []string // "" for no value (ErrNoKey)
		required []bool
	}{
		{"remote_address=client_ip", nil, []string{"remote_address"}, []string{"192.0.2.7"}, []bool{false}},
		{"remote_address=client_ip", trusted, []string{"remote_address"}, []string{"203.0.113.1"}, []bool{false}},
		{"tenant=header:X-Tenant", nil, []string{"tenant"}, []string{"acme"}, []bool{false}},
		{"tenant=header:x-tenant", nil, []string{"tenant"}, []string{"acme"}, []bool{false}},
		{"user=header:X-User", nil, []string{"user"}, []string{""}, []bool{false}},
		{"tenant=!header:X-Tenant,route=path", nil, []string{"tenant", "route"}, []string{"acme", "/v1/items"}, []bool{true, false}},
		{" a=query:tenant , b=query:empty ", nil, []string{"a", "b"}, []string{"q1", ""}, []bool{false, false}},
		{"m=method,h=host", nil, []string{"m", "h"}, []string{"POST", "svc.example"}, []bool{false, false}},
		{"generic_key=const:global", nil, []string{"generic_key"}, []string{"global"}, []bool{false}},
		{"k=const:a:b", nil, []string{"k"}, []string{"a:b"}, []bool{false}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			d, err := parseDescriptor(tc.spec, tc.ip)
			if err != nil {
				t.Fatal(err)
			}
			if len(d) != len(tc.keys) {
				t.Fatalf("%d entries, want %d", len(d), len(tc.keys))
			}
			for i, en := range d {
				if en.Key != tc.keys[i] || en.Required != tc.required[i] {
					t.Errorf("entry %d: %q required=%v", i, en.Key, en.Required)
				}
				v, err := en.Value(r)
				if tc.values[i] == "" {
					if !errors.Is(err, httplimit.ErrNoKey) {
						t.Errorf("entry %d: %q, %v; want ErrNoKey", i, v, err)
					}
					continue
				}
				if err != nil || v != tc.values[i] {
					t.Errorf("entry %d: %q, %v; want %q", i, v, err, tc.values[i])
				}
			}
		})
	}
}

func TestParseDescriptorPathAndHost(t *testing.T) {
	d, err := parseDescriptor("p=path,h=host", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &http.Request{URL: nil}
	if v, err := d[0].Value(r); err != nil || v != "/" {
		t.Errorf("path of a request without URL: %q, %v", v, err)
	}
	if _, err := d[1].Value(r); !errors.Is(err, httplimit.ErrNoKey) {
		t.Errorf("host of a request without Host: %v", err)
	}
}

func TestParseDescriptorErrors(t *testing.T) {
	for _, spec := range []string{
		"", " ", ",", "tenant", "=header:X", "tenant=", "tenant=!", "tenant=bogus", "tenant=header:",
		"tenant=header", "tenant=header:X Tenant", "tenant=header:X(y)", "a b=path", "a=path:x",
		"a=client_ip:1", "a=const:", "a=const:x y", "a=query:", "a=path,", "a=path,,b=host",
		"a=const:x=y", "a\x00=path", "a=header:\x7f", strings.Repeat("k", 5000) + "=path",
	} {
		d, err := parseDescriptor(spec, nil)
		if !errors.Is(err, errInvalidDescriptor) || d != nil {
			t.Errorf("ParseDescriptor(%q) = %v, %v; want ErrInvalidDescriptor", spec, d, err)
		}
	}
	if _, err := parseDescriptors([]string{"a=path", "b"}, nil); !errors.Is(err, errInvalidDescriptor) {
		t.Errorf("ParseDescriptors with a bad one: %v", err)
	}
}

func TestDefaultDescriptorSpecs(t *testing.T) {
	ds, err := parseDescriptors(defaultDescriptorSpecs, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := defaultPolicy()
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, k := range p.Domains[0].Keys {
		keys[k] = true
	}
	for _, d := range ds {
		for _, en := range d {
			if !keys[en.Key] {
				t.Errorf("default descriptor key %q is not a key of the built-in policy", en.Key)
			}
		}
	}
}

// FuzzParseDescriptor: any specification parses or fails with
// ErrInvalidDescriptor, never panics, and a parsed descriptor has keys
// and values and answers any request.
func FuzzParseDescriptor(f *testing.F) {
	for _, s := range append(defaultDescriptorSpecs, "tenant=!header:X-Tenant,route=path", "a=query:q", "m=method,h=host",
		"k=const:a:b", "=", ",,", "a=header:X\x00", "a=!!path") {
		f.Add(s)
	}
	r := httptest.NewRequest(http.MethodGet, "http://h/p?q=1", nil)
	r.Header.Set("X-Tenant", "t")
	f.Fuzz(func(t *testing.T, spec string) {
		d, err := parseDescriptor(spec, nil)
		if err != nil {
			if !errors.Is(err, errInvalidDescriptor) {
				t.Fatalf("error %v does not wrap ErrInvalidDescriptor", err)
			}
			return
		}
		if len(d) == 0 {
			t.Fatal("no entries and no error")
		}
		for _, en := range d {
			if en.Key == "" || en.Value == nil || strings.ContainsAny(en.Key, ",= ") {
				t.Fatalf("entry %+v", en)
			}
			if _, err := en.Value(r); err != nil && !errors.Is(err, httplimit.ErrNoKey) {
				t.Fatalf("value: %v", err)
			}
		}
	})
}
