package catalog

import (
	"strings"
	"unicode"
)

// Words splits s into lower-case words at anything that is not a letter or
// digit and at camel-case humps: "tools.api_resources" → tools api
// resources, "PurchaseOrderLine" → purchase order line,
// "APIService" → api service. Declarations build type names from them and
// the search index matches questions against them.
func Words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		lowerNext := i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && lowerNext)) {
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return out
}
