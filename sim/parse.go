package sim

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/admit-go/admit"
	"github.com/admit-go/admit/internal/readlimit"
	"github.com/admit-go/admit/internal/yamltext"
	"go.yaml.in/yaml/v3"
)

// Limits on what ParseTraffic reads.
const (
	// maxTrafficSize is the largest traffic file ParseTraffic takes: 4
	// MiB, as a policy file. (Its caller reads the file through a limit:
	// at least this one.)
	maxTrafficSize = 4 << 20
	// maxLogSize is the largest access log a traffic file may name: 256
	// MiB; a larger one, or one that never ends, is cut off there and
	// refused.
	maxLogSize = 256 << 20
	// maxProblems is the most problems an error lists; one more line says
	// that it stopped there.
	maxProblems = 100
)

// ParseTraffic parses a traffic file in its YAML format (docs/SIMULATE.md,
// "The traffic file") into a Traffic. name names the file in errors, and
// a replayed access log (arrival's log) is read from the path the file
// gives, relative to name's directory unless absolute, at most 256 MiB
// (268,435,456 bytes). data is at most 4 MiB (4,194,304 bytes).
//
// Each field is checked for its domain, as Run checks a Traffic built in
// Go (see Traffic's fields), and unknown fields are refused. The error
// lists every problem found (at most 100), one per line, in the order of
// the file, each as "name:line:column: field: what is wrong", the field
// being a path such as clients[2].arrival.rate. Fields left out are zero:
// Run applies their defaults.
func ParseTraffic(name string, data []byte) (*Traffic, error) {
	return parseTraffic(name, data, func(path string) ([]byte, error) {
		return readlimit.ReadFile(path, maxLogSize)
	})
}

// parseTraffic is ParseTraffic reading the logs with read.
func parseTraffic(name string, data []byte, read func(path string) ([]byte, error)) (*Traffic, error) {
	r := &reader{file: name, inside: map[*yaml.Node]bool{}, broken: map[string]bool{}, read: read, logs: map[string][]byte{}}
	root, ok := r.document(data)
	if !ok {
		return nil, r.problems()
	}
	budget := r.budget
	t := &Traffic{}
	r.traffic(root, t)
	if !r.spent {
		if ps, ok := t.check().(problems); ok {
			r.place(ps, r.positions(root, budget))
		}
	}
	if len(r.probs) > 0 {
		return nil, r.problems()
	}
	return t, nil
}

// document returns the root node of data, a single YAML document, or
// reports why there is none.
func (r *reader) document(data []byte) (*yaml.Node, bool) {
	whole := problem{file: r.file, line: 1}
	if len(data) > maxTrafficSize {
		whole.msg = fmt.Sprintf("file of %d bytes is larger than the maximum of %d", len(data), maxTrafficSize)
		r.probs = append(r.probs, whole)
		return nil, false
	}
	text, off, msg := yamltext.Text(data, "traffic")
	if msg != "" {
		line, col := yamltext.Position(text, off)
		r.probs = append(r.probs, problem{file: r.file, line: line, col: col, msg: "malformed YAML: " + msg})
		return nil, false
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var doc, next yaml.Node
	if err := yamltext.Decode(dec, &doc); err != nil && err != io.EOF {
		r.yamlError(text, 1, err)
		return nil, false
	}
	switch err := yamltext.Decode(dec, &next); {
	case err == nil:
		r.probs = append(r.probs, problem{file: r.file, line: next.Line, col: next.Column,
			msg: "a second YAML document: a traffic file holds one"})
		return nil, false
	case err != io.EOF:
		r.yamlError(text, 2, err)
		return nil, false
	}
	if len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
		whole.msg = "empty file: want a traffic file (duration, clients)"
		r.probs = append(r.probs, whole)
		return nil, false
	}
	r.budget = max(budgetFloor, budgetTimes*count(&doc))
	return doc.Content[0], true
}

// yamlError reports an error of the YAML parser reading the docs-th
// document of text, at its line (see yamltext.ErrorLine). (Decoded into
// a node, a document has no *yaml.TypeError: only the parser's.)
func (r *reader) yamlError(text []byte, docs int, err error) {
	msg := yamltext.Problem(err)
	line := yamltext.ErrorLine(text, docs, msg)
	r.probs = append(r.probs, problem{file: r.file, line: line,
		col: yamltext.AliasColumn(text, line, msg), msg: "malformed YAML: " + msg})
}

