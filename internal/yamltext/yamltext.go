// Package yamltext finds where the YAML parser's errors are: it gives the
// line of most of them, but not all: none for a character it refuses
// (invalid UTF-8, a control character), none for an unknown alias, and none
// for an error whose marks are on the first line (it leaves out line 0).
// Policy files (package policy) and admit serve's settings file use it, so
// both report every error at its line and, where known, its column.
package yamltext

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Text returns data as the YAML parser is to read it: UTF-8 without a byte
// order mark (UTF-16 with one is converted, as the parser would read it).
// If data holds a character the parser refuses, msg says what is wrong and
// off is where in text (see Position); kind names the file in the message
// ("policy", "settings").
func Text(data []byte, kind string) (text []byte, off int, msg string) {
	text = data
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}), bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		if text, off, msg = fromUTF16(data[2:], data[0] == 0xfe); msg != "" {
			return text, off, msg
		}
	default:
		text = bytes.TrimPrefix(data, []byte("\ufeff"))
	}
	if off, msg = badChar(text, kind); msg != "" {
		return text, off, msg
	}
	return text, 0, ""
}

// Position returns the line and column of offset off in text, counting as
// the YAML parser does: CR LF, CR, LF, NEL, LS and PS end a line, and a
// column is a character.
func Position(text []byte, off int) (line, col int) {
	line, col = 1, 1
	for i := 0; i < off && i < len(text); {
		n, brk := lineBreak(text, i)
		if brk {
			line++
			col = 1
		} else {
			col++
		}
		i += n
	}
	return line, col
}

// Decode decodes the next document of dec into n, turning a panic of the
// parser into an error.
func Decode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

// AliasColumn returns the column of the unknown alias an error message
// msg of the parser names, on line of text, or 0 if msg is not about one
// or the alias is not found there.
func AliasColumn(text []byte, line int, msg string) int {
	name, ok := strings.CutPrefix(msg, "unknown anchor '")
	if !ok {
		return 0
	}
	ends := LineEnds(text)
	if line < 1 || line > len(ends) {
		return 0
	}
	start := 0
	if line > 1 {
		start = ends[line-2]
	}
	off := findAlias(text[start:ends[line-1]], strings.TrimSuffix(name, "' referenced"))
	if off < 0 {
		return 0
	}
	_, col := Position(text[start:], off)
	return col
}

// fromUTF16 converts UTF-16 (big-endian if be) to UTF-8. If data is not
// UTF-16, it returns what it converted, the offset in it where the
// problem is, and a message.
func fromUTF16(data []byte, be bool) (out []byte, off int, msg string) {
	out = make([]byte, 0, len(data)+len(data)/2)
	unit := func(i int) rune {
		if be {
			return rune(data[i])<<8 | rune(data[i+1])
		}
		return rune(data[i+1])<<8 | rune(data[i])
	}
	for i := 0; i < len(data); i += 2 {
		if i+1 == len(data) {
			return out, len(out), "incomplete UTF-16 character at the end of the file"
		}
		r := unit(i)
		if utf16.IsSurrogate(r) {
			if r >= 0xdc00 || i+3 >= len(data) {
				return out, len(out), "UTF-16 surrogate without its pair"
			}
			if r = utf16.DecodeRune(r, unit(i+2)); r == utf8.RuneError {
				return out, len(out), "UTF-16 surrogate without its pair"
			}
			i += 2
		}
		out = utf8.AppendRune(out, r)
	}
	return out, 0, ""
}

// badChar returns the offset of the first byte of text that is not UTF-8
// or is a character YAML does not allow, and what is wrong with it; or an
// empty message.
func badChar(text []byte, kind string) (int, string) {
	for i := 0; i < len(text); {
		c := text[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\r' || c == '\t' {
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return i, fmt.Sprintf("invalid UTF-8 (byte 0x%02X): a %s file is UTF-8 text", c, kind)
		case !yamlChar(r):
			return i, fmt.Sprintf("character %U is not allowed (YAML allows tabs, line breaks and printable characters)", r)
		}
		i += size
	}
	return 0, ""
}

