package broker

import (
	"regexp"
	"strings"

	"github.com/kubecode/kubecode/catalog"
)

// unserved returns what the providers do not serve (catalog.Unserved),
// leaving out any the catalog does serve after all (a cluster's own
// resource of that name).
func (b *Broker) unserved(st *state) []catalog.Unserved {
	var out []catalog.Unserved
	for _, u := range b.bridge.Unserved() {
		if st.index.Lookup(u.Name) == nil {
			out = append(out, u)
		}
	}
	return out
}

// unservedNotes are search's plain words on a query about something not
// served: "// Not served: tools.kubernetes.pods.exec: ...".
func (b *Broker) unservedNotes(st *state, query string) string {
	var sb strings.Builder
	for _, u := range b.unserved(st) {
		if u.Matches(query) {
			sb.WriteString("// Not served: tools." + u.Name + ": " + u.Why + ".\n")
		}
	}
	return sb.String()
}

// unservedAt is what path (a script's tools.* path, any case) names among
// the things not served, or nil.
func (b *Broker) unservedAt(st *state, path string) *catalog.Unserved {
	key := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(strings.TrimPrefix(s, "tools.")))
	}
	p := key(path)
	for _, u := range b.unserved(st) {
		if n := key(u.Name); p == n || strings.HasSuffix(n, "."+p) && strings.Contains(p, ".") {
			return &u
		}
	}
	return nil
}

// explainUnserved says why a path names nothing: for something not
// served, that it is not and what to do instead; else as the runtime
// says it (explain), "" when the path resolves.
func (b *Broker) explainUnserved(st *state, explain func(string) string) func(string) string {
	return func(path string) string {
		why := explain(path)
		if why == "" {
			return ""
		}
		if u := b.unservedAt(st, path); u != nil {
			return "tools." + u.Name + " is not an operation kubecode serves: " + u.Why
		}
		return why
	}
}

// notAnOperationRE finds the path a runtime error says names nothing.
var notAnOperationRE = regexp.MustCompile(`(tools\.[\w.$-]+) is not an operation(; did you mean [^?]*\?)?`)

// rewriteUnserved rewrites a runtime error about a path that names
// something not served, as the type check says it.
func (b *Broker) rewriteUnserved(st *state, msg string) string {
	m := notAnOperationRE.FindStringSubmatchIndex(msg)
	if m == nil {
		return msg
	}
	u := b.unservedAt(st, msg[m[2]:m[3]])
	if u == nil {
		return msg
	}
	return msg[:m[0]] + "tools." + u.Name + " is not an operation kubecode serves: " + u.Why + msg[m[1]:]
}
