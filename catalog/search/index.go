package search

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/kubecode/kubecode/catalog"
)

var errDuplicate = errors.New("duplicate operation name")

// IndexOptions configures an Index. A nil *IndexOptions means defaults.
type IndexOptions struct {
	// Fuzziness is the edit distance allowed between a question's word and
	// an indexed word, for typos ("deploymnet"). Words shorter than five
	// letters are always matched exactly. Zero means 1; negative disables
	// fuzzy matching.
	Fuzziness int
}

// Index finds operations for a natural-language question. It is immutable
// after NewIndex and safe for concurrent use; rebuild it when the set of
// operations changes (a CRD appears).
type Index struct {
	idx          bleve.Index
	ops          map[string]*catalog.Operation // by name
	exact        map[string]*catalog.Operation // names and aliases, lower-case
	providers    []string                      // "<provider>." of every operation
	subjects     map[string]bool               // words naming the subjects of operations that are not Scope
	coreKinds    map[string]bool               // "provider/Kind" of the kinds a provider's core group serves
	named        map[string]map[string]bool    // by operation: the stemmed words of what names it (not its description)
	subject      map[string]map[string]bool    // by operation: its resource, kind and short names, stemmed, each one word
	subjectTerms map[string]bool               // every operation's subject words
	stem         func(string) []string         // a question's or a name's words, stemmed as the index does, without stop words
	vocab        map[string]bool               // every indexed word, unstemmed
	fuzziness    int
}

// Hit is one search result.
type Hit struct {
	Op    *catalog.Operation
	Score float64
	// Terms are the question's words (stemmed) that name the operation:
	// its name, resource, short names, verb, keywords or intent words —
	// not its description. A hit whose terms a better one already has
	// adds nothing to an answer but its name.
	Terms []string
	// Subject says whether the question names the operation's own
	// subject: its resource, kind or a short name ("pods" and "pod" name
	// the pods' operations; "endpoints" does not name endpointslices').
	Subject bool
	// Asked says whether the question asks for the operation's verb, by
	// name or by one of its verb words ("run a command": pods' exec).
	Asked bool
	// Scoped marks a Scope operation (namespaces) of a question that names
	// another subject: "pods in a namespace" asks about pods.
	Scoped bool
}

// Field boosts: the subject a question names matters most, then the
// action, then the words people use for the subject's problems, then the
// prose.
const (
	boostExact     = 100 // the question is an operation's name
	boostResource  = 6
	boostShort     = 5
	boostVerb      = 3
	boostKeywords  = 2
	boostName      = 2
	boostDesc      = 1
	boostGroup     = 0.5
	boostIntent    = 5 // the adapters' intent words
	boostFuzzy     = 0.4
	boostJoined    = 15 // adjacent words run together: "service accounts"
	defaultLimit   = 8
	candidates     = 40  // hits fetched from Bleve before reranking
	repeatDecay    = 0.6 // score factor per better hit of the same resource
	scopeDecay     = 0.3 // score factor of a Scope operation when the question names another subject
	otherGroup     = 0.7 // score factor of a kind also served by the core group (events.k8s.io's Event)
	minFuzzyLetter = 5
)

// Analyzers: "en" (stop words and stemming) for prose; "kc" stems but
// keeps every word, because keywords such as "why" and "all" are English
// stop words; "kc_exact" matches short names and intent words unstemmed.
const (
	analyzerWords = "kc"
	analyzerExact = "kc_exact"
	analyzerTerms = "kc_terms" // what names a hit: "kc" without stop words ("a", "in", "which")
)

// doc is what Bleve indexes for one operation.
type doc struct {
	Name        string `json:"name"`
	Resource    string `json:"resource"`
	Short       string `json:"short"`
	Group       string `json:"group"`
	Verb        string `json:"verb"`
	Description string `json:"description"`
	Keywords    string `json:"keywords"`
	Intents     string `json:"intents"`
}

