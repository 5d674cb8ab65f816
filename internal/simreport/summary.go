package simreport

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/admit-go/admit/sim"
)

// summaryTenants is how many tenants the terminal summary lists, the
// most denied first.
const summaryTenants = 10

// Summary writes r as the terminal's summary: how the run was made, a
// table of its clients (with the total), of its ten most denied tenants
// when they are not its clients, and of its rules; then its headline
// figures and its warnings. Names are printed safely: one with control
// characters is quoted, a long one cut.
func Summary(w io.Writer, r *sim.Result) error {
	if r == nil {
		return fmt.Errorf("simreport: no result to summarise")
	}
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "%s\n", runMeta(r))
	for _, t := range tables(r, summaryTenants) {
		fmt.Fprintln(ew)
		writeTable(ew, t)
	}
	fmt.Fprintln(ew)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, s := range stats(r) {
		mark := ""
		if s.warn {
			mark = " !"
		}
		fmt.Fprintf(tw, "  %s\t%s%s\t%s\n", s.name, s.value, mark, s.note)
	}
	tw.Flush()
	if len(r.Warnings) == 0 {
		fmt.Fprintln(ew, "\nNo warnings.")
	} else {
		fmt.Fprintf(ew, "\nWARNINGS (%d)\n", len(r.Warnings))
		for _, warn := range r.Warnings {
			fmt.Fprintf(ew, "  ! %s: %s\n", printable(warn.Kind, 20), printable(warn.Message, 1000))
		}
	}
	if ew.err != nil {
		return fmt.Errorf("simreport: writing the summary: %w", ew.err)
	}
	return nil
}

// writeTable writes t indented by two spaces, its numbers right-aligned
// under upper-case headings and its names (padded here to one width) on
// the left.
func writeTable(w io.Writer, t table) {
	rows := append([]sim.Tally(nil), t.rows...)
	if t.total != nil {
		tot := *t.total
		tot.Name = "total"
		rows = append(rows, tot)
	}
	names := []string{strings.ToUpper(kindHead(t.kind))}
	for _, r := range rows {
		names = append(names, printable(r.Name, 40))
	}
	width := 0
	for _, n := range names {
		width = max(width, utf8.RuneCountInString(n))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, n := range names {
		fmt.Fprint(tw, n+strings.Repeat(" ", width-utf8.RuneCountInString(n))+"\t")
		for _, c := range t.columns {
			if i == 0 {
				fmt.Fprint(tw, strings.ToUpper(c.head)+"\t")
			} else {
				fmt.Fprint(tw, count(c.get(rows[i-1]))+"\t")
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if t.note != "" {
		fmt.Fprintf(w, "  (%s)\n", t.note)
	}
}

// printable is s as a terminal may show it: quoted if it holds a rune
// that is not printable (a control character, an escape sequence's
// start, a tab), and cut to n runes.
func printable(s string, n int) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		s = strconv.Quote(s)
	}
	return shorten(s, n)
}

// errWriter keeps the first error of its writes and makes the later
// ones do nothing, so that a summary is checked once at its end.
type errWriter struct {
	w   io.Writer
	err error
}

// Write implements io.Writer.
func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
