package broker

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"weak"

	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/catalog/search"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Search returns what search_tools answers for query, and the operations
// it names, best first. Answers disclose progressively and are sized to
// the question, since every byte is a token the model pays for:
//
//   - a query that is an operation's name (or alias) answers with that
//     operation's complete declaration, result types in detail;
//   - a query that is a result type's name ("Pod") answers with the
//     declaration of the operation that gets one, in detail;
//   - a query that names a type within a result ("PodStatus") answers with
//     that type, every field shown;
//   - any other query answers with the signatures of the operations that
//     match it, and, of the result types the question names ("pod" names
//     Pod), an outline: its fields, the object-typed ones by the name of
//     their type, which the provider's API documents and a search by name
//     shows. A type whose provider does not name its parts (a CRD's) is
//     declared instead, compacted to the fields that matter.
func (b *Broker) Search(ctx context.Context, query string, limit int) (string, []*catalog.Operation, error) {
	return b.search(ctx, query, limit, nil)
}

// search is Search for a session that remembers what it was sent: an
// operation or type sent before is referred to, not repeated. sent may be
// nil.
func (b *Broker) search(ctx context.Context, query string, limit int, sent *sentDeclarations) (string, []*catalog.Operation, error) {
	st, err := b.state(ctx)
	if err != nil {
		return "", nil, err
	}
	q := strings.TrimSpace(query)
	exact := st.index.Lookup(q)
	if exact == nil {
		exact = st.types[strings.ToLower(q)]
	}
	if exact != nil {
		if sent.repeat("detail:" + exact.Name) {
			return fmt.Sprintf("// tools.%s was declared in full earlier in this session (search_tools %q).\n", exact.Name, q), []*catalog.Operation{exact}, nil
		}
		sent.mark("op:"+exact.Name, "type:"+exact.OutputName)
		return st.detail.Declarations([]*catalog.Operation{exact}), []*catalog.Operation{exact}, nil
	}
	if name, body := b.catalogType(st, q); name != "" {
		if sent.repeat("type-full:" + name) {
			return fmt.Sprintf("// %s was declared earlier in this session.\n", name), nil, nil
		}
		return "interface " + name + " " + body + "\n", nil, nil
	}
	if limit <= 0 {
		limit = b.opts.SearchLimit
	}
	hits, err := st.index.Search(q, limit)
	if err != nil {
		return "", nil, err
	}
	// A question about something not served says so first.
	notes := b.unservedNotes(st, q)
	if len(hits) == 0 {
		return notes, nil, nil
	}
	ops := make([]*catalog.Operation, len(hits))
	var main, others []*catalog.Operation
	listed := map[string]bool{} // resources whose list is shown
	for i, h := range hits {
		ops[i] = h.Op
		if h.Op.Verb == "list" && h.Score >= closeHit*hits[0].Score {
			listed[strings.TrimSuffix(h.Op.Name, ".list")] = true
		}
	}
	covered := map[string]bool{}  // the question's words the operations shown whole name
	lists := map[string]bool{}    // the resources whose list is shown whole
	subjects := map[string]bool{} // the resources and verbs of the operations shown whole
	named := slices.ContainsFunc(hits, func(h search.Hit) bool { return h.Subject })
	for _, h := range hits {
		if shownWhole(h, hits[0].Score, len(main) == 0, named, listed, covered, lists, subjects) {
			main = append(main, h.Op)
			// What is shown: the subject, the verb, and both.
			subjects[subjectOf(h.Op)] = true
			subjects[" "+h.Op.Verb] = true
			subjects[subjectOf(h.Op)+" "+h.Op.Verb] = true
			for _, t := range h.Terms {
				covered[t] = true
			}
			if h.Op.Verb == "list" {
				lists[subjectOf(h.Op)] = true
			}
		} else {
			others = append(others, h.Op)
		}
	}
	return notes + b.sizedAnswer(st, q, main, others, sent), ops, nil
}