// NewIndex indexes ops in memory. Operation names must be unique.
func NewIndex(ops []*catalog.Operation, opts *IndexOptions) (*Index, error) {
	x := &Index{
		ops:          make(map[string]*catalog.Operation, len(ops)),
		exact:        make(map[string]*catalog.Operation, 4*len(ops)),
		subjects:     map[string]bool{},
		named:        make(map[string]map[string]bool, len(ops)),
		subject:      make(map[string]map[string]bool, len(ops)),
		subjectTerms: map[string]bool{},
		vocab:        map[string]bool{},
		fuzziness:    1,
	}
	if opts != nil && opts.Fuzziness != 0 {
		x.fuzziness = max(opts.Fuzziness, 0)
	}
	m, err := indexMapping()
	if err != nil {
		return nil, fmt.Errorf("catalog: index mapping: %w", err)
	}
	x.idx, err = bleve.NewMemOnly(m)
	if err != nil {
		return nil, fmt.Errorf("catalog: new index: %w", err)
	}
	words := x.idx.Mapping().AnalyzerNamed(analyzerTerms)
	if words == nil {
		return nil, fmt.Errorf("catalog: index mapping: no analyzer %s", analyzerTerms)
	}
	x.stem = func(s string) []string {
		var out []string
		for _, t := range words.Analyze([]byte(s)) {
			out = append(out, string(t.Term))
		}
		return out
	}
	core := map[string]bool{} // kinds the core group serves
	for _, op := range ops {
		if op.Group == "" && op.Kind != "" {
			core[op.Provider+"/"+op.Kind] = true
		}
	}
	x.coreKinds = core
	b := x.idx.NewBatch()
	for _, op := range ops {
		if x.ops[op.Name] != nil {
			return nil, fmt.Errorf("catalog: %w: %s", errDuplicate, op.Name)
		}
		x.ops[op.Name] = op
		if p := op.Provider + "."; op.Provider != "" && !slices.Contains(x.providers, p) {
			x.providers = append(x.providers, p)
		}
		if op.Hints == nil || !op.Hints.Scope {
			for _, w := range append([]string{op.Resource, op.Kind}, op.ShortNames...) {
				if w != "" {
					x.subjects[strings.ToLower(w)] = true
				}
			}
		}
		for _, n := range append([]string{op.Name}, op.Aliases...) {
			n = strings.ToLower(n)
			if x.exact[n] == nil {
				x.exact[n] = op
			}
		}
		d := newDoc(op)
		named := map[string]bool{}
		for _, f := range []string{d.Name, d.Resource, d.Short, d.Verb, d.Keywords, d.Intents, strings.ReplaceAll(d.Verb, ".", " ")} {
			for _, t := range x.stem(f) {
				named[t] = true
			}
		}
		if op.Hints != nil {
			for _, t := range x.stem(strings.Join(op.Hints.VerbWords, " ")) {
				named[t] = true
			}
		}
		x.named[op.Name] = named
		subject := map[string]bool{}
		for _, w := range append([]string{op.Resource, op.Kind}, op.ShortNames...) {
			if w = strings.ToLower(w); w != "" {
				subject[w] = true
				for _, t := range x.stem(w) {
					subject[t] = true
				}
			}
		}
		x.subject[op.Name] = subject
		for t := range subject {
			x.subjectTerms[t] = true
		}
		for _, f := range []string{d.Name, d.Resource, d.Short, d.Group, d.Verb, d.Description, d.Keywords, d.Intents} {
			for _, w := range catalog.Words(f) {
				x.vocab[w] = true
			}
		}
		if err := b.Index(op.Name, d); err != nil {
			return nil, fmt.Errorf("catalog: index %s: %w", op.Name, err)
		}
	}
	if err := x.idx.Batch(b); err != nil {
		return nil, fmt.Errorf("catalog: index: %w", err)
	}
	return x, nil
}

