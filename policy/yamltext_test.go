package policy

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/admit-go/admit/internal/policyfmt"
)

// positionCases are malformed files, each with the start of its first
// error: the file and the line, and the column where it is known.
var positionCases = []struct {
	name, src, want string
}{
	{"syntax error on line 1", "a: b: c\n", "f.yaml:1: malformed YAML: mapping values are not allowed in this context"},
	{"syntax error on line 3", "x: 1\ny: 2\na: b: c\n", "f.yaml:3: malformed YAML: mapping values are not allowed"},
	{"unclosed list on line 1", "a: [1, 2\n", "f.yaml:1: malformed YAML: did not find expected ',' or ']'"},
	{"unclosed list on line 3", "x: 1\ny: 2\na: [1, 2\n", "f.yaml:3: malformed YAML: did not find expected ',' or ']'"},
	{"list in a mapping", "x: 1\ny:\n  z: 1\n- a\n", "f.yaml:4: malformed YAML: did not find expected key"},
	{"invalid UTF-8 on line 1", "a: \xff\n", "f.yaml:1:4: malformed YAML: invalid UTF-8"},
	{"invalid UTF-8 on line 4", "domain: x\nrules: []\nz: 3\nab: \xc3\x28\n", "f.yaml:4:5: malformed YAML: invalid UTF-8"},
	{"invalid UTF-8 after CRLF", "x: 1\r\ny: ü\r\nz: \xe2\x82\n", "f.yaml:3:4: malformed YAML: invalid UTF-8"},
	{"NUL byte", "domain: a\x00b\n", "f.yaml:1:10: malformed YAML: character U+0000 is not allowed"},
	{"NUL bytes after text", "domain: x\nrules: []\n\x00\x00\x00\x00", "f.yaml:3:1: malformed YAML: character U+0000 is not allowed"},
	{"DEL", "x: é\x7f\n", "f.yaml:1:5: malformed YAML: character U+007F is not allowed"},
	{"noncharacter", "x: \uffff\n", "f.yaml:1:4: malformed YAML: character U+FFFF is not allowed"},
	{"BOM then a syntax error", "\ufeffa: b: c\n", "f.yaml:1: malformed YAML: mapping values are not allowed"},
	{"BOM then invalid UTF-8", "\ufeffa: \xff\n", "f.yaml:1:4: malformed YAML: invalid UTF-8"},
	{"UTF-16 cut in a character", "\xff\xfea\x00:\x00 \x00\n\x00b\x00:\x00 \x001", "f.yaml:2:4: malformed YAML: incomplete UTF-16 character"},
	{"UTF-16 lone surrogate", "\xfe\xff\x00a\x00:\x00 \xd8\x00\x00b", "f.yaml:1:4: malformed YAML: UTF-16 surrogate without its pair"},
	{"UTF-16 then a syntax error", "\xff\xfe" + utf16le("x: 1\na: b: c\n"), "f.yaml:2: malformed YAML: mapping values are not allowed"},
	{"tab indenting line 1", "\tdomain: x\n", "f.yaml:1: malformed YAML: found character that cannot start any token"},
	{"tab indenting line 2", "rules:\n\t- name: a\n", "f.yaml:2: malformed YAML: found character that cannot start any token"},
	{"tab indenting a key", "x: 1\n\ty: 2\n", "f.yaml:2: malformed YAML: found a tab character that violates indentation"},
	{"unterminated quote on line 1", "domain: \"abc\nrules: []\n", "f.yaml:1: malformed YAML: found unexpected end of stream"},
	{"unterminated quote on line 3", "x: 1\ny: 2\nz: 'abc\n", "f.yaml:3: malformed YAML: found unexpected end of stream"},
	{"unterminated quote without a final newline", "domain: 'abc", "f.yaml:1: malformed YAML: found unexpected end of stream"},
	{"binary garbage", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "f.yaml:1:1: malformed YAML: invalid UTF-8"},
	{"printable garbage", "@@@\x01\x02", "f.yaml:1:4: malformed YAML: character U+0001 is not allowed"},
	{"unknown alias", "x: &a 1\n# *b\ny: [*a, '*b', *b]\n", "f.yaml:3:15: malformed YAML: unknown anchor 'b' referenced"},
	{"unknown tag handle", "x: 1\ny: !e!foo 1\n", "f.yaml:2: malformed YAML: found undefined tag handle"},
	{"too deep", strings.Repeat("[", 10001), "f.yaml:1: malformed YAML: exceeded max depth of 10000"},
	{"second document malformed", "x: 1\n---\na: b: c\n", "f.yaml:3: malformed YAML: mapping values are not allowed"},
	{"empty", "", "f.yaml:1: empty file"},
	{"only a comment", "# nothing\n", "f.yaml:1: empty file"},
}

func utf16le(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteByte(byte(r))
		b.WriteByte(0)
	}
	return b.String()
}

// hasPosition matches an error that starts with its file and line.
var hasPosition = regexp.MustCompile(`^f\.yaml:\d+(:\d+)?: `)

// checkPositions fails t unless err is an Errors whose every entry
// names the file f.yaml and a line.
func checkPositions(t *testing.T, err error) {
	t.Helper()
	var es Errors
	if !errors.As(err, &es) || len(es) == 0 {
		t.Fatalf("error %v is not an Errors", err)
	}
	for _, e := range es {
		if e.File != "f.yaml" || e.Line < 1 || e.Msg == "" || !hasPosition.MatchString(e.Error()) {
			t.Fatalf("error without a position: %q", e.Error())
		}
	}
}

// TestErrorPositions: every error of a malformed file names its file and
// line (and column, where the parser's position is known), in both
// formats.
func TestErrorPositions(t *testing.T) {
	for _, tc := range positionCases {
		for _, parse := range []struct {
			name string
			f    func(string, []byte) (*Policy, error)
		}{{"parseAdmit", parseAdmit}, {"parseEnvoy", parseEnvoy}, {"Parse", Parse}} {
			t.Run(tc.name+"/"+parse.name, func(t *testing.T) {
				_, err := parse.f("f.yaml", []byte(tc.src))
				checkPositions(t, err)
				if got := err.Error(); !strings.HasPrefix(got, tc.want) {
					t.Errorf("got  %q\nwant %q...", got, tc.want)
				}
			})
		}
	}
	// A file of neither format, and one too large.
	_, err := Parse("f.yaml", []byte("x: 1\n"))
	checkPositions(t, err)
	if !errors.Is(err, ErrInvalidPolicy) || !errors.Is(err, policyfmt.ErrUnknown) || !strings.HasPrefix(err.Error(), "f.yaml:1:1: unknown file format") {
		t.Errorf("neither format: %v", err)
	}
	_, err = parseAdmit("f.yaml", make([]byte, maxFileSize+1))
	checkPositions(t, err)
}
