package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

//go:generate go test -run ^TestServeDocsTable$ -update-docs .

// printSettings writes the help of the table's flags, sorted by name,
// each with its argument, variable, text and default.
func printSettings(w io.Writer, settings []setting) {
	sorted := append([]setting(nil), settings...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	fmt.Fprintf(w, "\nFlags (each also read from the environment variable named, and from the --server-config\nfile under its name; a flag wins over its variable, a variable over the file):\n")
	for _, s := range sorted {
		line := "  --" + s.name
		if s.arg != "" {
			line += " " + s.arg
		}
		fmt.Fprintf(w, "%s  (%s)\n", line, s.env())
		text := plain(s.doc) + " (default " + plain(s.defaultText()) + ")"
		for _, l := range wrap(text, 92) {
			fmt.Fprintf(w, "        %s\n", l)
		}
	}
}

// wrap cuts text into lines of at most width bytes, between words.
func wrap(text string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(text) {
		if cur.Len() > 0 && cur.Len()+1+len(word) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// settingsMarkdown returns docs/SERVE.md's table of the settings, in the
// order of the table.
func settingsMarkdown() string {
	var b strings.Builder
	b.WriteString("| Flag | Variable | Default | Meaning |\n|---|---|---|---|\n")
	for _, s := range serveSettings {
		flag := "--" + s.name
		if s.arg != "" {
			flag += " " + s.arg
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", flag, s.env(), s.defaultText(), strings.ReplaceAll(s.doc, "|", `\|`))
	}
	return b.String()
}
