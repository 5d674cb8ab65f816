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