// shownWhole says whether a hit is shown with its signature, or only
// named. Only a hit close enough to the best (closeHit) is shown: the
// first, then one that adds to what is shown —
//   - the list of a subject the question names whose list is not shown
//     yet ("why is my pod crashing": pods' logs, then their list);
//   - an answer as good as the best (tieHit) about something else
//     ("what uses the most memory": nodes' top, then pods');
//   - a verb the question asks for that no operation shown has ("run a
//     command in a container": pods' run, then their exec), or a word of
//     the question no operation shown
//     names ("secrets referenced by deployments": secrets, then
//     deployments — not deployments' rollout history), unless the
//     question names a subject that is not the hit's and the hit is not
//     strong (strongHit: "do not reveal any value" is no question about
//     Helm's values).
//
// The same verb on a subject shown (events.k8s.io's events beside the
// core group's), a get beside its resource's list (its input is { name,
// namespace? }) and a Scope (namespaces) of a question about something
// else ("pods in a namespace") are only named. named says whether the
// question names the subject of any hit.
func shownWhole(h search.Hit, best float64, first, named bool, listed, covered, lists, subjects map[string]bool) bool {
	switch {
	case h.Score < closeHit*best, h.Scoped:
		return false
	case h.Op.Verb == "get" && listed[strings.TrimSuffix(h.Op.Name, ".get")]:
		return false
	case first:
		return true
	case h.Op.Verb == "list" && h.Subject && !lists[subjectOf(h.Op)]:
		return true
	case subjects[subjectOf(h.Op)+" "+h.Op.Verb]:
		// The same verb on the same subject (events.k8s.io's events).
		return false
	case h.Score >= tieHit*best && !subjects[subjectOf(h.Op)]:
		// As good an answer about something else (pods' top beside
		// nodes' for "what uses the most memory").
		return true
	case !h.Subject && named && h.Score < strongHit*best:
		// A word of a question about something else, and not much of
		// it ("do not reveal any value": Helm's values).
		return false
	case h.Asked && !subjects[" "+h.Op.Verb]:
		// Another verb the question asks for ("run a command in a
		// container": pods' exec beside their run).
		return true
	}
	for _, t := range h.Terms {
		if !covered[t] {
			return true
		}
	}
	return false
}

// subjectOf is what op is about: its provider's resource, in any group
// (events and events.k8s.io's events are one subject), or its provider
// for operations on no resource (Helm's releases).
func subjectOf(op *catalog.Operation) string { return op.Provider + ":" + op.Resource }

// closeHit is how close to the best match's score a match must come to be
// shown with its signature; the others are named. A match that does not
// name the question's subject must come as close as strongHit.
const (
	closeHit  = 0.2
	strongHit = 0.5
	tieHit    = 0.8
)

// sizedAnswer is the answer to a question in plain words: ops as
// signatures, with the one-line description of those whose verb does not
// say it all, then the names of others, then their result types: an
// outline of those the question names among the types the provider
// documents (Pod), a compact declaration of those it does not (a CRD's,
// Helm's drift rows), since no model knows them.
func (b *Broker) sizedAnswer(st *state, q string, ops, others []*catalog.Operation, sent *sentDeclarations) string {
	words := catalog.Words(q)
	var out strings.Builder
	var earlier []string
	var outlines []*catalog.Operation
	named := map[string]bool{}
	declared := map[string]bool{} // lines of result types written
	for _, op := range ops {
		if op.OutputName != "" && !named[op.OutputName] {
			named[op.OutputName] = true
			outlines = append(outlines, op)
		}
		if sent.repeat("op:" + op.Name) {
			earlier = append(earlier, "tools."+op.Name)
			continue
		}
		if desc := oneLineDoc(op); desc != "" && op.Verb != "list" && op.Verb != "get" {
			out.WriteString("/** " + desc + " */\n")
		}
		out.WriteString(st.decl.Call(op) + ";\n")
	}
	if len(others) > 0 {
		names := make([]string, len(others))
		for i, op := range others {
			names[i] = "tools." + op.Name
		}
		out.WriteString("// Also: " + strings.Join(names, ", ") + "\n")
	}
	for _, op := range outlines {
		outline, known := b.outline(st, op)
		switch {
		case outline == "":
		case known && !(strings.EqualFold(op.OutputName, op.Kind) && namesSubject(words, op)):
			// A type the provider's API documents, which the question
			// does not name: its name in the signature is enough.
		case sent.repeat("type:" + op.OutputName):
			earlier = append(earlier, op.OutputName)
		case known:
			out.WriteString(outline + "\n")
		default: // the provider does not document it: declared, compacted
			for _, line := range strings.SplitAfter(st.decl.ResultTypes(op), "\n") {
				// Types two results share are declared once.
				if line != "" && !declared[line] {
					declared[line] = true
					out.WriteString(line)
				}
			}
		}
	}
	if len(earlier) > 0 {
		out.WriteString("// Declared earlier in this session: " + strings.Join(earlier, ", ") + "\n")
	}
	return out.String()
}

// oneLineDoc is op's description on one line, fit for a /** */ comment.
func oneLineDoc(op *catalog.Operation) string {
	s := strings.Join(strings.Fields(op.Description), " ")
	return strings.ReplaceAll(s, "*/", "* /")
}

