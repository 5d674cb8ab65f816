package sim

// The reading of a traffic file's YAML nodes: aliases followed with a
// budget, mappings of known fields, and the scalars the fields hold.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The budget of nodes a reading may visit, aliases expanded: the
// document's own nodes times budgetTimes, and at least budgetFloor.
const (
	budgetFloor = 100_000
	budgetTimes = 4
)

// reader turns the nodes of a traffic file into a Traffic. It notes
// where each value was written (at, by field path) so that the problems
// check finds can be put there, and which values it could not read
// (broken), whose problems check would only repeat.
type reader struct {
	file   string
	budget int
	spent  bool
	inside map[*yaml.Node]bool // anchored nodes being read
	probs  []problem
	at     map[string]*yaml.Node // nil: not noted
	broken map[string]bool
	read   func(path string) ([]byte, error)
	logs   map[string][]byte
}

// setter reads a value into the field it was made for, reporting what
// is wrong with it; false if it could not.
type setter func(r *reader, n *yaml.Node, path string) bool

// field is a known field of a mapping.
type field struct {
	name string
	set  setter
}

// note notes that the field at path was written at n, if r notes them.
func (r *reader) note(path string, n *yaml.Node) {
	if r.at != nil {
		r.at[path] = n
	}
}

// failf reports that the value at node n of the field at path cannot be
// read, and marks path broken.
func (r *reader) failf(n *yaml.Node, path, format string, args ...any) {
	r.flagf(n, path, format, args...)
	r.broken[path] = true
}

// flagf reports a problem at node n, about the field at path (a key of
// the mapping at path, which is read all the same).
func (r *reader) flagf(n *yaml.Node, path, format string, args ...any) {
	r.probs = append(r.probs, problem{file: r.file, line: n.Line, col: n.Column, path: path, msg: fmt.Sprintf(format, args...)})
}

// follow returns the node n stands for, aliases followed, counting one
// visit; nil (reported once) once the budget is spent, or for an alias
// of a node being read (which contains it).
func (r *reader) follow(n *yaml.Node, path string) *yaml.Node {
	if r.spent {
		r.broken[path] = true
		return nil
	}
	if r.budget--; r.budget < 0 {
		r.spent = true
		r.failf(n, path, "aliases expand to more than %d times the file's nodes: refusing it", budgetTimes)
		return nil
	}
	for n.Kind == yaml.AliasNode {
		switch {
		case n.Alias == nil:
			r.failf(n, path, "alias *%s names no anchor", n.Value)
			return nil
		case r.inside[n.Alias]:
			r.failf(n, path, "alias *%s stands for a node that holds it", n.Value)
			return nil
		}
		n = n.Alias
	}
	return n
}

// describe says what a node is, for "want X, got Y".
func describe(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind != yaml.ScalarNode:
		return "nothing"
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing (null)"
	case "!!bool":
		return "a boolean (" + n.Value + ")"
	case "!!int", "!!float":
		return "a number (" + clip(n.Value) + ")"
	}
	return "the string " + quote(n.Value)
}

// within calls f while the anchored node n is being read.
func (r *reader) within(n *yaml.Node, f func()) {
	if n.Anchor != "" {
		r.inside[n] = true
		defer delete(r.inside, n)
	}
	f()
}

// object reads mapping n of fields: an unknown field, a key given twice,
// a merge key or a key that is not a string is a problem.
func (r *reader) object(n *yaml.Node, path string, fields []field) bool {
	m := r.follow(n, path)
	if m == nil {
		return false
	}
	if m.Kind != yaml.MappingNode {
		r.failf(n, path, "want a mapping, got %s", describe(m))
		return false
	}
	good := true
	r.within(m, func() {
		r.pairs(m, path, func(key string, k, v *yaml.Node, at string) {
			i := slices.IndexFunc(fields, func(f field) bool { return f.name == key })
			if i < 0 {
				names := make([]string, len(fields))
				for j, f := range fields {
					names[j] = f.name
				}
				r.flagf(k, at, "unknown field %s (want one of %s)", quote(key), strings.Join(names, ", "))
				good = false
				return
			}
			r.note(at, v)
			fields[i].set(r, v, at)
		})
	})
	return good
}

// pairs calls f with each key of mapping m (aliases followed) and its
// value's node, with the path of the key; it reports keys that are not
// strings, merge keys and keys given twice.
func (r *reader) pairs(m *yaml.Node, path string, f func(key string, k, v *yaml.Node, at string)) {
	first := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := r.follow(m.Content[i], path)
		switch {
		case k == nil:
			continue
		case k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null":
			r.flagf(k, path, "want a string key, got %s", describe(k))
			continue
		case k.ShortTag() == "!!merge":
			r.flagf(k, path, "merge keys (<<) are not taken: write the fields")
			continue
		}
		at := child(path, k.Value)
		if line, dup := first[k.Value]; dup {
			r.flagf(k, at, "given twice (first on line %d)", line)
			continue
		}
		first[k.Value] = k.Line
		f(k.Value, k, m.Content[i+1], at)
	}
}

// items calls f with each item of list n and its path; a mapping, when
// single is true, is taken as a list of one.
func (r *reader) items(n *yaml.Node, path string, single bool, f func(item *yaml.Node, at string)) bool {
	l := r.follow(n, path)
	switch {
	case l == nil:
		return false
	case single && l.Kind == yaml.MappingNode:
		r.note(path+"[0]", n)
		f(n, path+"[0]")
		return true
	case l.Kind != yaml.SequenceNode:
		r.failf(n, path, "want a list, got %s", describe(l))
		return false
	}
	r.within(l, func() {
		for i, item := range l.Content {
			at := path + "[" + strconv.Itoa(i) + "]"
			r.note(at, item)
			f(item, at)
		}
	})
	return true
}

