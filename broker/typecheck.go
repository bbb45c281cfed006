package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/kubecode/kubecode/catalog"
	"github.com/kubecode/kubecode/internal/editdistance"
	"github.com/kubecode/kubecode/runtime"
)

// TypecheckMode says what a type check of a script before it runs does.
type TypecheckMode string

// The type-check modes.
const (
	// TypecheckOff runs scripts unchecked.
	TypecheckOff TypecheckMode = "off"
	// TypecheckCalls stops a script whose tools.* calls do not type-check
	// (an unknown operation, a missing or mistyped input field) before any
	// call runs; other diagnostics become hints if the script then fails.
	TypecheckCalls TypecheckMode = "calls"
	// TypecheckStrict stops a script on any diagnostic.
	TypecheckStrict TypecheckMode = "strict"
)

// ParseTypecheckMode checks a mode's name.
func ParseTypecheckMode(s string) (TypecheckMode, error) {
	switch m := TypecheckMode(s); m {
	case TypecheckOff, TypecheckCalls, TypecheckStrict:
		return m, nil
	}
	return "", fmt.Errorf("unknown --typecheck %q: use off, calls or strict", s)
}

// prelude declares the sandbox's globals besides tools.
const prelude = `declare function sleep(ms: number): Promise<void>;
declare function setTimeout(f: (...args: unknown[]) => void, ms?: number): number;
declare function clearTimeout(id?: number): void;
declare const console: { log(...a: unknown[]): void; info(...a: unknown[]): void; warn(...a: unknown[]): void; error(...a: unknown[]): void; debug(...a: unknown[]): void };
`

// longTypeRE matches a quoted type too long to help: the whole tools
// namespace, say.
var longTypeRE = regexp.MustCompile(`'[^']{80,}'`)

func shortenTypes(msg string) string {
	return longTypeRE.ReplaceAllStringFunc(msg, func(s string) string {
		return s[:60] + "…'"
	})
}

// callCodes are the diagnostics about calling an operation: a property
// that does not exist (with or without a suggestion), an argument or
// object literal of the wrong shape, a missing required field, a wrong
// number of arguments.
var callCodes = map[int]bool{2339: true, 2551: true, 2345: true, 2322: true, 2353: true, 2561: true, 2741: true, 2739: true, 2740: true, 2554: true, 2559: true, 2769: true}

// toolsChainRE finds "tools.a.b.c" in a line of source.
var toolsChainRE = regexp.MustCompile(`\btools((?:\s*\??\.\s*[A-Za-z_$][\w$]*)+)`)

// blocking splits diagnostics into those that stop the script and the
// rest. In calls mode a diagnostic blocks when it is about a call (by
// code) on a line that calls tools.*, and, for a name that does not
// exist, when the runtime would not resolve the name either (it forgives
// case, '_' and '-', and knows aliases the declarations leave out);
// explain says why a path does not resolve ("" when it does). It blocks
// too when it reads a field that a result type of the catalog does not
// have (catalogType says which names those are), wherever the line: a
// misspelt field would read undefined and answer wrong.
func blocking(mode TypecheckMode, diags []diagnostic, lines []string, explain func(path string) string, catalogType func(name string) bool) (block, rest []diagnostic) {
	spans := callSpans(lines)
	for _, d := range diags {
		if mode == TypecheckStrict {
			block = append(block, d)
			continue
		}
		if name, _ := missingFieldType(d); name != "" && catalogType(name) && !declaresType(lines, name) {
			if d.Code == 2339 || d.Code == 2551 {
				block = append(block, d)
				continue
			}
		}
		chains := chainsAt(lines, spans, d.Line)
		if !callCodes[d.Code] || len(chains) == 0 {
			rest = append(rest, d)
			continue
		}
		if d.Code == 2339 || d.Code == 2551 {
			why := ""
			for _, ch := range chains {
				path := strings.NewReplacer(" ", "", "\t", "", "\n", "", "?", "").Replace(ch)
				if w := explain(strings.TrimPrefix(path, ".")); w != "" && why == "" {
					why = w
				}
			}
			if why == "" {
				rest = append(rest, d) // the runtime resolves it: an alias or another spelling
				continue
			}
			// Said as the runtime says it, with its suggestions, rather
			// than as a property missing on the whole tools type.
			d.Message = why
		}
		block = append(block, d)
	}
	return block, rest
}