// namesSubject says whether a question's words name op's subject: its
// resource, kind or a short name, singular or plural.
func namesSubject(words []string, op *catalog.Operation) bool {
	subject := map[string]bool{op.Resource: op.Resource != "", strings.ToLower(op.Kind): op.Kind != "", strings.ToLower(op.OutputName): op.OutputName != ""}
	for _, s := range op.ShortNames {
		subject[s] = true
	}
	for _, w := range words {
		if subject[w] || subject[w+"s"] || subject[w+"es"] || subject[strings.TrimSuffix(w, "s")] {
			return true
		}
	}
	return false
}

// outline is op's result type as catalog.Declarer.Outline writes it,
// made once per catalog version.
func (b *Broker) outline(st *state, op *catalog.Operation) (string, bool) {
	st.outlineMu.Lock()
	defer st.outlineMu.Unlock()
	if o, ok := st.outlines[op.Name]; ok {
		return o.text, o.known
	}
	text, known := st.detail.Outline(op)
	if st.outlines == nil {
		st.outlines = map[string]outline{}
	}
	st.outlines[op.Name] = outline{text, known}
	return text, known
}

type outline struct {
	text  string
	known bool
}

// catalogType finds the type within the catalog's results a query names
// ("PodStatus", "containerstatus"), with its complete declaration.
func (b *Broker) catalogType(st *state, q string) (name, body string) {
	if strings.ContainsAny(q, " \t.") {
		return "", ""
	}
	types := b.catalogTypes(st)
	if body := types[q]; body != "" {
		return q, body
	}
	st.outlineMu.Lock()
	defer st.outlineMu.Unlock()
	if st.typeNames == nil {
		st.typeNames = make(map[string]string, len(types))
		for n := range types {
			st.typeNames[strings.ToLower(n)] = n
		}
	}
	if n := st.typeNames[strings.ToLower(q)]; n != "" {
		return n, types[n]
	}
	return "", ""
}

// resultTypes maps each result type's name, lower-case, to the operation
// whose declaration shows it best: a get (one object) over a list, an
// operation on the core group's resource over another group's.
func resultTypes(ops []*catalog.Operation) map[string]*catalog.Operation {
	out := map[string]*catalog.Operation{}
	rank := func(op *catalog.Operation) int {
		r := 0
		if op.Verb != "get" {
			r += 2
		}
		if op.Group != "" {
			r++
		}
		return r
	}
	for _, op := range ops {
		if op.OutputName == "" {
			continue
		}
		k := strings.ToLower(op.OutputName)
		if prev := out[k]; prev == nil || rank(op) < rank(prev) {
			out[k] = op
		}
	}
	return out
}

// sentDeclarations remembers what one MCP session's search answers
// declared, so that a later answer refers to it instead of repeating it.
// A nil *sentDeclarations remembers nothing.
type sentDeclarations struct {
	mu   sync.Mutex
	sent map[string]bool
}

// repeat says whether key was sent before, and marks it sent.
func (s *sentDeclarations) repeat(key string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent[key] {
		return true
	}
	s.sent[key] = true
	return false
}

// mark marks keys sent.
func (s *sentDeclarations) mark(keys ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.sent[k] = true
	}
}

// sessionMemory returns what ss was sent; it is forgotten when the session
// is (a weak key: the broker never keeps a session alive).
func (b *Broker) sessionMemory(ss *mcp.ServerSession) *sentDeclarations {
	if ss == nil {
		return nil
	}
	key := weak.Make(ss)
	if m, ok := b.sessions.Load(key); ok {
		return m.(*sentDeclarations)
	}
	m, loaded := b.sessions.LoadOrStore(key, &sentDeclarations{sent: map[string]bool{}})
	if !loaded {
		goruntime.AddCleanup(ss, func(k weak.Pointer[mcp.ServerSession]) { b.sessions.Delete(k) }, key)
	}
	return m.(*sentDeclarations)
}

func (b *Broker) searchTool(ctx context.Context, req *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, any, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return textResult("query is empty: describe what you want to do, e.g. \"list pods that restarted\"", true), nil, nil
	}
	if in.Limit < 0 || in.Limit > 50 {
		return textResult("limit must be between 1 and 50", true), nil, nil
	}
	var sent *sentDeclarations
	if req != nil {
		sent = b.sessionMemory(req.Session)
	}
	decls, ops, err := b.search(ctx, q, in.Limit, sent)
	if err != nil {
		return textResult("search failed: "+err.Error(), true), nil, nil
	}
	if decls == "" && len(ops) == 0 {
		return textResult(fmt.Sprintf("No operation matches %q. Try other words (a resource such as \"pods\", a verb such as \"logs\"), or run tools.kubernetes.api_resources() in execute_code to see every resource.", q), false), nil, nil
	}
	return textResult(decls, false), nil, nil
}