// scalar returns the scalar n stands for; null is not one.
func (r *reader) scalar(n *yaml.Node, path, want string) (*yaml.Node, bool) {
	s := r.follow(n, path)
	if s == nil {
		return nil, false
	}
	if s.Kind != yaml.ScalarNode || s.ShortTag() == "!!null" {
		r.failf(n, path, "want %s, got %s", want, describe(s))
		return nil, false
	}
	return s, true
}

// number returns a finite number written as one (not quoted).
func (r *reader) number(n *yaml.Node, path, want string) (float64, *yaml.Node, bool) {
	s, ok := r.scalar(n, path, want)
	if !ok {
		return 0, nil, false
	}
	v, ok := r.numeric(s, n, path, want)
	return v, s, ok
}

// numeric returns the finite number scalar s (which n stands for) is.
func (r *reader) numeric(s, n *yaml.Node, path, want string) (float64, bool) {
	var v float64
	if tag := s.ShortTag(); tag != "!!int" && tag != "!!float" || s.Decode(&v) != nil {
		r.failf(n, path, "want %s, got %s", want, describe(s))
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		r.failf(n, path, "want a finite number, got %s", clip(s.Value))
		return 0, false
	}
	return v, true
}

// whole returns a whole number, at least lo (its caller decodes it in
// the range of its type).
func (r *reader) whole(n *yaml.Node, path string, lo float64) (float64, *yaml.Node, bool) {
	v, s, ok := r.number(n, path, "a whole number")
	switch {
	case !ok:
		return 0, nil, false
	case v != math.Trunc(v):
		r.failf(n, path, "want a whole number, got %s", describe(s))
	case v < lo && v < 0:
		r.failf(n, path, "%s is negative", clip(s.Value))
	case v < lo:
		r.failf(n, path, "%s is too small", clip(s.Value))
	default:
		return v, s, true
	}
	return 0, nil, false
}

// intOf sets an int (check bounds its domain; the range of an int64 is
// this one's).
func intOf(p *int) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		v, s, ok := r.whole(n, path, math.MinInt64)
		if !ok {
			return false
		}
		var i int64
		// (yaml.v3 turns a float of 2⁶³ into an int64 without a word.)
		if s.ShortTag() == "!!float" && v >= 1<<63 || s.Decode(&i) != nil {
			r.failf(n, path, "%s is too large", clip(s.Value))
			return false
		}
		*p = int(i)
		return true
	}
}

// int64Of sets an int64.
func int64Of(p *int64) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		var i int
		ok := intOf(&i)(r, n, path)
		*p = int64(i)
		return ok
	}
}

// seedOf sets a seed: a whole number from 0 to 2⁶⁴-1.
func seedOf(p *uint64) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		v, s, ok := r.whole(n, path, 0)
		if ok && (s.ShortTag() == "!!float" && v >= 1<<64 || s.Decode(p) != nil) {
			r.failf(n, path, "%s is too large (the most is %d)", clip(s.Value), uint64(math.MaxUint64))
			return false
		}
		return ok
	}
}

// floatOf sets a float64 (a finite number); a share may also be written
// as a percentage ("70%").
func floatOf(p *float64, percent bool) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		want := "a number"
		if percent {
			want = "a number (0.7) or a percentage (70%)"
		}
		s, ok := r.scalar(n, path, want)
		if !ok {
			return false
		}
		if !percent || s.ShortTag() != "!!str" {
			*p, ok = r.numeric(s, n, path, want)
			return ok
		}
		t, cut := strings.CutSuffix(strings.TrimSpace(s.Value), "%")
		v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if !cut || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			r.failf(n, path, "want %s, got %s", want, describe(s))
			return false
		}
		*p = v / 100
		return true
	}
}

// textOf sets a string: any scalar but null, as written.
func textOf(p *string) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		s, ok := r.scalar(n, path, "a string")
		if ok {
			*p = s.Value
		}
		return ok
	}
}

// lowerOf sets a name, trimmed and in lower case (a store's, as policy
// files write them).
func lowerOf(p *string) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		ok := textOf(p)(r, n, path)
		*p = strings.ToLower(strings.TrimSpace(*p))
		return ok
	}
}

// wordOf sets one of an enumeration's words, in lower case, '-' read as
// '_' (check knows the words).
func wordOf(p *string) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		ok := lowerOf(p)(r, n, path)
		*p = strings.ReplaceAll(*p, "-", "_")
		return ok
	}
}

// durationOf sets a duration (see parseDuration).
func durationOf(p *time.Duration) setter {
	return parsedOf(p, "a duration (10s, 5m, 1h, 2d)", parseDuration)
}

// rateOf sets a rate in requests per second: a number, or a number of
// requests per period ("2/s", "100/min", "5000/h", "30/5m").
func rateOf(p *float64) setter {
	return parsedOf(p, "a rate (2/s, 100/min, or a number per second)", parseRate)
}

// parsedOf sets what parse makes of a scalar's text (want says what it
// is); parse's error says what is wrong.
func parsedOf[T any](p *T, want string, parse func(string) (T, error)) setter {
	return func(r *reader, n *yaml.Node, path string) bool {
		s, ok := r.scalar(n, path, want)
		if !ok {
			return false
		}
		v, err := parse(s.Value)
		if err != nil {
			r.failf(n, path, "%v", err)
			return false
		}
		*p = v
		return true
	}
}
