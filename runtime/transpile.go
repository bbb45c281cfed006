package runtime

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
	"github.com/evanw/esbuild/pkg/api"
	"github.com/go-sourcemap/sourcemap"
)

// The agent's code runs as WrapPrefix + code + WrapSuffix: an async arrow
// function, so top-level await and return work. The prefix sits on the
// user's first line, so only columns on line 1 shift, and positions are
// corrected for it. A type checker wraps scripts the same way.
const (
	WrapPrefix = "(async () => {"
	WrapSuffix = "\n})()"
)

const (
	sourceName = "user.ts"
	jsName     = "user.js"
)

// program is a transpiled, compiled script. It is immutable and shared by
// executions of the same code.
type program struct {
	prg       *goja.Program
	sm        *sourcemap.Consumer
	userLines int
	lastLine  string // the agent's last line, for errors at the end of the script
}

var transformOptions = api.TransformOptions{
	Loader:    api.LoaderTS,
	Target:    api.ESNext,
	Supported: map[string]bool{"async-generator": false, "for-await": false},
	Sourcemap: api.SourceMapExternal,
	// The map only needs mappings; the source itself is not shipped in it.
	SourcesContent: api.SourcesContentExclude,
	Sourcefile:     sourceName,
	LogLimit:       5,
}

// transpile turns the agent's TypeScript into a compiled program.
func transpile(code string) (*program, *Error) {
	p := &program{userLines: strings.Count(code, "\n") + 1, lastLine: code[strings.LastIndexByte(code, '\n')+1:]}
	res := api.Transform(WrapPrefix+code+WrapSuffix, transformOptions)
	if len(res.Errors) > 0 {
		return nil, p.syntaxError(res.Errors)
	}
	sm, err := sourcemap.Parse(jsName+".map", res.Map)
	if err != nil {
		return nil, &Error{Kind: KindSyntax, Message: "internal: bad source map: " + err.Error()}
	}
	p.sm = sm
	js := string(res.Code)

	ast1, err := parser.ParseFile(nil, jsName, js, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, p.parseError(err)
	}
	body := wrapperBody(ast1)
	if body == nil {
		return nil, &Error{Kind: KindSyntax, Message: "internal: transpiled code lost its wrapper"}
	}
	if !hasReturn(body) && len(body) > 0 {
		// Completion value: the last expression statement becomes a return,
		// in the AST, so no text (and no position) moves.
		if es, ok := body[len(body)-1].(*ast.ExpressionStatement); ok {
			body[len(body)-1] = &ast.ReturnStatement{Return: es.Idx0(), Argument: es.Expression}
		}
	}
	prg, err := goja.CompileAST(ast1, false)
	if err != nil {
		return nil, p.parseError(err)
	}
	p.prg = prg
	return p, nil
}

// wrapperBody finds the statements of the async wrapper in the transpiled
// program: the last top-level expression statement calling an arrow function
// (esbuild may put helpers before it).
func wrapperBody(prog *ast.Program) []ast.Statement {
	for i := len(prog.Body) - 1; i >= 0; i-- {
		es, ok := prog.Body[i].(*ast.ExpressionStatement)
		if !ok {
			continue
		}
		call, ok := es.Expression.(*ast.CallExpression)
		if !ok {
			continue
		}
		if arrow, ok := call.Callee.(*ast.ArrowFunctionLiteral); ok {
			if b, ok := arrow.Body.(*ast.BlockStatement); ok {
				return b.List
			}
		}
	}
	return nil
}

// hasReturn reports whether any statement, outside nested functions, returns.
func hasReturn(list []ast.Statement) bool {
	for _, s := range list {
		if stmtReturns(s) {
			return true
		}
	}
	return false
}

