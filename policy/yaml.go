package policy

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/admit-go/admit/internal/policyfmt"
	"github.com/admit-go/admit/internal/yamltext"
	"go.yaml.in/yaml/v3"
)

// maxFileSize is the largest policy file the loaders read, in bytes: 4
// MiB.
const maxFileSize = policyfmt.MaxFileSize

// minBudget is the least number of nodes a walk may visit, aliases
// expanded; a document may use up to budgetFactor times its own size.
const (
	minBudget    = 100_000
	budgetFactor = 4
)

// Short tags of yaml.v3.
const (
	tagStr   = "!!str"
	tagInt   = "!!int"
	tagFloat = "!!float"
	tagBool  = "!!bool"
	tagNull  = "!!null"
)

// walker walks a YAML document: it follows aliases (with a budget, so that
// a billion laughs fails fast, and a check for aliases that contain
// themselves) and reports problems with their positions and field paths.
type walker struct {
	file      string
	errs      *errList
	budget    int
	expanding map[*yaml.Node]bool
	exhausted bool
}

// parseYAML parses data as one YAML document and returns its root node
// (nil for an empty document), or reports why it cannot.
func parseYAML(file string, data []byte, errs *errList) (*yaml.Node, *walker) {
	w := &walker{file: file, errs: errs, expanding: map[*yaml.Node]bool{}}
	if len(data) > maxFileSize {
		errs.add(Pos{File: file, Line: 1}, "", fmt.Sprintf("file of %d bytes is larger than the maximum of %d", len(data), maxFileSize))
		return nil, w
	}
	text, ok := w.text(data)
	if !ok {
		return nil, w
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc yaml.Node
	if err := yamltext.Decode(dec, &doc); err != nil {
		if err == io.EOF {
			return nil, w
		}
		w.yamlError(text, 1, err)
		return nil, w
	}
	var next yaml.Node
	switch err := yamltext.Decode(dec, &next); {
	case err == io.EOF:
	case err != nil:
		w.yamlError(text, 2, err)
		return nil, w
	default:
		errs.add(w.pos(&next), "", "a second YAML document: a policy file holds one")
		return nil, w
	}
	w.budget = max(minBudget, budgetFactor*countNodes(&doc))
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, w
	}
	return doc.Content[0], w
}

// countNodes counts the nodes of a document, not following aliases.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

func (w *walker) pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: w.file}
	}
	return Pos{File: w.file, Line: n.Line, Column: n.Column}
}

// fail reports a problem at node n, field path.
func (w *walker) fail(n *yaml.Node, path, format string, args ...any) {
	w.errs.add(w.pos(n), path, fmt.Sprintf(format, args...))
}

// resolve returns the node n stands for, following aliases, and counts
// the visit against the budget. It returns nil (having reported why, once)
// when the budget is spent or an alias contains itself.
func (w *walker) resolve(n *yaml.Node, path string) *yaml.Node {
	if w.exhausted || n == nil {
		return nil
	}
	w.budget--
	if w.budget < 0 {
		w.exhausted = true
		w.fail(n, path, "aliases expand to too many nodes (more than %d times the document): refusing the file", budgetFactor)
		return nil
	}
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			w.fail(n, path, "alias *%s refers to no anchor", n.Value)
			return nil
		}
		if w.expanding[n.Alias] {
			w.fail(n, path, "alias *%s refers to a node that contains it", n.Value)
			return nil
		}
		n = n.Alias
	}
	return n
}

// null reports whether n (resolved) is null or absent; a node that cannot
// be resolved counts as null (resolve reported why).
func (w *walker) null(n *yaml.Node, path string) bool {
	r := w.resolve(n, path)
	return r == nil || r.Kind == yaml.ScalarNode && r.ShortTag() == tagNull
}

// line returns the line of n resolved (0 if it cannot be).
func (w *walker) line(n *yaml.Node, path string) int {
	if r := w.resolve(n, path); r != nil {
		return r.Line
	}
	return 0
}

// enter marks an anchored node as being expanded (for resolve's check of
// aliases that contain themselves) until the returned function is called.
func (w *walker) enter(n *yaml.Node) func() {
	if n.Anchor == "" {
		return func() {}
	}
	w.expanding[n] = true
	return func() { delete(w.expanding, n) }
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case tagNull:
			return "null"
		case tagBool:
			return "a boolean (" + n.Value + ")"
		case tagInt, tagFloat:
			return "a number (" + truncate(n.Value) + ")"
		}
		return fmt.Sprintf("the string %q", truncate(n.Value))
	}
	return "nothing"
}