func indexMapping() (*mapping.IndexMappingImpl, error) {
	m := bleve.NewIndexMapping()
	if err := m.AddCustomAnalyzer(analyzerWords, map[string]any{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": []any{lowercase.Name, porter.Name},
	}); err != nil {
		return nil, err
	}
	if err := m.AddCustomAnalyzer(analyzerTerms, map[string]any{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": []any{lowercase.Name, en.StopName, porter.Name},
	}); err != nil {
		return nil, err
	}
	if err := m.AddCustomAnalyzer(analyzerExact, map[string]any{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": []any{lowercase.Name},
	}); err != nil {
		return nil, err
	}
	field := func(analyzer string) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = analyzer
		f.Store = false
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	d := bleve.NewDocumentStaticMapping()
	d.AddFieldMappingsAt("name", field(analyzerWords))
	d.AddFieldMappingsAt("resource", field(analyzerWords))
	d.AddFieldMappingsAt("short", field(analyzerExact))
	d.AddFieldMappingsAt("group", field(analyzerWords))
	d.AddFieldMappingsAt("verb", field(analyzerWords))
	d.AddFieldMappingsAt("description", field(en.AnalyzerName))
	d.AddFieldMappingsAt("keywords", field(analyzerWords))
	d.AddFieldMappingsAt("intents", field(analyzerExact))
	m.DefaultMapping = d
	m.DefaultAnalyzer = analyzerWords
	m.StoreDynamic = false
	m.IndexDynamic = false
	m.DocValuesDynamic = false
	return m, nil
}

func newDoc(op *catalog.Operation) *doc {
	res := []string{op.Resource}
	res = append(res, catalog.Words(op.Kind)...)
	if op.Resource == "" {
		// Operations not about one resource are found by the words of
		// their name.
		res = append(res, catalog.Words(strings.TrimPrefix(op.Name, op.Provider+"."))...)
	}
	short := []string{strings.ToLower(op.Resource), strings.ToLower(op.Kind)}
	short = append(short, op.ShortNames...)
	for _, a := range op.Aliases {
		if s := strings.Split(a, "."); len(s) == 3 {
			short = append(short, s[1])
		}
	}
	var intents []string
	if op.Hints != nil {
		intents = op.Hints.Intents
	}
	return &doc{
		Name:        strings.Join(catalog.Words(op.Name), " "),
		Resource:    strings.Join(res, " "),
		Short:       strings.Join(short, " "),
		Group:       strings.Join(catalog.Words(op.Group), " "),
		Verb:        op.Verb,
		Description: op.Description,
		Keywords:    strings.Join(op.Keywords, " "),
		Intents:     strings.Join(intents, " "),
	}
}

// Search returns the operations that best answer query, best first; limit
// ≤ 0 means 8. A query that is an operation's name or alias, with or without
// its provider's prefix, ranks that operation first.
func (x *Index) Search(q string, limit int) ([]Hit, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	q = strings.TrimSpace(q)
	var hits []Hit
	pinned := x.lookup(q)
	if pinned != nil {
		hits = append(hits, Hit{Op: pinned, Score: boostExact})
	}
	ws := catalog.Words(q)
	if len(ws) == 0 {
		return hits, nil
	}
	// Fetch more than asked, then rerank: by verb, and so that one
	// resource's many operations do not crowd out the others.
	req := bleve.NewSearchRequestOptions(x.query(ws), max(4*limit, candidates), 0, false)
	res, err := x.idx.Search(req)
	if err != nil {
		return nil, fmt.Errorf("catalog: search %q: %w", q, err)
	}
	asked := make(map[string]bool, len(ws))
	for _, w := range ws {
		asked[w] = true
	}
	terms := x.terms(ws)
	found := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		op := x.ops[h.ID]
		if op == pinned {
			continue
		}
		hit := Hit{Op: op, Score: h.Score * verbWeight(op, asked), Asked: asksVerb(op, asked)}
		for _, t := range terms {
			if x.named[op.Name][t] && !slices.Contains(hit.Terms, t) {
				hit.Terms = append(hit.Terms, t)
			}
			hit.Subject = hit.Subject || x.subject[op.Name][t]
		}
		if op.Group != "" && x.coreKinds[op.Provider+"/"+op.Kind] {
			// One kind in two groups: the core group's is the one people
			// mean (Event), the other is named after it.
			hit.Score *= otherGroup
		}
		found = append(found, hit)
	}
	if x.namesSubject(ws) {
		for i := range found {
			if h := found[i].Op.Hints; h != nil && h.Scope {
				found[i].Score *= scopeDecay
				// "create a namespace for my pods" asks for its verb: not
				// a Scope of the question then.
				found[i].Scoped = !found[i].Asked
			}
		}
	}
	byScore(found)
	seen := map[string]int{}
	for i := range found {
		key := resourceKey(found[i].Op)
		found[i].Score *= math.Pow(repeatDecay, float64(seen[key]))
		seen[key]++
	}
	byScore(found)
	hits = append(hits, found...)
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// terms are a question's words, stemmed, for telling which operations a
// hit is named by: words run together that name a subject ("service
// accounts") stand for their parts, which then name nothing else
// (services).
func (x *Index) terms(ws []string) []string {
	stems := make([]string, len(ws))
	for i, w := range ws {
		stems[i] = strings.Join(x.stem(w), "")
	}
	used := make([]bool, len(ws))
	var out []string
	for n := 3; n >= 2; n-- {
		for i := 0; i+n <= len(ws); i++ {
			if slices.Contains(used[i:i+n], true) {
				continue
			}
			j := strings.Join(x.stem(strings.Join(ws[i:i+n], "")), "")
			if x.subjectTerms[j] {
				out = append(out, j)
				for k := i; k < i+n; k++ {
					used[k] = true
				}
			}
		}
	}
	for i, t := range stems {
		if !used[i] && t != "" {
			out = append(out, t)
		}
	}
	return out
}

