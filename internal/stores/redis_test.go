package stores

import "testing"

// TestRedisNames: the characters Redis names do not take are escaped,
// injectively (so is '%').
func TestRedisNames(t *testing.T) {
	for in, want := range map[string]string{
		"d.k":          "d.k",
		"envoy:d.k":    "envoy%3Ad.k",
		"{a}%b":        "%7Ba%7D%25b",
		"api/per-user": "api/per-user",
	} {
		if got := name(in); got != want {
			t.Errorf("name(%q) = %q, want %q", in, got, want)
		}
	}
}
