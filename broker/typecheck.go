package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubecode/kubecode/catalog"
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

// checker type-checks scripts with tsgo, the native TypeScript compiler,
// against the declarations of one catalog version, written once into a
// directory of their own.
type checker struct {
	bin string

	mu      sync.Mutex
	dirs    map[string]string // catalog version → directory holding tools.d.ts
	counter int
}

// diagnostic is one tsgo diagnostic in the agent's own source.
type diagnostic struct {
	Line, Column int
	Code         int
	Message      string
}

func (d diagnostic) String() string {
	return fmt.Sprintf("user.ts:%d:%d: type error: %s (TS%d)", d.Line, d.Column, d.Message, d.Code)
}

// check returns the diagnostics of code against decls (the catalog of
// version), or an error when tsgo could not run.
func (c *checker) check(ctx context.Context, version, decls, code string) ([]diagnostic, error) {
	dir, err := c.dir(version, decls)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.counter++
	name := "user-" + strconv.Itoa(c.counter) + ".ts"
	c.mu.Unlock()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(runtime.WrapPrefix+code+runtime.WrapSuffix+";\n"), 0o600); err != nil {
		return nil, err
	}
	defer os.Remove(path)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "--noEmit", "--pretty", "false", "--target", "es2022", "--lib", "es2023",
		"--types", "", "--skipLibCheck", "--strict", "false", "--noImplicitAny", "false", "tools.d.ts", name)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("type check: %w", ctx.Err())
	}
	diags := parseDiagnostics(out.String(), name)
	if err != nil && len(diags) == 0 {
		return nil, fmt.Errorf("type check: %v: %.500s", err, out.String())
	}
	return diags, nil
}

// dir returns the directory of a catalog version's declarations, writing
// them on first use; older versions' directories are removed.
func (c *checker) dir(version, decls string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.dirs[version]; ok {
		return d, nil
	}
	d, err := os.MkdirTemp("", "kubecode-typecheck-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(d, "tools.d.ts"), []byte(prelude+decls), 0o600); err != nil {
		return "", err
	}
	for v, old := range c.dirs {
		_ = os.RemoveAll(old)
		delete(c.dirs, v)
	}
	if c.dirs == nil {
		c.dirs = map[string]string{}
	}
	c.dirs[version] = d
	return d, nil
}

// close removes the declaration directories.
func (c *checker) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for v, d := range c.dirs {
		_ = os.RemoveAll(d)
		delete(c.dirs, v)
	}
}

// diagnosticRE matches the first line of a diagnostic:
// "user-1.ts(3,17): error TS2339: Property 'lst' does not exist ...".
var diagnosticRE = regexp.MustCompile(`^(\S+)\((\d+),(\d+)\): error TS(\d+): (.*)$`)

// parseDiagnostics keeps the diagnostics of file, positioned in the
// agent's source (the wrapper shifts the first line's columns).
func parseDiagnostics(out, file string) []diagnostic {
	var diags []diagnostic
	for _, line := range strings.Split(out, "\n") {
		m := diagnosticRE.FindStringSubmatch(strings.TrimRight(line, "\r"))
		if m == nil {
			if len(diags) > 0 && strings.HasPrefix(line, "  ") && strings.TrimSpace(line) != "" {
				last := &diags[len(diags)-1]
				last.Message += " " + strings.TrimSpace(line)
			}
			continue
		}
		if m[1] != file {
			continue
		}
		l, _ := strconv.Atoi(m[2])
		col, _ := strconv.Atoi(m[3])
		code, _ := strconv.Atoi(m[4])
		if l == 1 {
			col -= len(runtime.WrapPrefix)
		}
		diags = append(diags, diagnostic{Line: l, Column: max(col, 1), Code: code, Message: shortenTypes(m[5])})
	}
	return diags
}

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
// case, '_' and '-', and knows aliases the declarations leave out).
func blocking(mode TypecheckMode, diags []diagnostic, lines []string, resolves func(path string) bool) (block, rest []diagnostic) {
	for _, d := range diags {
		if mode == TypecheckStrict {
			block = append(block, d)
			continue
		}
		src := ""
		if d.Line-1 < len(lines) {
			src = lines[d.Line-1]
		}
		chains := toolsChainRE.FindAllStringSubmatch(src, -1)
		if !callCodes[d.Code] || len(chains) == 0 {
			rest = append(rest, d)
			continue
		}
		if d.Code == 2339 || d.Code == 2551 {
			unresolved := false
			for _, ch := range chains {
				path := strings.NewReplacer(" ", "", "\t", "", "?", "").Replace(ch[1])
				if !resolves(strings.TrimPrefix(path, ".")) {
					unresolved = true
				}
			}
			if !unresolved {
				rest = append(rest, d) // the runtime resolves it: an alias or another spelling
				continue
			}
		}
		block = append(block, d)
	}
	return block, rest
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
	resolves := func(path string) bool { _, ok := st.rt.Resolve(path); return ok }
	block, rest = blocking(b.opts.Typecheck, diags, strings.Split(code, "\n"), resolves)
	return block, rest, nil
}

// typeError is the execution error of a script the type check stopped.
func typeError(block []diagnostic) *runtime.Error {
	d := block[0]
	e := &runtime.Error{Kind: runtime.KindType, Message: d.Message, Line: d.Line, Column: d.Column,
		Hint: "nothing ran: fix the call (search_tools shows the declaration)"}
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
		st.checkDecls = catalog.NewDeclarer(&catalog.DeclarerOptions{TypeBudget: detailBudget, Detailed: true}).Declarations(st.ops)
	})
	return st.checkDecls
}