// namesSubject reports whether a question's words name the subject of an
// operation that is not a Scope (a plural, a kind, a short name).
func (x *Index) namesSubject(ws []string) bool {
	for _, w := range ws {
		if x.subjects[w] || x.subjects[w+"s"] || x.subjects[strings.TrimSuffix(w, "s")] {
			return true
		}
	}
	return false
}

// Lookup returns the operation a query names exactly, by name or alias,
// with or without "tools." and its provider's prefix, or nil.
func (x *Index) Lookup(q string) *catalog.Operation {
	return x.lookup(strings.TrimSpace(q))
}

// byScore sorts hits best first, ties by name.
func byScore(hits []Hit) {
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Op.Name < hits[j].Op.Name
	})
}

// resourceKey groups the operations of one resource: the name without its
// verb.
func resourceKey(op *catalog.Operation) string {
	if i := strings.LastIndexByte(op.Name, '.'); i > 0 {
		return op.Name[:i]
	}
	return op.Name
}

// lookup finds the operation a query names exactly, by name or alias, with
// or without "tools." and its provider's prefix.
func (x *Index) lookup(q string) *catalog.Operation {
	q = strings.ToLower(q)
	if q == "" || strings.ContainsAny(q, " \t\n") {
		return nil
	}
	q = strings.TrimPrefix(q, "tools.")
	if op := x.exact[q]; op != nil {
		return op
	}
	for _, p := range x.providers {
		if op := x.exact[p+q]; op != nil {
			return op
		}
	}
	return nil
}

// query builds a disjunction over the fields, each with its boost, plus
// words run together and typo-tolerant matches.
func (x *Index) query(ws []string) query.Query {
	text := strings.Join(ws, " ")
	match := func(field, text string, boost float64) query.Query {
		m := bleve.NewMatchQuery(text)
		m.SetField(field)
		m.SetBoost(boost)
		return m
	}
	fields := bleve.NewDisjunctionQuery(
		match("resource", text, boostResource),
		match("short", text, boostShort),
		match("verb", text, boostVerb),
		match("keywords", text, boostKeywords),
		match("name", text, boostName),
		match("description", text, boostDesc),
		match("group", text, boostGroup),
		match("intents", text, boostIntent),
	)
	qs := []query.Query{fields}
	if len(ws) > 1 {
		qs = append(qs, match("short", strings.Join(joined(ws), " "), boostJoined))
	}
	if x.fuzziness > 0 {
		// Fuzzy matching, for words the index does not know, against
		// unstemmed names and keywords: stemmed forms are too short for an
		// edit distance to mean much.
		var fuzzy []query.Query
		for _, w := range ws {
			if len(w) < minFuzzyLetter || x.vocab[w] {
				continue
			}
			for _, f := range []string{"short", "keywords"} {
				fq := bleve.NewFuzzyQuery(w)
				fq.SetField(f)
				fq.SetFuzziness(min(x.fuzziness+len(w)/8, 2))
				fq.SetBoost(boostFuzzy)
				fuzzy = append(fuzzy, fq)
			}
		}
		if len(fuzzy) > 0 {
			qs = append(qs, bleve.NewDisjunctionQuery(fuzzy...))
		}
	}
	return bleve.NewDisjunctionQuery(qs...)
}
