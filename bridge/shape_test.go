package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/catalog"
)

// ruleless is a provider that declares no result rules and answers every
// call with its result.
type ruleless struct {
	op     string
	result string
}

func (r ruleless) Discover(context.Context) ([]*catalog.Operation, string, error) {
	return []*catalog.Operation{{Name: r.op, Input: &catalog.Schema{Type: "object"}, Annotations: readOnly}}, "v1", nil
}

func (r ruleless) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(r.result), nil
}

// TestShape: the bridge applies the union of its providers' result rules
// to every result, whichever provider returned it; it knows no rule of its
// own; secrets are hidden with noise kept; a result that may hold a secret
// and cannot be decoded is refused.
func TestShape(t *testing.T) {
	secret := `{"kind":"Secret","metadata":{"name":"db","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"password\":\"S0VZ\"}}"}},"data":{"password":"S0VZ"},"stringData":{"token":"abc"}}`
	for _, tc := range []struct {
		name      string
		withRules bool // a provider with the Kubernetes rules is served too
		keepNoise bool
		result    string
		want      string // "" means refused
	}{
		{"another provider's rules apply", true, false, secret,
			`{"data":{"password":"[redacted]"},"kind":"Secret","metadata":{"name":"db"},"stringData":{"token":"[redacted]"}}`},
		{"a secret nested anywhere", true, false, `{"found":[{"objects":[` + secret + `]}]}`,
			`{"found":[{"objects":[{"data":{"password":"[redacted]"},"kind":"Secret","metadata":{"name":"db"},"stringData":{"token":"[redacted]"}}]}]}`},
		{"noise kept, a secret's copy still dropped", true, true, secret,
			`{"data":{"password":"[redacted]"},"kind":"Secret","metadata":{"name":"db"},"stringData":{"token":"[redacted]"}}`},
		{"noise dropped", true, false, `{"kind":"Pod","metadata":{"name":"a","managedFields":[{}],"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","team":"x"}}}`,
			`{"kind":"Pod","metadata":{"annotations":{"team":"x"},"name":"a"}}`},
		{"noise kept", true, true, `{"kind":"Pod","metadata":{"name":"a","managedFields":[{}]}}`,
			`{"kind":"Pod","metadata":{"name":"a","managedFields":[{}]}}`},
		{"fail closed", true, false, `{"kind":"Secret","data":{"password":"S0VZ"}`, ""},
		{"no provider with rules: the bridge knows none", false, false, secret, secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			providers := []Provider{ruleless{op: "upstream.things.get", result: tc.result}}
			if tc.withRules {
				providers = append(providers, &fakeProvider{})
			}
			b := New(providers, &Options{KeepNoise: tc.keepNoise})
			defer b.Close()
			out, err := b.Session("t").Call(context.Background(), "upstream.things.get", json.RawMessage(`{}`))
			if tc.want == "" {
				if err == nil || err.Data == nil || err.Data.Reason != "Redaction" {
					t.Fatalf("got %s, %v; want the result refused", out, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(out)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}
