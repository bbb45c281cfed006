package broker

import "strings"

// A call of tools.* may spread over lines (its argument object written
// one field a line): a diagnostic on any of them is about that call, as
// one on the line of tools.* is.

// callSpan is one call of tools.* in a script: its lines (from 1) and
// the chain it calls (".kubernetes.configmaps.create").
type callSpan struct {
	first, last int
	chain       string
}

// callSpans finds the calls of tools.* in lines whose argument lists
// close on a later line than they open.
func callSpans(lines []string) []callSpan {
	src := strings.Join(lines, "\n")
	var out []callSpan
	for _, m := range toolsChainRE.FindAllStringSubmatchIndex(src, -1) {
		i := m[1]
		for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
			i++
		}
		if i >= len(src) || src[i] != '(' {
			continue
		}
		end := closing(src, i)
		first := strings.Count(src[:m[0]], "\n") + 1
		last := strings.Count(src[:end], "\n") + 1
		if last > first {
			out = append(out, callSpan{first: first, last: last, chain: src[m[2]:m[3]]})
		}
	}
	return out
}

// closing returns the offset of the bracket that closes the one at open
// (the end of src when none does), passing over strings, template
// literals and comments.
func closing(src string, open int) int {
	depth := 0
	for i := open; i < len(src); i++ {
		switch c := src[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return i
			}
		case '"', '\'', '`':
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
			} else if i+1 < len(src) && src[i+1] == '*' {
				if j := strings.Index(src[i+2:], "*/"); j >= 0 {
					i += j + 3
				} else {
					return len(src)
				}
			}
		}
	}
	return len(src)
}

// chainsAt are the tools.* chains a diagnostic on line (from 1) is
// about: those written on the line, else the call whose argument list
// the line is in.
func chainsAt(lines []string, spans []callSpan, line int) []string {
	var out []string
	if line-1 < len(lines) {
		for _, m := range toolsChainRE.FindAllStringSubmatch(lines[line-1], -1) {
			out = append(out, m[1])
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, s := range spans {
		if line > s.first && line <= s.last {
			out = append(out, s.chain)
		}
	}
	return out
}
