package policy

import (
	"errors"

	"github.com/admit-go/admit/internal/yamltext"
	"go.yaml.in/yaml/v3"
)

// The YAML parser gives the line of most of its errors, but not all;
// internal/yamltext finds the position of the others. These methods report
// them as the walker's errors.

// text returns data as the YAML parser is to read it (see yamltext.Text).
// If data holds a character the parser refuses, it reports the first one
// at its line and column, and returns false.
func (w *walker) text(data []byte) ([]byte, bool) {
	text, off, msg := yamltext.Text(data, "policy")
	if msg != "" {
		w.errs.add(w.posAt(text, off), "", "malformed YAML: "+msg)
		return nil, false
	}
	return text, true
}

// posAt returns the position of offset off in text (see
// yamltext.Position).
func (w *walker) posAt(text []byte, off int) Pos {
	line, col := yamltext.Position(text, off)
	return Pos{File: w.file, Line: line, Column: col}
}

// yamlError reports err, an error of the YAML parser reading the docs-th
// document of text, at its line (see yamltext.ErrorLine), and for an
// unknown alias at its column too.
func (w *walker) yamlError(text []byte, docs int, err error) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, e := range te.Errors {
			w.yamlError(text, docs, errors.New(e))
		}
		return
	}
	msg := yamltext.Problem(err)
	p := Pos{File: w.file, Line: yamltext.ErrorLine(text, docs, msg)}
	p.Column = yamltext.AliasColumn(text, p.Line, msg)
	w.errs.add(p, "", "malformed YAML: "+msg)
}
