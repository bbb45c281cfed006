package broker

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text shown to the people who decide on a plan is shown as it is:
// characters a person cannot see, or that reorder or hide what follows
// them (bidi controls such as U+202E, zero-width characters, other format
// and control characters, spaces other than the ASCII one, variation
// selectors, tag characters), are written as visible escapes (\u202E), so
// "team-\u202Enimda-retsulc\u202C" never reads as "team-cluster-admin".
// The plan text (tool results, elicitation, the page, the CLI) and the
// page's full calls go through visible.

// invisibleWarning heads a plan line that held such characters.
const invisibleWarning = "⚠ invisible or reordering characters, shown as \\u escapes: "

// visible returns s with every hidden character escaped, and whether
// there was any that warrants a warning. A line break or a tab is escaped
// too — one line of a plan stays one line, and no value can fake the
// next — but is no reason for a warning: a value of several lines (a
// script, a config file) is ordinary.
func visible(s string) (string, bool) {
	i := strings.IndexFunc(s, hidden)
	if i < 0 && utf8.ValidString(s) {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	warn := false
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r != '\n' && r != '\t' && r != '\r' && (hidden(r) || r == utf8.RuneError && size <= 1) {
			warn = true
		}
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case hidden(r) && r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08X`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
		s = s[size:]
	}
	return b.String(), warn
}

// hidden says whether a person could miss r or be misled by it.
func hidden(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r == utf8.RuneError:
		return true
	case unicode.Is(unicode.Zs, r), unicode.Is(unicode.Variation_Selector, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		return true // spaces that look like one, and marks that show nothing (U+034F, U+17B4)
	case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800: // fillers and the blank braille pattern
		return true
	}
	return !unicode.IsGraphic(r)
}

// visibleLines escapes each line of s on its own, keeping its line
// breaks (the page's indented JSON).
func visibleLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i], _ = visible(l)
	}
	return strings.Join(lines, "\n")
}

// Visible returns s with every character a person cannot see, or that
// reorders what follows, shown as an escape (\u202E): for what the CLI
// prints of a plan.
func Visible(s string) string {
	v, _ := visible(s)
	return v
}
