package bridge

import (
	"bytes"
	"encoding/json"
)

// redacted replaces every Secret value the bridge returns.
const redacted = "[redacted]"

// shape drops noise (managedFields, the last-applied-configuration
// annotation) from Kubernetes objects and redacts Secret values, in a
// single object or an array of them. Results that cannot hold any of these
// pass through untouched, without decoding.
func shape(out json.RawMessage, keepManaged bool) json.RawMessage {
	noisy := !keepManaged && (bytes.Contains(out, []byte(`"managedFields"`)) || bytes.Contains(out, []byte(lastApplied)))
	secret := bytes.Contains(out, []byte(`"Secret"`))
	if !noisy && !secret {
		return out
	}
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return out
	}
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			shapeObject(x, keepManaged)
		}
	default:
		shapeObject(t, keepManaged)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return out
	}
	return b
}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func shapeObject(x any, keepManaged bool) {
	obj, ok := x.(map[string]any)
	if !ok {
		return
	}
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
