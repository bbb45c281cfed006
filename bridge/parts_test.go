package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecode/kubecode/catalog/secrets"
)

// partsProvider answers kubernetes.pods.list in parts, each page a pod that
// carries noise and a known secret value; fail ends it after the first
// part.
type partsProvider struct {
	fakeProvider
	pages []string
	fail  error
	whole bool // answers only whole
}

func (p *partsProvider) Call(_ context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
	if p.fail != nil {
		return nil, p.fail
	}
	var items []string
	for _, page := range p.pages {
		if s := strings.TrimSpace(page[1 : len(page)-1]); s != "" {
			items = append(items, s)
		}
	}
	return json.RawMessage("[" + strings.Join(items, ",") + "]"), nil
}

func (p *partsProvider) CallParts(_ context.Context, name string, _ json.RawMessage, part func(json.RawMessage) error) (bool, error) {
	if p.whole || name != "kubernetes.pods.list" {
		return false, nil
	}
	for i, page := range p.pages {
		if err := part(json.RawMessage(page)); err != nil {
			return true, err
		}
		if p.fail != nil && i == 0 {
			return true, p.fail
		}
	}
	return true, nil
}

// TestAnswersInParts checks a read answered in parts passes the same
// shaping and secret boundary, page by page, as a whole answer, and the
// ledger counts its bytes.
func TestAnswersInParts(t *testing.T) {
	pod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","managedFields":[{"manager":"kubectl"}]},"spec":{"containers":[{"name":"app","env":[{"name":"PASSWORD","value":"hunter2-is-long-enough"}]}]}}`
	}
	pages := []string{"[" + pod("a") + "," + pod("b") + "]", "[]", "[" + pod("c") + "]"}
	tests := []struct {
		name     string
		provider *partsProvider
		wantErr  string
	}{
		{name: "pages", provider: &partsProvider{pages: pages}},
		{name: "whole only", provider: &partsProvider{pages: pages, whole: true}},
		{name: "failed after a page", provider: &partsProvider{pages: pages, fail: errors.New("the API server went away")}, wantErr: "the API server went away"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := secrets.New(nil)
			reg.Set("Secret shop/db", []secrets.Value{{Value: "hunter2-is-long-enough", What: "Secret shop/db password"}})
			fake, _, _ := newFake()
			tt.provider.ops = fake.ops
			var ledger bytes.Buffer
			b := New([]Provider{tt.provider}, &Options{Ledger: &ledger, Secrets: reg})
			s := b.Session("t")
			var got [][]byte
			out, rpcErr := s.CallParts(context.Background(), "kubernetes.pods.list", json.RawMessage(`{}`), func(part json.RawMessage) error {
				got = append(got, bytes.Clone(part))
				return nil
			})
			if tt.wantErr != "" {
				if rpcErr == nil || rpcErr.Message != tt.wantErr {
					t.Fatalf("error %+v, want %q", rpcErr, tt.wantErr)
				}
				return
			}
			if rpcErr != nil {
				t.Fatal(rpcErr)
			}
			whole, rpcErr := b.Session("t").Call(context.Background(), "kubernetes.pods.list", json.RawMessage(`{}`))
			if rpcErr != nil {
				t.Fatal(rpcErr)
			}
			if tt.provider.whole {
				if got != nil || !bytes.Equal(out, whole) {
					t.Fatalf("a provider answering whole: parts %q, answer %s", got, out)
				}
				return
			}
			if out != nil {
				t.Fatalf("an answer in parts also answered whole: %s", out)
			}
			var joined []any
			for _, part := range got {
				var items []any
				if err := json.Unmarshal(part, &items); err != nil {
					t.Fatalf("part %s: %v", part, err)
				}
				joined = append(joined, items...)
			}
			var want []any
			if err := json.Unmarshal(whole, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, joined); diff != "" {
				t.Errorf("the parts' items (-whole +parts):\n%s", diff)
			}
			if bytes.Contains(bytes.Join(got, nil), []byte("hunter2")) || bytes.Contains(bytes.Join(got, nil), []byte("managedFields")) {
				t.Errorf("a secret or noise passed in a part: %s", bytes.Join(got, nil))
			}
			var e struct {
				Bytes  int
				Hidden []string
			}
			if err := json.Unmarshal(bytes.SplitN(ledger.Bytes(), []byte("\n"), 2)[0], &e); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, part := range got {
				n += len(part)
			}
			if e.Bytes != n || len(e.Hidden) == 0 {
				t.Errorf("ledger says %d bytes, hidden %v; the parts were %d bytes", e.Bytes, e.Hidden, n)
			}
		})
	}
}