func stmtReturns(s ast.Statement) bool {
	switch s := s.(type) {
	case *ast.ReturnStatement:
		return true
	case *ast.BlockStatement:
		return hasReturn(s.List)
	case *ast.IfStatement:
		return stmtReturns(s.Consequent) || (s.Alternate != nil && stmtReturns(s.Alternate))
	case *ast.ForStatement:
		return stmtReturns(s.Body)
	case *ast.ForInStatement:
		return stmtReturns(s.Body)
	case *ast.ForOfStatement:
		return stmtReturns(s.Body)
	case *ast.WhileStatement:
		return stmtReturns(s.Body)
	case *ast.DoWhileStatement:
		return stmtReturns(s.Body)
	case *ast.LabelledStatement:
		return stmtReturns(s.Statement)
	case *ast.WithStatement:
		return stmtReturns(s.Body)
	case *ast.TryStatement:
		if s.Body != nil && stmtReturns(s.Body) {
			return true
		}
		if s.Catch != nil && s.Catch.Body != nil && stmtReturns(s.Catch.Body) {
			return true
		}
		return s.Finally != nil && stmtReturns(s.Finally)
	case *ast.SwitchStatement:
		for _, c := range s.Body {
			if hasReturn(c.Consequent) {
				return true
			}
		}
	}
	return false
}

// userPos converts a position in the wrapped TypeScript (line 1-based,
// column 0-based) to a 1-based position in the agent's code.
func (p *program) userPos(line, col0 int) (int, int) {
	if line == 1 {
		col0 -= len(WrapPrefix)
		if col0 < 0 {
			col0 = 0
		}
	}
	if line > p.userLines { // the closing wrapper line: point past the end
		line = p.userLines
	}
	return line, col0 + 1
}

// mapGenerated maps a generated JavaScript position (1-based line and
// column) to a 1-based position in user.ts. ok is false for positions outside
// the agent's code (helpers esbuild injected).
func (p *program) mapGenerated(line, col int) (int, int, bool) {
	src, _, sl, sc, ok := p.sm.Source(line, col-1)
	if !ok || src != sourceName {
		return 0, 0, false
	}
	if (sl == 1 && sc < len(WrapPrefix)) || sl > p.userLines {
		return 0, 0, false // the wrapper, not the agent's code
	}
	l, c := p.userPos(sl, sc)
	return l, c, true
}

func (p *program) syntaxError(msgs []api.Message) *Error {
	m := msgs[0]
	e := &Error{Kind: KindSyntax, Name: "SyntaxError", Message: m.Text}
	if loc := m.Location; loc != nil {
		col := loc.Column // bytes: count characters instead
		if col <= len(loc.LineText) {
			col = utf8.RuneCountInString(loc.LineText[:col])
		}
		e.Line, e.Column = p.userPos(loc.Line, col)
		if loc.Line > p.userLines { // the wrapper's closing line: the script ended early
			e.Column = utf8.RuneCountInString(p.lastLine) + 1
			e.Message = "unexpected end of script: " + e.Message
		}
	}
	for _, n := range m.Notes {
		if n.Text != "" {
			e.Message += "; " + n.Text
		}
	}
	if len(msgs) > 1 {
		e.Message += fmt.Sprintf(" (and %d more errors)", len(msgs)-1)
	}
	if strings.Contains(m.Text, "import") || (m.Location != nil && strings.Contains(m.Location.LineText, "import ")) {
		e.Hint = "modules cannot be imported in the sandbox; call operations through the global tools object"
	}
	return e
}

// parseError reports a goja parse or compile failure of esbuild's output,
// which means esbuild accepted syntax goja lacks.
func (p *program) parseError(err error) *Error {
	e := &Error{Kind: KindSyntax, Name: "SyntaxError", Message: err.Error()}
	var pe *parser.Error
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		pe = list[0]
	} else if !errors.As(err, &pe) {
		pe = nil
	}
	if strings.Contains(err.Error(), "reserved word") {
		e.Hint = "modules cannot be imported in the sandbox; call operations through the global tools object"
	}
	if pe != nil {
		e.Message = pe.Message
		if l, c, ok := p.mapGenerated(pe.Position.Line, pe.Position.Column); ok {
			e.Line, e.Column = l, c
		}
	}
	return e
}
