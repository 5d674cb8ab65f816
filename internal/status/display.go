package status

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// display returns b as printable text: bytes that are not UTF-8 as \xNN,
// control and other non-graphic characters as \u escapes (\n, \t as such),
// and a backslash doubled, so that what a key holds is seen and cannot
// move the text around. It escapes nothing for HTML: the page writes
// text with textContent, and JSON escapes <, > and &.
func display(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&sb, `\x%02x`, b[0])
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\t':
			sb.WriteString(`\t`)
		case !unicode.IsGraphic(r) || unicode.Is(unicode.Bidi_Control, r):
			if r <= 0xFFFF {
				fmt.Fprintf(&sb, `\u%04x`, r)
			} else {
				fmt.Fprintf(&sb, `\U%08x`, r)
			}
		default:
			sb.WriteRune(r)
		}
		b = b[n:]
	}
	return sb.String()
}

// displayKey shows a key of a policy engine's layer, its descriptor
// values length-prefixed one after another ("5:alice4:eu-1"), as the
// values (display'd) joined by " / " ("alice / eu-1"); the sketch may have
// cut the last value short, which then ends the text. A key in any other
// form is shown whole, as display shows it.
func displayKey(b []byte) string {
	var vals []string
	for rest := b; len(rest) > 0; {
		i := 0
		for i < len(rest) && i < 10 && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) || rest[i] != ':' {
			return display(b)
		}
		n := 0
		for _, c := range rest[:i] {
			n = n*10 + int(c-'0')
		}
		rest = rest[i+1:]
		if n > len(rest) {
			n = len(rest) // cut short by the sketch
		}
		vals = append(vals, display(rest[:n]))
		rest = rest[n:]
	}
	if len(vals) == 0 {
		return display(b)
	}
	return strings.Join(vals, " / ")
}