// yamlChar reports whether YAML allows r in a file, beyond printable ASCII,
// tab and line breaks.
func yamlChar(r rune) bool {
	return r == 0x85 || r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= utf8.MaxRune
}

// lineBreak returns the length of the character at text[i], and whether
// it ends a line (a CR before an LF does not: the LF does).
func lineBreak(text []byte, i int) (int, bool) {
	switch c := text[i]; {
	case c == '\n':
		return 1, true
	case c == '\r':
		return 1, i+1 == len(text) || text[i+1] != '\n'
	case c < utf8.RuneSelf:
		return 1, false
	}
	r, n := utf8.DecodeRune(text[i:])
	return n, r == 0x85 || r == 0x2028 || r == 0x2029
}

// LineEnds returns, for each line of text, the offset after its end
// (after its line break, if it has one).
func LineEnds(text []byte) []int {
	var ends []int
	for i := 0; i < len(text); {
		n, brk := lineBreak(text, i)
		i += n
		if brk {
			ends = append(ends, i)
		}
	}
	return append(ends, len(text))
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the errors of the YAML parser (as opposed to its
// scanner), which give a line counted from 0.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected key":              true,
	"did not find expected '-' indicator":    true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found duplicate %TAG directive":         true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// Problem returns what an error of the YAML parser says, without its
// "yaml: " and "line N: ".
func Problem(err error) string {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return m[2]
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// ErrorLine returns the line of the problem msg met parsing docs
// documents of text. The parser gives the line where the construct at
// fault starts (a quoted string not closed, a list not ended, the mapping
// a key is missing from), if it knows it, else the line of the problem;
// but it leaves out a line 0 (counting from 0) and gives none for some
// problems (an unknown alias). So the text is parsed after an empty line,
// which makes every line one more and none 0, for that start; then the
// problem's line is the first line (from there) such that the text up to
// its end fails alike: for a construct that is not closed, the line where
// it starts; else the line of the offending token. A problem at the end
// of the file is on its last line of content, not on the blank lines or
// comments after it; one the parser does not give again is on line 1.
func ErrorLine(text []byte, docs int, msg string) int {
	start, ok := constructLine(text, docs, msg)
	if !ok {
		return 1
	}
	ends := LineEnds(text)
	hi := lastContent(text, ends)
	lo := min(max(start, 1), hi)
	for lo < hi {
		mid := (lo + hi) / 2
		if s, ok := constructLine(text[:ends[mid-1]], docs, msg); ok && s == start {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// lastContent returns the last line of text, whose lines end at ends,
// that holds more than blanks or a comment; 1 if none does.
func lastContent(text []byte, ends []int) int {
	for i := len(ends) - 1; i > 0; i-- {
		line := bytes.TrimLeft(text[ends[i-1]:ends[i]], " \t")
		if len(line) > 0 && line[0] != '#' && line[0] != '\n' && line[0] != '\r' {
			return i + 1
		}
	}
	return 1
}

// constructLine parses docs documents of text after an empty line and,
// if that fails with msg, returns the line the parser gives (0 if none)
// as a line of text.
func constructLine(text []byte, docs int, msg string) (int, bool) {
	dec := yaml.NewDecoder(io.MultiReader(strings.NewReader("\n"), bytes.NewReader(text)))
	var err error
	for range docs {
		var n yaml.Node
		if err = Decode(dec, &n); err != nil {
			break
		}
	}
	if err == nil || err == io.EOF || Problem(err) != msg {
		return 0, false
	}
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, true
	}
	n, _ := strconv.Atoi(m[1])
	if parserProblems[msg] {
		n++ // counted from 0
	}
	return n - 1, true
}

// findAlias returns the offset in line of the first alias *name that is
// not in a comment or a quoted string, or -1.
func findAlias(line []byte, name string) int {
	alias := "*" + name
	var quote byte
	for i, c := range line {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return -1 // a comment
		case c == '*' && bytes.HasPrefix(line[i:], []byte(alias)) &&
			(i+len(alias) == len(line) || strings.IndexByte(" \t\r\n,]}", line[i+len(alias)]) >= 0):
			return i
		}
	}
	return -1
}
