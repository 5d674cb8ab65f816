package redisstore

import (
	"testing"

	"github.com/admit-go/admit/internal/algo"
	"github.com/admit-go/admit/redisstore/internal/lua"
)

// TestGroupKeepsModesApart: the ops of a pipeline at one instant (in one
// slot, in a cluster) share a script call with the ops of their own mode
// only: checks with checks, partial grants with partial grants, refunds
// with refunds; a partial call carries its keys' n for the reply's check.
func TestGroupKeepsModesApart(t *testing.T) {
	p, err := algo.Compile(10, 1e9, 0)
	if err != nil {
		t.Fatal(err)
	}
	l := lua.NewLimit(lua.CodeGCRA, &p)
	for _, cluster := range []bool{false, true} {
		s := &Store{cluster: cluster}
		var batch []*op
		for i, mode := range []string{lua.Independent, lua.Partial, lua.Refund, lua.Partial, lua.Independent, lua.Partial} {
			o := &op{mode: mode, tag: 7}
			o.items = []item{{key: "k" + string(rune('a'+i)), limit: l, n: int64(i + 1)}}
			batch = append(batch, o)
		}
		calls := s.group(batch)
		if len(calls) != 3 {
			t.Fatalf("cluster %v: %d calls, want 3 (one per mode)", cluster, len(calls))
		}
		want := map[string][]string{lua.Independent: {"ka", "ke"}, lua.Partial: {"kb", "kd", "kf"}, lua.Refund: {"kc"}}
		for _, c := range calls {
			if got := c.keys; len(got) != len(want[c.mode]) || got[0] != want[c.mode][0] || got[len(got)-1] != want[c.mode][len(got)-1] {
				t.Errorf("cluster %v: the %q call holds %q, want %q", cluster, c.mode, got, want[c.mode])
			}
			if c.mode == lua.Partial && (len(c.ns) != 3 || c.ns[0] != 2 || c.ns[1] != 4 || c.ns[2] != 6) {
				t.Errorf("cluster %v: the partial call's ns are %v, want [2 4 6]", cluster, c.ns)
			}
			if c.mode != lua.Partial && c.ns != nil {
				t.Errorf("cluster %v: the %q call has ns %v", cluster, c.mode, c.ns)
			}
		}
	}
}
