package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/kubecode/kubecode/catalog"
)

// redacted replaces every secret value the bridge returns.
const redacted = "[redacted]"

// Shaper is implemented by providers that say what results must honour:
// secret values to hide, noise to drop (catalog.ResultRules). The bridge
// applies the union of every provider's rules to every result.
type Shaper interface {
	ResultRules() catalog.ResultRules
}

// shaper applies result rules.
type shaper struct {
	rules catalog.ResultRules
	// secretMarks and noiseMarks are the JSON strings a result must hold
	// for a rule to apply: one that holds none passes untouched, without
	// decoding.
	secretMarks, noiseMarks [][]byte
}

// newShaper gathers the rules of every provider that has some.
func newShaper(providers []Provider) *shaper {
	sh := &shaper{}
	for _, p := range providers {
		s, ok := p.(Shaper)
		if !ok {
			continue
		}
		r := s.ResultRules()
		sh.rules.Secrets = append(sh.rules.Secrets, r.Secrets...)
		sh.rules.Noise = append(sh.rules.Noise, r.Noise...)
	}
	for _, s := range sh.rules.Secrets {
		sh.secretMarks = append(sh.secretMarks, []byte(strconv.Quote(s.Value)))
	}
	for _, p := range sh.rules.Noise {
		if len(p) > 0 {
			sh.noiseMarks = append(sh.noiseMarks, []byte(strconv.Quote(p[len(p)-1])))
		}
	}
	return sh
}

func containsAny(b []byte, marks [][]byte) bool {
	for _, m := range marks {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}

// shape drops noise (unless keepNoise) and redacts secret values in a
// result, in every object at any depth. It fails closed: a result that may
// hold a secret and cannot be decoded or encoded again is refused.
func (sh *shaper) shape(out json.RawMessage, keepNoise bool) (json.RawMessage, error) {
	noisy := !keepNoise && containsAny(out, sh.noiseMarks)
	secret := containsAny(out, sh.secretMarks)
	if !noisy && !secret {
		return out, nil
	}
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		if secret {
			return nil, errors.New("result may hold a secret and could not be redacted") // fail closed
		}
		return out, nil
	}
	walkObjects(v, func(obj map[string]any) { sh.shapeObject(obj, keepNoise) })
	b, err := json.Marshal(v)
	if err != nil {
		if secret {
			return nil, errors.New("result may hold a secret and could not be redacted")
		}
		return out, nil
	}
	return b, nil
}

// walkObjects calls f on every JSON object in v, nested ones included (a
// List's items, a Secret embedded anywhere).
func walkObjects(v any, f func(map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		f(t)
		for _, x := range t {
			walkObjects(x, f)
		}
	case []any:
		for _, x := range t {
			walkObjects(x, f)
		}
	}
}

func (sh *shaper) shapeObject(obj map[string]any, keepNoise bool) {
	for _, s := range sh.rules.Secrets {
		if v, ok := obj[s.Field].(string); !ok || v != s.Value {
			continue
		}
		for _, p := range s.Drop {
			dropPath(obj, p)
		}
		for _, k := range s.Values {
			if m, ok := obj[k].(map[string]any); ok {
				for key := range m {
					m[key] = redacted
				}
			}
		}
	}
	if !keepNoise {
		for _, p := range sh.rules.Noise {
			dropPath(obj, p)
		}
	}
}

// dropPath removes path p from obj, and the objects on the way that it
// leaves empty (obj itself stays).
func dropPath(obj map[string]any, p catalog.Path) {
	if len(p) == 0 {
		return
	}
	if len(p) == 1 {
		delete(obj, p[0])
		return
	}
	inner, ok := obj[p[0]].(map[string]any)
	if !ok {
		return
	}
	dropPath(inner, p[1:])
	if len(inner) == 0 {
		delete(obj, p[0])
	}
}
