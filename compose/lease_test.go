package compose_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/compose"
)

// renewGrant is a Renewer: it records each renewal, and answers with held
// and err.
type renewGrant struct {
	plainGrant
	held bool
	err  error
}

func (g *renewGrant) Renew(ctx context.Context, ttl time.Duration) (bool, error) {
	g.j.add(fmt.Sprintf("renew %s %v", g.name, ttl))
	return g.held && !g.done, g.err
}

// TestHeldRenew: Renew renews the Renewers in order, leaves the other
// grants alone, and stops at the first error or lost grant.
func TestHeldRenew(t *testing.T) {
	errStore := errors.New("store down")
	build := func(j *journal, grants map[string]*renewGrant) (*compose.Held, error) {
		var layers []compose.Layer
		var keys []string
		for i := range 6 {
			name := fmt.Sprint("g", i)
			s := plainSlots(j)
			if g := grants[name]; g != nil {
				g.j, g.name = j, name
				s = grantSlots{func(string) admit.Releaser { return g }}
			}
			layers = append(layers, compose.Layer{Slots: s})
			keys = append(keys, name)
		}
		h := new(compose.Held)
		_, err := mustAll(t, layers...).AllowKeys(ctx, keys, 1, h)
		return h, err
	}

	var empty compose.Held
	if held, err := empty.Renew(ctx, time.Second); !held || err != nil {
		t.Errorf("empty Held: %v, %v; want true, nil", held, err)
	}

	j := &journal{}
	h, err := build(j, map[string]*renewGrant{"g1": {held: true}, "g4": {held: true}})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := h.Renew(ctx, time.Minute); !held || err != nil {
		t.Errorf("Renew: %v, %v; want true, nil", held, err)
	}
	var names []string
	for g := range h.Grants() {
		switch g := g.(type) {
		case *renewGrant:
			names = append(names, "renewer "+g.name)
		case *plainGrant:
			names = append(names, g.name)
		}
		if len(names) == 5 {
			break
		}
	}
	if want := []string{"g0", "renewer g1", "g2", "g3", "renewer g4"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Grants (the first 5): %q, want %q", names, want)
	}
	if got, want := j.take(), []string{"renew g1 1m0s", "renew g4 1m0s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("told %q, want %q", got, want)
	}
	h.Release()
	if held, err := h.Renew(ctx, time.Minute); !held || err != nil {
		t.Errorf("Renew after Release: %v, %v; want true, nil (nothing held)", held, err)
	}
	j.take()

	for _, c := range []struct {
		name   string
		g1     renewGrant
		want   []string
		wantOK bool
		err    error
	}{
		{"lost", renewGrant{held: false}, []string{"renew g1 1s"}, false, nil},
		{"error", renewGrant{held: true, err: errStore}, []string{"renew g1 1s"}, false, errStore},
	} {
		j := &journal{}
		g1 := c.g1
		h, err := build(j, map[string]*renewGrant{"g1": &g1, "g4": {held: true}})
		if err != nil {
			t.Fatal(err)
		}
		held, err := h.Renew(ctx, time.Second)
		if held != c.wantOK || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, held, err, c.wantOK, c.err)
		}
		if got := j.take(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: told %q, want %q (stop at the first)", c.name, got, c.want)
		}
		h.Release()
	}
}