// missingFieldRE reads the type a property is missing on from a
// diagnostic: "Property 'x' does not exist on type 'PodStatus'".
var missingFieldRE = regexp.MustCompile(`^Property '[^']+' does not exist on type '([A-Za-z_$][\w$]*)(\[\])?'`)

// missingFieldType is the name of the type d says lacks a property, or
// "", and whether that type is an array of it (a list's result read as
// if it had .items).
func missingFieldType(d diagnostic) (name string, array bool) {
	if d.Code != 2339 && d.Code != 2551 {
		return "", false
	}
	if m := missingFieldRE.FindStringSubmatch(d.Message); m != nil {
		return m[1], m[2] != ""
	}
	return "", false
}

// declaresType says whether the script declares a type of that name
// itself (its own, not the catalog's).
func declaresType(lines []string, name string) bool {
	re := regexp.MustCompile(`\b(interface|type|class|enum)\s+` + regexp.QuoteMeta(name) + `\b`)
	for _, l := range lines {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// pendingCheck is a type check under way beside its script. When done is
// closed, refusal is the error the script ends with (its calls do not fit
// the catalog, or the check could not finish), or nil; rest are the
// diagnostics that do not stop it; err is set when the caller went away.
type pendingCheck struct {
	done    chan struct{}
	refusal *runtime.Error
	rest    []diagnostic
	err     error
}

// errStopped is what a call of a script the type check stopped gets (the
// script ends with the check's diagnostics instead).
var errStopped = &runtime.CallError{Name: "TypeError", Message: "the type check stopped the script before this call"}

// passed waits for the check and says whether the script's calls may run.
func (c *pendingCheck) passed(ctx context.Context) error {
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.refusal != nil || c.err != nil {
		return errStopped
	}
	return nil
}

// startCheck starts the type check of code, or returns nil when there is
// none to wait for: no checker, or in calls mode a script with no tools.*
// chain, of which no diagnostic could stop anything. The check's time is
// within the script's (timeout, when set) and checkTimeout.
func (b *Broker) startCheck(ctx context.Context, st *state, code string, timeout time.Duration) *pendingCheck {
	if b.checker == nil || (b.opts.Typecheck == TypecheckCalls && !toolsChainRE.MatchString(code)) {
		return nil
	}
	c := &pendingCheck{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		cctx := ctx
		if timeout > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		block, rest, err := b.typecheck(cctx, st, code)
		switch {
		case errors.Is(err, errCheckUnfinished) && ctx.Err() == nil:
			// Never unchecked: a check that cannot finish refuses the script.
			line := slowTypesLine(code)
			c.refusal = &runtime.Error{Kind: runtime.KindType, Line: line, Column: 1,
				Message: fmt.Sprintf("%v: simplify the types around line %d", err, line),
				Hint:    "nothing changed: simplify the script's types (deep or recursive type computations), or retry if the server is busy"}
		case err != nil && ctx.Err() != nil:
			c.err = ctx.Err()
		case err != nil:
			b.checkWarn.Do(func() {
				b.opts.Logger.Warn("scripts run without a type check", "error", err,
					"fix", "build tsgo: go run ./internal/controlplane/cmd/ensure-binaries (or kubecode demo), or pass --typecheck off")
			})
		case len(block) > 0:
			e := typeError(block)
			if h := callHint(st, b.catalogTypes(st), block[0], strings.Split(code, "\n")); h != "" {
				e.Hint = h + strings.TrimPrefix(e.Hint, "nothing changed: fix the call (search_tools shows the declaration)")
			}
			c.refusal = e
		default:
			c.rest = rest
		}
	}()
	return c
}

// failureHints are the diagnostics of a failed script whose check was
// skipped (none of them could have stopped it): they may say why it
// failed. None when the check cannot answer within checkTimeout.
func (b *Broker) failureHints(ctx context.Context, st *state, code string) []diagnostic {
	block, rest, err := b.typecheck(ctx, st, code)
	if err != nil {
		return nil
	}
	return append(block, rest...)
}

// slowTypesLine is the line (from 1) a check that did not finish most
// likely spent its time on: the first with type-level code (typesRE, as
// the checker's lanes see it).
func slowTypesLine(code string) int {
	for i, line := range strings.Split(code, "\n") {
		if typesRE.MatchString(line) {
			return i + 1
		}
	}
	return 1
}

// typecheck checks code against the full catalog of st.
func (b *Broker) typecheck(ctx context.Context, st *state, code string) (block, rest []diagnostic, err error) {
	if _, err := os.Stat(b.checker.bin); err != nil {
		return nil, nil, fmt.Errorf("no type checker at %s", b.checker.bin)
	}
	diags, err := b.checker.check(ctx, st.version, b.catalogDecls(st), code)
	if err != nil {
		return nil, nil, err
	}
	types := b.catalogTypes(st)
	block, rest = blocking(b.opts.Typecheck, diags, strings.Split(code, "\n"), b.explainUnserved(st, st.rt.Suggest),
		func(name string) bool { return types[name] != "" })
	return block, rest, nil
}

// suggestedRE finds the operations a runtime explanation suggests.
var suggestedRE = regexp.MustCompile(`tools\.([\w.]+)`)

// callHint says how to fix what the first blocking diagnostic is about:
// for a field a result type lacks, that type's declaration; for a call,
// the declaration of the operation its line calls (or, for a name that is
// no operation, of the ones suggested), every input field shown. Either
// way the fix needs no search.
func callHint(st *state, types map[string]string, d diagnostic, lines []string) string {
	if name, array := missingFieldType(d); types[name] != "" {
		if array {
			return "nothing changed: a list returns a plain array of " + name + " (no .items): loop over it, or index it"
		}
		return "nothing changed: " + typeHint(name, types[name])
	}
	if d.Line-1 >= len(lines) {
		return ""
	}
	var sigs []string
	seen := map[string]bool{}
	add := func(path string) {
		if op := st.index.Lookup(path); op != nil && !seen[op.Name] && len(sigs) < 2 {
			seen[op.Name] = true
			sigs = append(sigs, st.decl.Call(op))
		}
	}
	var chains []string
	for _, ch := range chainsAt(lines, callSpans(lines), d.Line) {
		chains = append(chains, strings.TrimPrefix(strings.NewReplacer(" ", "", "\t", "", "\n", "", "?", "").Replace(ch), "."))
		add(chains[len(chains)-1])
	}
	if len(sigs) == 0 {
		for _, m := range suggestedRE.FindAllStringSubmatch(d.Message, -1) {
			add(m[1])
			// A suggested resource ("kubernetes.pods" for podz) with the
			// rest of the chain: the operation the script meant.
			n := strings.Count(m[1], ".") + 1
			for _, ch := range chains {
				if segs := strings.Split(ch, "."); len(segs) > n {
					add(m[1] + "." + strings.Join(segs[n:], "."))
				}
			}
		}
	}
	if len(sigs) == 0 {
		// A guess wrong in more than one segment ("pod.lst"): the
		// operation nearest to the whole dotted path.
		for _, ch := range chains {
			if op := nearestOperation(st.ops, ch); op != nil {
				add(op.Name)
			}
		}
	}
	if len(sigs) == 0 {
		return ""
	}
	return "nothing changed: fix the call to fit " + strings.Join(sigs, " or ")
}

// nearestOperation finds the operation whose name is nearest to the
// dotted path, segment by segment ("kubernetes.pod.lst" →
// kubernetes.pods.list): the path may drop the provider ("pods.list")
// and a segment may be one or two edits away, or a prefix of the name's
// segment, but the whole may be off by at most a third of its letters.
// Nil when nothing is that near, or two operations are equally near.
func nearestOperation(ops []*catalog.Operation, path string) *catalog.Operation {
	segs := strings.Split(strings.ToLower(strings.TrimPrefix(path, "tools.")), ".")
	var best *catalog.Operation
	bestD, tie := -1, false
	for _, op := range ops {
		name := strings.Split(strings.ToLower(op.Name), ".")
		if len(name) == len(segs)+1 { // the provider left out
			name = name[1:]
		}
		if len(name) != len(segs) {
			continue
		}
		d, letters := 0, 0
		for i, s := range segs {
			sd := editdistance.Levenshtein(s, name[i])
			if sd > 2 && !strings.HasPrefix(name[i], s) {
				d = -1
				break
			}
			d += sd
			letters += len(name[i])
		}
		if d < 0 || d > max(2, letters/3) {
			continue
		}
		switch {
		case bestD < 0 || d < bestD:
			best, bestD, tie = op, d, false
		case d == bestD:
			tie = true
		}
	}
	if tie || bestD == 0 {
		return nil // ambiguous, or exact: the ordinary lookup answers exact names
	}
	return best
}

// maxTypeHint is how long a type's declaration in a hint may be before
// only its fields' names are shown.
const maxTypeHint = 480

// typeHint shows the catalog type name as "interface Name { ... }", or,
// when that is long, as "Name has the fields a, b?, ..." (? when
// optional).
func typeHint(name, body string) string {
	if len(body) <= maxTypeHint {
		return "interface " + name + " " + body
	}
	// Fields are "k: T" or "k?: T" separated by "; " at the top level.
	var fields []string
	depth, start := 0, 2
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{', '(', '<', '[':
			depth++
		case '}', ')', '>', ']':
			depth--
		case ';':
			if depth == 1 {
				fields = append(fields, fieldName(body[start:i]))
				start = i + 2
			}
		}
	}
	if start < len(body)-2 {
		fields = append(fields, fieldName(body[start:len(body)-2]))
	}
	return name + " has the fields " + strings.Join(fields, ", ")
}

// fieldName is "k" or "k?" of a field "k?: T".
func fieldName(f string) string {
	f = strings.TrimSpace(f)
	if i := strings.Index(f, ":"); i >= 0 {
		return f[:i]
	}
	return f
}

// typeError is the execution error of a script the type check stopped.
func typeError(block []diagnostic) *runtime.Error {
	d := block[0]
	e := &runtime.Error{Kind: runtime.KindType, Message: d.Message, Line: d.Line, Column: d.Column,
		Hint: "nothing changed: fix the call (search_tools shows the declaration)"}
	for _, more := range block[1:min(4, len(block))] {
		e.Hint += "; also " + more.String()
	}
	return e
}

// Close removes what the broker keeps on disk (the type checker's
// declarations).
func (b *Broker) Close() error {
	if b.checker != nil {
		b.checker.close()
	}
	return nil
}

// Typecheck returns the diagnostics of code against the current catalog,
// in the agent's positions, whatever the mode. It fails when no type
// checker is configured or it cannot run.
func (b *Broker) Typecheck(ctx context.Context, code string) ([]fmt.Stringer, error) {
	if b.checker == nil {
		return nil, fmt.Errorf("no type checker configured")
	}
	st, err := b.state(ctx)
	if err != nil {
		return nil, err
	}
	block, rest, err := b.typecheck(ctx, st, code)
	if err != nil {
		return nil, err
	}
	var out []fmt.Stringer
	for _, d := range append(block, rest...) {
		out = append(out, d)
	}
	return out, nil
}

// CatalogDeclarations returns the declarations scripts are checked
// against: the whole current catalog.
func (b *Broker) CatalogDeclarations(ctx context.Context) (string, error) {
	st, err := b.state(ctx)
	if err != nil {
		return "", err
	}
	return prelude + b.catalogDecls(st), nil
}

func (b *Broker) catalogDecls(st *state) string {
	st.checkOnce.Do(func() {
		st.checkDecls = catalog.NewDeclarer(&catalog.DeclarerOptions{Complete: true}).Declarations(st.ops)
		st.checkTypes = map[string]string{}
		for _, line := range strings.Split(st.checkDecls, "\n") {
			if rest, ok := strings.CutPrefix(line, "interface "); ok {
				if name, body, ok := strings.Cut(rest, " "); ok {
					st.checkTypes[name] = body
				}
			}
		}
	})
	return st.checkDecls
}

// catalogTypes are the interfaces of the declarations scripts are checked
// against, by name.
func (b *Broker) catalogTypes(st *state) map[string]string {
	b.catalogDecls(st)
	return st.checkTypes
}
