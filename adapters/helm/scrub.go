package helm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/secrets"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A Helm call knows which values are secret: the values its releases'
// rendered Secrets hold (as rendered, base64-decoded and encoded), the
// input values that flow into a Secret's data (a password composed into a
// connection string), and the input values under secret-looking keys.
// The call registers them in the secret registry (register), so every
// result, error and plan line, of this call or any later one, loses them
// at the bridge's boundary: Helm has no whole-value scrubber of its own.
// What stays here is what only Helm can do: renders that mask secret
// values before they are text (mask.go), and free text a template
// composed (notes, errors, descriptions, diff lines), which loses any part
// of those values of minPart characters or more, so a truncated or spliced
// secret does not leave either.
//
// Releases are collected as the call goes (Helm's release storage reports
// each one it touches, renders are added where they are made), so no
// operation can forget to register what it read.

// minSecret is the length below which a value is not scrubbed whole (a
// port "5432" or "true" would otherwise vanish from every answer).
const minSecret = 4

// minPart is the shortest part of a secret value that free text loses.
const minPart = 6

// minFlowing is the shortest input value that is a secret because a
// rendered Secret holds it (a port or a host name would otherwise vanish
// from every answer); values under secret-looking keys count from
// minSecret.
const minFlowing = 6

// callSecrets gathers what one call must not return.
type callSecrets struct {
	mu     sync.Mutex
	rels   []*release.Release
	seen   map[*release.Release]bool
	inputs []map[string]any // values a call was given
	list   []string         // computed; nil when rels or inputs changed
	parts  map[string]bool  // every minPart-long piece of list's decoded values
}

type secretsKey struct{}

// withSecrets returns ctx with an empty collection of secrets for one call.
func withSecrets(ctx context.Context) context.Context {
	return context.WithValue(ctx, secretsKey{}, &callSecrets{seen: map[*release.Release]bool{}})
}

// secretsOf returns the call's collection, or nil (whose methods do
// nothing) outside a call.
func secretsOf(ctx context.Context) *callSecrets {
	s, _ := ctx.Value(secretsKey{}).(*callSecrets)
	return s
}

// addRelease keeps rel's secrets for the call.
func (s *callSecrets) addRelease(rels ...*release.Release) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rels {
		if r != nil && !s.seen[r] {
			s.seen[r] = true
			s.rels = append(s.rels, r)
			s.list = nil
		}
	}
}

// addInputs keeps the values a call was given: those under secret-looking
// keys, and those a rendered Secret holds, are secrets.
func (s *callSecrets) addInputs(vals map[string]any) {
	if s == nil || len(vals) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inputs = append(s.inputs, vals)
	s.list = nil
}

// register adds the call's secret values to reg under each release it
// read ("Helm release shop/db"), beside what earlier calls added: a later
// read of any object, by any operation, loses them at the boundary.
func (s *callSecrets) register(reg *secrets.Registry) {
	if s == nil || reg == nil {
		return
	}
	list, _ := s.values()
	s.mu.Lock()
	rels := slices.Clone(s.rels)
	s.mu.Unlock()
	if len(list) == 0 {
		return
	}
	for _, r := range rels {
		what := "Helm release " + r.Namespace + "/" + r.Name + " secret value"
		vals := make([]secrets.Value, len(list))
		for i, v := range list {
			vals[i] = secrets.Value{Value: v, What: what}
		}
		reg.Add("Helm release "+r.Namespace+"/"+r.Name, vals...)
	}
}

