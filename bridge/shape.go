package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
)

// redacted replaces every Secret value the bridge returns.
const redacted = "[redacted]"

// shape drops noise (managedFields, the last-applied-configuration
// annotation) from Kubernetes objects and redacts Secret values, in a
// single object or an array of them. Results that cannot hold any of these
// pass through untouched, without decoding.
func shape(out json.RawMessage, keepManaged bool) (json.RawMessage, error) {
	noisy := !keepManaged && (bytes.Contains(out, []byte(`"managedFields"`)) || bytes.Contains(out, []byte(lastApplied)))
	secret := bytes.Contains(out, []byte(`"Secret"`))
	if !noisy && !secret {
		return out, nil
	}
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		if secret {
			return nil, errors.New("result may hold a Secret and could not be redacted") // fail closed
		}
		return out, nil
	}
	walkObjects(v, func(obj map[string]any) { shapeObject(obj, keepManaged) })
	b, err := json.Marshal(v)
	if err != nil {
		if secret {
			return nil, errors.New("result may hold a Secret and could not be redacted")
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

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func shapeObject(obj map[string]any, keepManaged bool) {
	isSecret := obj["kind"] == "Secret"
	if md, ok := obj["metadata"].(map[string]any); ok {
		if !keepManaged {
			delete(md, "managedFields")
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			// The annotation holds a Secret's whole manifest: always drop it there.
			if !keepManaged || isSecret {
				delete(ann, lastApplied)
			}
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	if isSecret {
		for _, k := range []string{"data", "stringData"} {
			if m, ok := obj[k].(map[string]any); ok {
				for key := range m {
					m[key] = redacted
				}
			}
		}
	}
}
