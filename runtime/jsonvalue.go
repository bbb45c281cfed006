package runtime

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// jsonToValue parses JSON straight into plain JavaScript values (objects,
// arrays, strings, numbers, booleans, null) owned by vm. It replaces
// JSON.parse on the hot path: goja's JSON.parse goes through
// encoding/json's token API, several times slower on large lists.
func jsonToValue(vm *goja.Runtime, data []byte) (goja.Value, error) {
	p := &jsonParser{vm: vm, data: data, keys: map[string]string{}}
	p.skip()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.pos != len(p.data) {
		return nil, p.errorf("unexpected data after the value")
	}
	return v, nil
}

const maxJSONDepth = 10000

type jsonParser struct {
	vm   *goja.Runtime
	data []byte
	pos  int
	keys map[string]string // interned object keys: lists repeat them
}

func (p *jsonParser) errorf(format string, a ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", p.pos, fmt.Sprintf(format, a...))
}

func (p *jsonParser) skip() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (goja.Value, error) {
	if depth > maxJSONDepth {
		return nil, p.errorf("nested too deeply")
	}
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return p.vm.ToValue(s), nil
	case c == 't':
		return p.literal("true", p.vm.ToValue(true))
	case c == 'f':
		return p.literal("false", p.vm.ToValue(false))
	case c == 'n':
		return p.literal("null", goja.Null())
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errorf("unexpected character %q", c)
	}
}

func (p *jsonParser) literal(word string, v goja.Value) (goja.Value, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return nil, p.errorf("invalid literal")
	}
	p.pos += len(word)
	return v, nil
}

func (p *jsonParser) object(depth int) (goja.Value, error) {
	p.pos++ // {
	obj := p.vm.NewObject()
	p.skip()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.skip()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected an object key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if ik, ok := p.keys[k]; ok {
			k = ik
		} else {
			p.keys[k] = k
		}
		p.skip()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':'")
		}
		p.pos++
		p.skip()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if k == "__proto__" {
			// JSON.parse makes "__proto__" an own property, not the prototype.
			if err := obj.DefineDataProperty(k, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
				return nil, err
			}
		} else if err := obj.Set(k, v); err != nil {
			return nil, err
		}
		p.skip()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.errorf("expected ',' or '}'")
		}
	}
}

func (p *jsonParser) array(depth int) (goja.Value, error) {
	p.pos++ // [
	var items []any
	p.skip()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return p.vm.NewArray(), nil
	}
	for {
		p.skip()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.skip()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return p.vm.NewArray(items...), nil
		default:
			return nil, p.errorf("expected ',' or ']'")
		}
	}
}

var errBadString = errors.New("invalid string")

// str reads a JSON string at p.pos (which is '"').
func (p *jsonParser) str() (string, error) {
	start := p.pos + 1
	escaped := false
	for i := start; i < len(p.data); i++ {
		switch c := p.data[i]; {
		case c == '\\':
			escaped = true
			i++
		case c == '"':
			p.pos = i + 1
			raw := p.data[start:i]
			if !escaped {
				if !utf8.Valid(raw) {
					return string([]rune(string(raw))), nil
				}
				return string(raw), nil
			}
			s, ok := unescape(raw)
			if !ok {
				return "", p.errorf("%v", errBadString)
			}
			return s, nil
		case c < 0x20:
			p.pos = i
			return "", p.errorf("control character in string")
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *jsonParser) number() (goja.Value, error) {
	start := p.pos
	isFloat := false
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c >= '0' && c <= '9' || c == '-' || c == '+' {
			p.pos++
			continue
		}
		if c == '.' || c == 'e' || c == 'E' {
			isFloat = true
			p.pos++
			continue
		}
		break
	}
	text := string(p.data[start:p.pos])
	if !isFloat {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil && n > -(1<<53) && n < 1<<53 {
			return p.vm.ToValue(n), nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, p.errorf("invalid number %q", text)
	}
	return p.vm.ToValue(f), nil
}

// unescape decodes the body of a JSON string that contains escapes.
func unescape(raw []byte) (string, bool) {
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		i++
		if i >= len(raw) {
			return "", false
		}
		switch raw[i] {
		case '"', '\\', '/':
			b = append(b, raw[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(raw, i+1)
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(raw, i+3); ok && i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					}
				}
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", false
		}
	}
	return string(b), true
}

func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[at:at+4]), 16, 32)
	return rune(n), err == nil
}