// count counts the nodes of a document, aliases not followed.
func count(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += count(k)
	}
	return c
}

// positions returns where each field of the file is written, by path:
// the file read again (with the budget of the first time), noting them.
// (Only a file with problems needs them.)
func (r *reader) positions(root *yaml.Node, budget int) map[string]*yaml.Node {
	again := &reader{file: r.file, budget: budget, inside: map[*yaml.Node]bool{}, broken: map[string]bool{},
		at: map[string]*yaml.Node{"": root}, read: r.read, logs: r.logs}
	again.traffic(root, &Traffic{})
	return again.at
}

// place adds the problems check found at the nodes their fields were
// written at (or, for a field left out, the nearest enclosing one), but
// not those of fields that could not be read: reported already.
func (r *reader) place(ps problems, at map[string]*yaml.Node) {
	for _, p := range ps {
		if r.hidden(p.path) {
			continue
		}
		path := p.path
		for at[path] == nil && path != "" {
			path = parent(path)
		}
		n := at[path]
		p.file, p.line, p.col = r.file, n.Line, n.Column
		r.probs = append(r.probs, p)
	}
}

// hidden reports whether path or one enclosing it could not be read.
func (r *reader) hidden(path string) bool {
	for {
		if r.broken[path] {
			return true
		}
		if path == "" {
			return false
		}
		path = parent(path)
	}
}

// parent returns the path enclosing path: a.b[2] for a.b[2].c, a.b for
// a.b[2], "" for a.
func parent(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// problems returns the problems found, in the order of the file.
func (r *reader) problems() problems {
	ps := r.probs
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].line != ps[j].line {
			return ps[i].line < ps[j].line
		}
		return ps[i].col < ps[j].col
	})
	return ps
}

// problem is one thing wrong with a Traffic: the field at path (see
// child) and what is wrong with it, and where the field was written when
// it was read from a file.
type problem struct {
	file      string
	line, col int
	path, msg string
}

// String returns "file:line:column: path: msg", leaving out what is
// unknown.
func (p problem) String() string {
	var b strings.Builder
	if p.file != "" || p.line > 0 {
		b.WriteString(p.file)
		if p.line > 0 {
			fmt.Fprintf(&b, ":%d", p.line)
			if p.col > 0 {
				fmt.Fprintf(&b, ":%d", p.col)
			}
		}
		b.WriteString(": ")
	}
	if p.path != "" {
		b.WriteString(p.path + ": ")
	}
	b.WriteString(p.msg)
	return b.String()
}

// problems is the error of a Traffic with problems: one per line, at
// most maxProblems of them and a line saying how many more there are.
// It matches admit.ErrInvalidConfig (a Config's Traffic outside its
// domain).
type problems []problem

// Is reports whether target is admit.ErrInvalidConfig.
func (ps problems) Is(target error) bool { return target == admit.ErrInvalidConfig }

func (ps problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i == maxProblems {
			fmt.Fprintf(&b, "\ntoo many problems; stopping here (%d more)", len(ps)-i)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// child returns the path of field key of the mapping at path: path.key,
// or path["key"] for a key of other characters than letters, digits, '_'
// and '-'.
func child(path, key string) string {
	plain := key != ""
	for _, c := range key {
		plain = plain && (c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
	}
	switch {
	case !plain:
		return path + "[" + quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// clip cuts s to 64 bytes (a whole character), marking a cut with "...".
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	i := 64
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// quote returns s clipped, in Go's double quotes and escapes.
func quote(s string) string { return strconv.Quote(clip(s)) }

// logFile returns the content of the log a traffic file names, read
// once per file.
func (r *reader) logFile(log string) (string, []byte, error) {
	path := log
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(r.file), path)
	}
	if data, ok := r.logs[path]; ok {
		return path, data, nil
	}
	data, err := r.read(path)
	if err != nil {
		return path, nil, err
	}
	if data == nil {
		data = []byte{}
	}
	r.logs[path] = data
	return path, data, nil
}
