package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/SERVE.md's table of settings from serveSettings")

const (
	docsBegin = "<!-- BEGIN SETTINGS -->\n"
	docsEnd   = "<!-- END SETTINGS -->\n"
)

// docs/SERVE.md's table of flags and variables is serveSettings': `go
// generate ./cmd/admit` rewrites it, and this test fails until it is.
func TestServeDocsTable(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "SERVE.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, docsBegin), strings.Index(doc, docsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q", path, docsBegin, docsEnd)
	}
	want := doc[:i+len(docsBegin)] + settingsMarkdown() + doc[j:]
	if *updateDocs {
		if want != doc {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if want != doc {
		t.Errorf("%s: the table of settings differs from serveSettings (cmd/admit/config.go): run go generate ./cmd/admit", path)
	}
	// Every setting's anchor links to a heading that exists.
	for _, s := range serveSettings {
		for rest := s.doc; ; {
			k := strings.Index(rest, "](#")
			if k < 0 {
				break
			}
			rest = rest[k+3:]
			anchor := rest[:strings.IndexByte(rest, ')')]
			if !hasHeading(doc, anchor) {
				t.Errorf("--%s links to #%s, which is no heading of %s", s.name, anchor, path)
			}
		}
	}
}

// hasHeading reports whether the Markdown doc has a heading whose
// GitHub anchor is anchor.
func hasHeading(doc, anchor string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}

// The example of docs/SERVE.md's "Settings file" loads, and sets what it
// says.
func TestServeDocsSettingsExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "SERVE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "### Settings file")
	_, example, ok2 := strings.Cut(section, "```yaml\n")
	example, _, ok3 := strings.Cut(example, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/SERVE.md: no example under ### Settings file")
	}
	l, err := loadServe([]string{"--server-config", writeTemp(t, "serve.yaml", example)}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c := l.cfg; c.AdminAddr != "127.0.0.1:8082" || c.PolicyFiles[0] != "/etc/admit/policy.d" || c.KeyPrefix != "shop" ||
		c.MaxRequestBytes != 256<<10 || !c.AllowReset || c.LogFormat != "json" {
		t.Errorf("the example's settings: %+v", c)
	}
}