// values returns the call's secret strings, longest first, and the set of
// their minPart-long pieces.
func (s *callSecrets) values() ([]string, map[string]bool) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.list != nil {
		return s.list, s.parts
	}
	set := map[string]bool{}
	var plain []string // decoded Secret values, what inputs may flow into
	add := func(v string) {
		if len(v) >= minSecret {
			set[v] = true
		}
	}
	var inputs []map[string]any
	inputs = append(inputs, s.inputs...)
	var charts []*chart.Chart // whose own text is no secret
	read := map[*chart.Chart]bool{}
	for _, r := range s.rels {
		manifests := []string{r.Manifest}
		for _, h := range r.Hooks {
			if h != nil {
				manifests = append(manifests, h.Manifest)
			}
		}
		for _, m := range manifests {
			// A manifest that names no Secret, even through an escape
			// ("Secr\x65t"), holds none: no need to parse it (helm.list
			// reads every release).
			if !strings.Contains(m, "Secret") && !strings.Contains(m, `\`) {
				continue
			}
			objs, _ := parseManifest(m)
			if !slices.ContainsFunc(objs, isSecret) {
				continue
			}
			if r.Chart != nil && !read[r.Chart] {
				read[r.Chart] = true
				charts = append(charts, r.Chart)
			}
			for _, v := range renderedSecrets(objs) {
				plain = append(plain, v)
				add(v)
				add(base64.StdEncoding.EncodeToString([]byte(v)))
			}
			for _, o := range objs {
				if isSecret(o) {
					data, _, _ := unstructured.NestedMap(o.Object, "data")
					for _, v := range data {
						if t, ok := v.(string); ok {
							add(t)
						}
					}
				}
			}
		}
		inputs = append(inputs, r.Config)
		if r.Chart != nil {
			inputs = append(inputs, r.Chart.Values)
		}
	}
	for _, in := range inputs {
		leaves(in, false, func(v string, secretKey bool) {
			if len(v) < minSecret || !secretKey && len(v) < minFlowing {
				return
			}
			flows := secretKey
			for _, p := range plain {
				if !flows && strings.Contains(p, v) {
					flows = true
				}
			}
			if flows {
				add(v)
				add(base64.StdEncoding.EncodeToString([]byte(v)))
			}
		})
	}
	for v := range set {
		// As JSON shows it (a diff line's value): & < > " \ escaped.
		if q, err := json.Marshal(v); err == nil && string(q[1:len(q)-1]) != v {
			set[string(q[1:len(q)-1])] = true
		}
	}
	s.list = make([]string, 0, len(set))
	for v := range set {
		s.list = append(s.list, v)
	}
	// Longest first, so a value that holds another is replaced whole.
	sort.Slice(s.list, func(i, j int) bool {
		if len(s.list[i]) != len(s.list[j]) {
			return len(s.list[i]) > len(s.list[j])
		}
		return s.list[i] < s.list[j]
	})
	s.parts = map[string]bool{}
	for _, v := range s.list {
		for i := 0; i+minPart <= len(v); i++ {
			s.parts[v[i:i+minPart]] = true
		}
	}
	for _, c := range charts {
		for _, f := range c.Templates {
			if f == nil {
				continue
			}
			for i := 0; i+minPart <= len(f.Data); i++ {
				if len(s.parts) == 0 {
					break
				}
				delete(s.parts, string(f.Data[i:i+minPart]))
			}
		}
	}
	return s.list, s.parts
}

// renderedSecrets returns the values the Secrets among objs hold, decoded.
func renderedSecrets(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if !isSecret(o) {
			continue
		}
		data, _, _ := unstructured.NestedMap(o.Object, "data")
		for _, v := range data {
			if t, ok := v.(string); ok {
				if d, err := base64.StdEncoding.DecodeString(t); err == nil {
					out = append(out, string(d))
				} else {
					out = append(out, t)
				}
			}
		}
		sdata, _, _ := unstructured.NestedMap(o.Object, "stringData")
		for _, v := range sdata {
			if t, ok := v.(string); ok {
				out = append(out, t)
			}
		}
	}
	return out
}

// leaves calls f with every scalar of v as text, and whether a
// secret-looking key holds it.
func leaves(v any, secretKey bool, f func(string, bool)) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			leaves(x, secretKey || catalog.SecretName.MatchString(k), f)
		}
	case []any:
		for _, x := range t {
			leaves(x, secretKey, f)
		}
	case string:
		f(t, secretKey)
	case float64:
		f(strconv.FormatFloat(t, 'f', -1, 64), secretKey)
	case int64:
		f(strconv.FormatInt(t, 10), secretKey)
	case int:
		f(strconv.Itoa(t), secretKey)
	case json.Number:
		f(t.String(), secretKey)
	}
}

// text hides in free text a Helm call composed (notes, descriptions,
// errors, diff lines) every part of minPart characters or more of the
// call's secret values: a template may cut, splice or re-encode a value,
// which the boundary (whole values in their known forms) would not see.
// Whole values are the boundary's: register puts them in the registry
// every result passes.
func (s *callSecrets) text(text string) string {
	_, parts := s.values()
	if len(parts) == 0 || len(text) < minPart {
		return text
	}
	hidden := make([]bool, len(text))
	any := false
	for i := 0; i+minPart <= len(text); i++ {
		if parts[text[i:i+minPart]] {
			for j := i; j < i+minPart; j++ {
				hidden[j] = true
			}
			any = true
		}
	}
	if !any {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if !hidden[i] {
			b.WriteByte(text[i])
			continue
		}
		b.WriteString(redacted)
		for i+1 < len(text) && hidden[i+1] {
			i++
		}
	}
	return b.String()
}

// change scrubs the diff lines of a change a preview describes (they name
// values, JSON-encoded and cut short: scrubbed as free text) and its
// fields' values (one holding a secret is not shown). Nothing else
// of the change is touched: the policy judges its kinds, names, actions
// and flags, which no value a script chooses may rewrite.
func (s *callSecrets) change(c *catalog.Change) *catalog.Change {
	if c == nil {
		return nil
	}
	if list, _ := s.values(); len(list) == 0 {
		return c
	}
	out := *c
	out.Diff = s.lines(c.Diff)
	if c.Fields != nil {
		// A value holding (part of) a secret is not shown at all: a table
		// cell is one value, not free text.
		out.Fields = make([]catalog.Field, len(c.Fields))
		for i, f := range c.Fields {
			out.Fields[i] = catalog.Field{Path: s.text(f.Path), Before: f.Before, After: f.After}
			if s.text(f.Before) != f.Before {
				out.Fields[i].Before = "(value not shown)"
			}
			if s.text(f.After) != f.After {
				out.Fields[i].After = "(value not shown)"
			}
		}
	}
	if c.Objects != nil {
		out.Objects = make([]catalog.Change, len(c.Objects))
		for i, o := range c.Objects {
			out.Objects[i] = *s.change(&o)
		}
	}
	return &out
}

func (s *callSecrets) lines(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, l := range in {
		out[i] = s.text(l)
	}
	return out
}

// err returns err with its message scrubbed as free text; its cause keeps
// its status for the bridge.
func (s *callSecrets) err(err error) error {
	if err == nil || s == nil {
		return err
	}
	msg := s.text(err.Error())
	if msg == err.Error() {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

// scrubbed is an error whose message lost secret values; its cause keeps
// its status for the bridge.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// recording is Helm's release storage that keeps every release it reads
// or writes among the call's secrets.
type recording struct {
	driver.Driver
	secrets *callSecrets
}

func (r recording) Get(key string) (*release.Release, error) {
	rel, err := r.Driver.Get(key)
	r.secrets.addRelease(rel)
	return rel, err
}

func (r recording) List(filter func(*release.Release) bool) ([]*release.Release, error) {
	rels, err := r.Driver.List(filter)
	r.secrets.addRelease(rels...)
	return rels, err
}

func (r recording) Query(labels map[string]string) ([]*release.Release, error) {
	rels, err := r.Driver.Query(labels)
	r.secrets.addRelease(rels...)
	return rels, err
}

func (r recording) Create(key string, rel *release.Release) error {
	r.secrets.addRelease(rel)
	return r.Driver.Create(key, rel)
}

func (r recording) Update(key string, rel *release.Release) error {
	r.secrets.addRelease(rel)
	return r.Driver.Update(key, rel)
}

func (r recording) Delete(key string) (*release.Release, error) {
	rel, err := r.Driver.Delete(key)
	r.secrets.addRelease(rel)
	return rel, err
}