// keyPath appends a mapping key to a path: ".key" for plain keys, else
// ["key"].
func keyPath(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key) && plain; i++ {
		c := key[i]
		plain = c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if plain {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(truncate(key)) + "]"
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// mapping calls f for each key of mapping node n, in order, with the key,
// its node and the value's node (aliases resolved by f's own calls). It
// reports a node that is not a mapping, keys that are not strings, and
// duplicate keys, and returns false if n is not a mapping.
func (w *walker) mapping(n *yaml.Node, path string, f func(key string, kn, vn *yaml.Node)) bool {
	n = w.resolve(n, path)
	if n == nil {
		return false
	}
	if n.Kind != yaml.MappingNode {
		w.fail(n, path, "want a mapping, got %s", kindName(n))
		return false
	}
	defer w.enter(n)()
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := w.resolve(n.Content[i], path)
		if kn == nil {
			continue
		}
		if kn.Kind != yaml.ScalarNode || kn.ShortTag() == tagNull {
			w.fail(kn, path, "want a string key, got %s", kindName(kn))
			continue
		}
		key := kn.Value
		if key == "<<" && kn.Style == 0 && kn.ShortTag() == "!!merge" {
			w.fail(kn, path, "merge keys (<<) are not supported: write the fields, or use an alias for a whole value")
			continue
		}
		if first, dup := seen[key]; dup {
			w.fail(kn, keyPath(path, key), "duplicate key (first at line %d)", first.Line)
			continue
		}
		seen[key] = kn
		f(key, kn, n.Content[i+1])
	}
	return true
}

// fields walks mapping n whose keys are the fields handled by set: set
// returns false for an unknown field, which is reported with the list of
// known ones.
func (w *walker) fields(n *yaml.Node, path string, known []string, set func(key string, vn *yaml.Node, fpath string)) bool {
	return w.mapping(n, path, func(key string, kn, vn *yaml.Node) {
		fpath := keyPath(path, key)
		for _, k := range known {
			if k == key {
				set(key, vn, fpath)
				return
			}
		}
		w.fail(kn, fpath, "unknown field %q (want one of %s)", truncate(key), strings.Join(known, ", "))
	})
}

// list calls f for each item of sequence n. A scalar or mapping is taken
// as a list of one when one is true.
func (w *walker) list(n *yaml.Node, path string, one bool, f func(i int, item *yaml.Node, ipath string)) bool {
	r := w.resolve(n, path)
	if r == nil {
		return false
	}
	if r.Kind != yaml.SequenceNode {
		if one && (r.Kind == yaml.ScalarNode && r.ShortTag() != tagNull || r.Kind == yaml.MappingNode) {
			f(0, n, path)
			return true
		}
		w.fail(r, path, "want a list, got %s", kindName(r))
		return false
	}
	defer w.enter(r)()
	for i, item := range r.Content {
		f(i, item, indexPath(path, i))
	}
	return true
}

// scalar returns scalar node n resolved, or reports that it is not one.
func (w *walker) scalar(n *yaml.Node, path, want string) (*yaml.Node, bool) {
	r := w.resolve(n, path)
	if r == nil {
		return nil, false
	}
	if r.Kind != yaml.ScalarNode || r.ShortTag() == tagNull {
		w.fail(r, path, "want %s, got %s", want, kindName(r))
		return nil, false
	}
	return r, true
}

// str returns the text of a scalar: any scalar but null is taken as the
// string it is written as (a value "1.50" stays "1.50").
func (w *walker) str(n *yaml.Node, path string) (string, bool) {
	r, ok := w.scalar(n, path, "a string")
	if !ok {
		return "", false
	}
	return r.Value, true
}

// nonEmpty is str refusing "".
func (w *walker) nonEmpty(n *yaml.Node, path string) (string, bool) {
	s, ok := w.str(n, path)
	if ok && s == "" {
		w.fail(n, path, "must not be empty")
		return "", false
	}
	return s, ok
}

func (w *walker) boolean(n *yaml.Node, path string) (bool, bool) {
	r, ok := w.scalar(n, path, "true or false")
	if !ok {
		return false, false
	}
	if r.ShortTag() != tagBool {
		w.fail(r, path, "want true or false, got %s", kindName(r))
		return false, false
	}
	var b bool
	if err := r.Decode(&b); err != nil {
		w.fail(r, path, "want true or false, got %s", kindName(r))
		return false, false
	}
	return b, true
}

// integer returns a whole number in [lo, hi].
func (w *walker) integer(n *yaml.Node, path string, lo, hi int64) (int64, bool) {
	r, ok := w.scalar(n, path, "a whole number")
	if !ok {
		return 0, false
	}
	tag := r.ShortTag()
	if tag != tagInt && tag != tagFloat {
		w.fail(r, path, "want a whole number, got %s", kindName(r))
		return 0, false
	}
	var v int64
	if err := r.Decode(&v); err != nil {
		if digitsOnly(r.Value) {
			w.fail(r, path, "%s is too large (the maximum is %d)", truncate(r.Value), hi)
		} else {
			w.fail(r, path, "want a whole number, got %s", kindName(r))
		}
		return 0, false
	}
	switch {
	case v < lo && v < 0:
		w.fail(r, path, "%d is negative", v)
		return 0, false
	case v < lo:
		w.fail(r, path, "%d is too small (the minimum is %d)", v, lo)
		return 0, false
	case v > hi:
		w.fail(r, path, "%d is too large (the maximum is %d)", v, hi)
		return 0, false
	}
	return v, true
}

// number returns a finite number, whole or decimal.
func (w *walker) number(n *yaml.Node, path string) (float64, bool) {
	r, ok := w.scalar(n, path, "a number")
	if !ok {
		return 0, false
	}
	tag := r.ShortTag()
	if tag != tagInt && tag != tagFloat {
		w.fail(r, path, "want a number, got %s", kindName(r))
		return 0, false
	}
	var v float64
	if err := r.Decode(&v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		w.fail(r, path, "want a finite number, got %s", kindName(r))
		return 0, false
	}
	return v, true
}

// fraction returns a fraction in (0, 1], written as a number (0.25) or a
// percentage ("25%").
func (w *walker) fraction(n *yaml.Node, path string) (float64, bool) {
	r, ok := w.scalar(n, path, "a fraction (0.5, or 50%)")
	if !ok {
		return 0, false
	}
	var f float64
	if t := strings.TrimSpace(r.Value); r.ShortTag() == tagStr && strings.HasSuffix(t, "%") {
		bp, ok := parsePercent(t)
		if !ok {
			w.fail(r, path, "want a percentage such as 50%% or 12.5%%, got %q", truncate(r.Value))
			return 0, false
		}
		f = float64(bp) / 10000
	} else if f, ok = w.number(n, path); !ok {
		return 0, false
	}
	if !(f > 0 && f <= 1) {
		w.fail(r, path, "%s is not a fraction in (0, 1] (0.5, or 50%%)", truncate(r.Value))
		return 0, false
	}
	return f, true
}

// parsePercent parses a percentage ("50%", "12.5%", "33.33 %") with at
// most two decimals and three digits before them, in hundredths of a
// percent (basis points).
func parsePercent(s string) (int64, bool) {
	s, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		return 0, false
	}
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(whole) > 3 || !isDigits(whole) || len(frac) > 2 || frac != "" && !isDigits(frac) {
		return 0, false
	}
	var bp int64
	for _, c := range whole {
		bp = bp*10 + int64(c-'0')
	}
	bp *= 100
	for i, c := range frac {
		if i == 0 {
			bp += int64(c-'0') * 10
		} else {
			bp += int64(c - '0')
		}
	}
	return bp, true
}

func digitsOnly(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
	return isDigits(strings.ReplaceAll(s, "_", ""))
}

// duration returns a duration in Go's syntax, at least lo.
func (w *walker) duration(n *yaml.Node, path string, lo time.Duration) (time.Duration, bool) {
	s, ok := w.str(n, path)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		w.fail(n, path, "want a duration (50ms, 30s, 1m), got %q", truncate(s))
		return 0, false
	}
	if d < lo {
		if d < 0 {
			w.fail(n, path, "duration %v is negative", d)
		} else {
			w.fail(n, path, "duration %v is too short (the minimum is %v)", d, lo)
		}
		return 0, false
	}
	return d, true
}

// strings returns a list of strings (a single string standing for a list
// of one).
func (w *walker) strings(n *yaml.Node, path string) ([]string, bool) {
	var out []string
	good := true
	ok := w.list(n, path, true, func(i int, item *yaml.Node, ipath string) {
		s, ok := w.str(item, ipath)
		if ok {
			out = append(out, s)
		}
		good = good && ok
	})
	return out, ok && good
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
