package policyfmt

import (
	"errors"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want Format
	}{
		{"rules: []\n", Admit},
		{"domains: []\n", Admit},
		{"version: 1\ndomain: x\nrules: []\n", Admit},
		{"domain: x\ndescriptors: []\n", Envoy},
		{"domain: x\n", Envoy},
	} {
		if f, err := Detect([]byte(tc.src)); f != tc.want || err != nil {
			t.Errorf("Detect(%q) = %v, %v; want %v", tc.src, f, err, tc.want)
		}
	}
	for _, src := range []string{"", "[1]\n", "x: 1\n", "rules: []\ndescriptors: []\n", "a: [\n"} {
		if f, err := Detect([]byte(src)); f != Unknown || !errors.Is(err, ErrUnknown) {
			t.Errorf("Detect(%q) = %v, %v", src, f, err)
		}
	}
	for _, f := range []Format{Admit, Envoy, Unknown} {
		if f.String() == "" {
			t.Error(f)
		}
	}
}
