package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// appendForms appends the texts v may appear as, each once, the plainest
// name first: raw (trimmed), base64 in every alphabet and padding and its
// inner groups at any offset, hex, JSON- and URL-escaped, and for a value
// of several lines each line and each key=value's value.
func appendForms(fs []form, v Value) []form {
	raw := v.Value
	t := strings.TrimSpace(raw)
	if len(t) < MinValue {
		return fs
	}
	what := markerSafe(v.What)
	seen := map[string]bool{}
	put := func(text, how string, word bool) {
		if len(text) < anchorLen || seen[text] {
			return
		}
		seen[text] = true
		fs = append(fs, form{text: text, what: what + how, word: word})
	}
	text := utf8.ValidString(t) // a binary value has only its encodings
	if text {
		put(t, "", len(t) < wordValue)
	}
	for _, b := range []string{raw, t} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			e := enc.EncodeToString([]byte(b))
			put(e, " (base64)", false)
			put(strings.TrimRight(e, "="), " (base64)", false)
			if len(e) > 12 {
				put(e[:len(e)-4], " (base64)", false) // its end changes with what follows
			}
			for off := 1; off <= 2; off++ {
				// At another offset in a longer text, the groups the
				// prefix and the end touch change; the inner ones stay.
				if inner := enc.EncodeToString([]byte("\x00\x00"[:off] + b)); len(inner) > 12 {
					put(inner[4:len(inner)-4], " (base64)", false)
				}
			}
		}
	}
	if text {
		// What a program prints of a value it read: case changed, or
		// backwards (each as short values are: at word boundaries).
		put(strings.ToUpper(t), " (upper-case)", len(t) < wordValue)
		put(strings.ToLower(t), " (lower-case)", len(t) < wordValue)
		put(reversed(t), " (reversed)", len(t) < wordValue)
	}
	put(hex.EncodeToString([]byte(t)), " (hex)", false)
	put(strings.ToUpper(hex.EncodeToString([]byte(t))), " (hex)", false)
	if text {
		if j, err := json.Marshal(t); err == nil { // as Go writes JSON: <, > and & escaped
			put(string(j[1:len(j)-1]), " (JSON)", false)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(t) == nil {
			j := bytes.TrimSpace(b.Bytes())
			put(string(j[1:len(j)-1]), " (JSON)", false)
		}
		// As other encoders write it: Python's json.dumps escapes every
		// non-ASCII letter (\u00e9), PHP's every slash (\/).
		if j, err := json.Marshal(t); err == nil {
			body := string(j[1 : len(j)-1])
			for _, b := range []string{body, strings.ReplaceAll(body, "/", `\/`)} {
				put(b, " (JSON)", false)
				put(asciiJSON(b), " (JSON)", false)
			}
		}
		put(url.QueryEscape(t), " (URL-encoded)", false)
		put(url.PathEscape(t), " (URL-encoded)", false)
	}
	if text && strings.Contains(t, "\n") {
		// A value of several lines (a key, an env file) printed in part:
		// each line, and each key=value's value, is a value of its own.
		// A PEM armour line is the same in every key and hides nothing.
		for _, l := range strings.Split(t, "\n") {
			l = strings.TrimSpace(l)
			if len(l) >= MinValue && !strings.HasPrefix(l, "-----") {
				put(l, "", len(l) < wordValue)
			}
			for _, sep := range []string{"=", ": "} {
				if _, val, ok := strings.Cut(l, sep); ok {
					if val = strings.Trim(strings.TrimSpace(val), `"'`); len(val) >= MinValue {
						put(val, "", len(val) < wordValue)
					}
				}
			}
		}
	}
	return fs
}

// asciiJSON is a JSON string body with every non-ASCII character
// escaped as \uXXXX (UTF-16, as ensure_ascii encoders write it).
func asciiJSON(body string) string {
	var b strings.Builder
	for _, r := range body {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// markerSafe keeps what a marker may say inside a JSON string without an
// escape: letters, digits and " ./_:-()=@,".
func markerSafe(s string) string {
	if s == "" {
		return "a secret value"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" ./_:-()=@,", r):
			return r
		}
		return '_'
	}, s)
}

// reversed is s backwards, letter by letter.
func reversed(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
