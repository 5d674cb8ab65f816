package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/admit-go/admit/internal/readlimit"
	"github.com/admit-go/admit/internal/yamltext"
	"go.yaml.in/yaml/v3"
)

// maxSettingsFile is the largest settings file (--server-config) read:
// more is reported too large, and a file that never ends costs no more.
const maxSettingsFile = 1 << 20

// readFile applies the settings file at path: a YAML mapping whose keys
// are the names of serve's flags (without "--") and whose values are
// what the flags take, a list for the flags that may repeat. A key that
// is not a setting, a value that does not parse, text that is not YAML:
// an error with the file's path, line and column, and the key.
func (l *loader) readFile(path string) error {
	data, err := readlimit.ReadFile(path, maxSettingsFile)
	if err != nil {
		return fmt.Errorf("--server-config: %w", err)
	}
	return l.applyFile(path, data)
}

// applyFile applies the settings file of data, named path.
func (l *loader) applyFile(path string, data []byte) error {
	text, off, msg := yamltext.Text(data, "settings")
	if msg != "" {
		line, col := yamltext.Position(text, off)
		return fmt.Errorf("%s:%d:%d: %s", path, line, col, msg)
	}
	// The YAML parser gives no line for a problem on the first line, and
	// counts some from 0: parsed after an empty line, every position is
	// one more, and none is 0.
	dec := yaml.NewDecoder(bytes.NewReader(append([]byte("\n"), text...)))
	var doc yaml.Node
	if err := yamltext.Decode(dec, &doc); err != nil {
		if err == io.EOF {
			return nil // empty: nothing set
		}
		return yamlError(path, text, 1, err)
	}
	var next yaml.Node
	if err := yamltext.Decode(dec, &next); err != io.EOF {
		if err != nil {
			return yamlError(path, text, 2, err)
		}
		return fmt.Errorf("%s:%d: a second YAML document: a settings file is one mapping", path, next.Line-1)
	}
	root := doc.Content[0]
	pos := func(n *yaml.Node) string { return fmt.Sprintf("%s:%d:%d", path, n.Line-1, n.Column) }
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: want a mapping of settings (key: value), as `http-addr: \":9000\"`", pos(root))
	}
	seen := map[string]bool{}
	for k := 0; k+1 < len(root.Content); k += 2 {
		key, val := root.Content[k], root.Content[k+1]
		if key.Kind != yaml.ScalarNode || key.Tag != "!!str" {
			return fmt.Errorf("%s: a key is a setting's name", pos(key))
		}
		i, err := fileSetting(key.Value)
		if err != nil {
			return fmt.Errorf("%s: %v", pos(key), err)
		}
		if seen[key.Value] {
			return fmt.Errorf("%s: %s: given twice", pos(key), key.Value)
		}
		seen[key.Value] = true
		texts, err := nodeTexts(val, l.values[i])
		if err != nil {
			return fmt.Errorf("%s: %s: %v", pos(val), key.Value, err)
		}
		if err := l.apply(i, origin{from: fromFile, pos: pos(val)}, texts); err != nil {
			return err
		}
	}
	return nil
}

// fileSetting returns the row of a settings file's key.
func fileSetting(key string) (int, error) {
	for i := range serveSettings {
		if serveSettings[i].name == key {
			if key == "server-config" {
				return 0, errors.New("server-config: a settings file cannot name another")
			}
			return i, nil
		}
	}
	k := strings.ToLower(strings.ReplaceAll(strings.TrimLeft(key, "-"), "_", "-"))
	for i := range serveSettings {
		if serveSettings[i].name == k {
			return 0, fmt.Errorf("unknown key %q: write %q (the keys are the flags' names)", truncate(key, 64), k)
		}
	}
	return 0, fmt.Errorf("unknown key %q (the keys are the names of admit serve's flags, without --)", truncate(key, 64))
}

// nodeTexts returns the texts a value of the file gives a setting: a
// scalar's, or for a setting that may repeat a list's items.
func nodeTexts(n *yaml.Node, v value) ([]string, error) {
	if n.Kind == yaml.AliasNode {
		return nil, errors.New("aliases are not taken in a settings file")
	}
	_, isList := v.(listValue)
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil, errors.New(`no value (an empty one is "")`)
	case n.Kind == yaml.ScalarNode:
		return []string{n.Value}, nil
	case n.Kind == yaml.SequenceNode && isList:
		texts := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return nil, fmt.Errorf("line %d: an item is one value", item.Line-1)
			}
			texts = append(texts, item.Value)
		}
		return texts, nil
	case n.Kind == yaml.SequenceNode:
		return nil, errors.New("one value, not a list")
	}
	return nil, errors.New("want a value, not a mapping")
}

// yamlError reports err, an error of the YAML parser reading the docs-th
// document of text, at its line (see yamltext.ErrorLine).
func yamlError(path string, text []byte, docs int, err error) error {
	msg := yamltext.Problem(err)
	return fmt.Errorf("%s:%d: malformed YAML: %s", path, yamltext.ErrorLine(text, docs, msg), msg)
}
