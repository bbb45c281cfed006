package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testOp is an operation with its implementation, standing in for a real
// one: the runtime needs nothing but plain JSON functions.
type testOp struct {
	Name    string
	Aliases []string
	Call    func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)
}

// testRuntime is a Runtime whose executions call the testOps it was built
// over, unless ExecOptions name another Host.
type testRuntime struct {
	*Runtime
	host HostFunc
}

func newRuntimeOver(ops []testOp, opts *Options) (*testRuntime, error) {
	calls := map[string]func(context.Context, json.RawMessage) (json.RawMessage, error){}
	var rops []Operation
	for _, op := range ops {
		calls[op.Name] = op.Call
		rops = append(rops, Operation{Name: op.Name, Aliases: op.Aliases})
	}
	r, err := New(rops, opts)
	if err != nil {
		return nil, err
	}
	host := func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		return calls[name](ctx, args)
	}
	return &testRuntime{Runtime: r, host: host}, nil
}

func (r *testRuntime) Execute(ctx context.Context, code string, opts *ExecOptions) *Result {
	o := ExecOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Host == nil {
		o.Host = r.host
	}
	return r.Runtime.Execute(ctx, code, &o)
}

func testOps() []testOp {
	return []testOp{
		{Name: "echo", Call: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }},
		{Name: "kubernetes.pods.list", Aliases: []string{"kubernetes.po.list", "kubernetes.pod.list"},
			Call: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`[{"name":"a","restarts":0},{"name":"b","restarts":3},{"name":"c","restarts":7}]`), nil
			}},
		{Name: "kubernetes.pods.get", Call: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }},
		{Name: "kubernetes.api_resources", Call: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`["pods"]`), nil
		}},
		{Name: "slow.op", Call: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			select {
			case <-time.After(100 * time.Millisecond):
				return args, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}},
		{Name: "fail.forbidden", Call: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &CallError{Name: "ForbiddenError", Message: `pods is forbidden: User "viewer" cannot list resource "secrets"`, Code: json.RawMessage("403"), Reason: "Forbidden"}
		}},
		{Name: "fail.panic", Call: func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("boom") }},
		{Name: "fail.badjson", Call: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage("{nope"), nil }},
	}
}

func newTestRuntime(t testing.TB, opts *Options) *testRuntime {
	t.Helper()
	r, err := newRuntimeOver(testOps(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// errWant is what a failing case must report; empty fields are not checked.
type errWant struct {
	kind         ErrorKind
	line, column int
	contains     string
	tool         string
	code         string
}

func checkErr(t *testing.T, got *Error, want *errWant) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Fatalf("unexpected error: %v (stack %v)", got, got.Stack)
		}
		return
	}
	if got == nil {
		t.Fatalf("want %s error, got success", want.kind)
	}
	if got.Kind != want.kind {
		t.Errorf("kind = %s, want %s (%v)", got.Kind, want.kind, got)
	}
	if want.line != 0 && (got.Line != want.line || (want.column != 0 && got.Column != want.column)) {
		t.Errorf("position = %d:%d, want %d:%d (%v)", got.Line, got.Column, want.line, want.column, got)
	}
	if want.contains != "" && !strings.Contains(got.Message+" "+got.Hint, want.contains) {
		t.Errorf("message %q does not contain %q", got.Message, want.contains)
	}
	if want.tool != "" && got.Tool != want.tool {
		t.Errorf("tool = %q, want %q", got.Tool, want.tool)
	}
	if want.code != "" && string(got.Code) != want.code {
		t.Errorf("code = %s, want %s", got.Code, want.code)
	}
}

func checkValue(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	if want == "" {
		if got != nil {
			t.Fatalf("want no result, got %s", got)
		}
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("result %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("result mismatch (-want +got):\n%s", d)
	}
}

func TestExecute(t *testing.T) {
	tests := []struct {
		name    string
		code    string
		want    string // JSON; "" means no result
		err     *errWant
		console string
	}{
		// Results.
		{name: "last expression", code: "const a = 1\na + 41", want: "42"},
		{name: "explicit return", code: "const x = [1, 2, 3]\nreturn x.map(n => n * 2)", want: "[2,4,6]"},
		{name: "return inside if", code: "if (true) { return 'yes' }\n'no'", want: `"yes"`},
		{name: "undefined result", code: "const a = 1", want: ""},
		{name: "last expression object", code: "({a: 1, b: [true, null]})", want: `{"a":1,"b":[true,null]}`},
		{name: "return in nested function only", code: "function f() { return 1 }\nf() + 1", want: "2"},

		// TypeScript features LLMs write.
		{name: "interfaces and generics", code: `interface Pod { name: string; restarts: number }
function top<T extends { restarts: number }>(xs: T[], n: number): T[] {
  return [...xs].sort((a, b) => b.restarts - a.restarts).slice(0, n)
}
const pods: Pod[] = await tools.kubernetes.pods.list({})
return top<Pod>(pods, 2).map(p => p.name)`, want: `["c","b"]`},
		{name: "enums", code: "enum Phase { Running = 'Running', Failed = 'Failed' }\nenum N { A, B }\nreturn [Phase.Failed, N.B, N[1]]", want: `["Failed",1,"B"]`},
		{name: "optional chaining and nullish", code: "const o: any = {a: {b: null}}\nreturn [o.a?.b?.c, o.x?.y ?? 'dflt', o.a.b ?? 0]", want: `[null,"dflt",0]`},
		{name: "destructuring", code: "const {a, b: [x, ...rest], ...others} = {a: 1, b: [2, 3, 4], c: 5, d: 6}\nreturn {a, x, rest, others}", want: `{"a":1,"x":2,"rest":[3,4],"others":{"c":5,"d":6}}`},
		{name: "classes", code: "class Counter { private n = 0; constructor(public label: string) {} inc(): this { this.n++; return this } get value() { return `${this.label}=${this.n}` } }\nreturn new Counter('c').inc().inc().value", want: `"c=2"`},
		{name: "async await", code: "async function twice(x: number) { await sleep(1); return x * 2 }\nreturn await twice(21)", want: "42"},
		{name: "for await over array", code: "const out: number[] = []\nfor await (const v of [Promise.resolve(1), 2, sleep(1).then(() => 3)]) out.push(v as number)\nreturn out", want: "[1,2,3]"},
		{name: "async generator", code: "async function* gen() { yield 1; await sleep(1); yield 2 }\nconst out = []\nfor await (const v of gen()) out.push(v)\nout", want: "[1,2]"},
		{name: "Promise.allSettled", code: "const r = await Promise.allSettled([tools.echo({a: 1}), tools.fail.forbidden()])\nreturn r.map(x => x.status === 'fulfilled' ? x.value : x.reason.code)", want: `[{"a":1},403]`},
		{name: "type assertions and satisfies", code: "const x = {n: 1} satisfies {n: number}\nconst y = <any>x\nreturn (y as {n: number}).n", want: "1"},

		// Host calls.
		{name: "host call args round-trip", code: "return await tools.echo({ns: 'default', labels: {app: 'x'}, n: 3})", want: `{"ns":"default","labels":{"app":"x"},"n":3}`},
		{name: "host call no args", code: "return await tools.echo()", want: `{}`},
		{name: "forgiving names", code: "return (await tools.Kubernetes.Pods.List()).length + (await tools.kubernetes.PODS.list()).length", want: "6"},
		{name: "underscores and camelCase", code: "return [await tools.kubernetes.apiResources(), await tools.kubernetes.API_RESOURCES()]", want: `[["pods"],["pods"]]`},
		{name: "aliases resolve", code: "return (await tools.kubernetes.po.list()).length", want: "3"},
		{name: "unknown name suggests", code: "\nawait tools.kubernetes.pods.lsit()", err: &errWant{kind: KindRuntime, line: 2, contains: "did you mean tools.kubernetes.pods.list"}},
		{name: "unknown namespace lists", code: "await tools.helm.list()", err: &errWant{kind: KindRuntime, contains: "tools.helm is not an operation"}},
		{name: "list names", code: "return tools.$list()", want: `["echo","fail.badjson","fail.forbidden","fail.panic","kubernetes.api_resources","kubernetes.pods.get","kubernetes.pods.list","slow.op"]`},
		{name: "list names under a namespace", code: "return tools.kubernetes.pods.$list()", want: `["kubernetes.pods.get","kubernetes.pods.list"]`},
		{name: "Object.keys", code: "return Object.keys(tools.kubernetes)", want: `["api_resources","pods"]`},
		{name: "rejection caught", code: `try {
  await tools.fail.forbidden({})
} catch (e: any) {
  return {name: e.name, message: e.message, tool: e.tool, code: e.code, reason: e.reason, isError: e instanceof Error}
}`, want: `{"name":"ForbiddenError","message":"pods is forbidden: User \"viewer\" cannot list resource \"secrets\"","tool":"fail.forbidden","code":403,"reason":"Forbidden","isError":true}`},
		{name: "rejection uncaught is a tool error at the call site", code: "const x = 1\nconst s = await tools.fail.forbidden({})", err: &errWant{kind: KindTool, line: 2, column: 28, tool: "fail.forbidden", code: "403", contains: "forbidden"}},
		{name: "host panic becomes a tool error", code: "await tools.fail.panic()", err: &errWant{kind: KindTool, tool: "fail.panic", contains: "boom", code: `"panic"`}},
		{name: "host invalid json", code: "await tools.fail.badjson()", err: &errWant{kind: KindTool, tool: "fail.badjson", contains: "invalid JSON"}},
		{name: "args must be JSON", code: "const a: any = {}\na.self = a\nawait tools.echo(a)", err: &errWant{kind: KindRuntime, line: 3, contains: "circular"}},

		// Errors and positions.
		{name: "syntax error position", code: "const a = 1\nconst b = (a +\nreturn b", err: &errWant{kind: KindSyntax, line: 3, column: 1}},
		{name: "syntax error at the end", code: "const a = 1\nconst x = (1", err: &errWant{kind: KindSyntax, line: 2, column: 13, contains: "unexpected end of script"}},
		{name: "syntax error column counts characters", code: "let s = \"é\"; let t = ;", err: &errWant{kind: KindSyntax, line: 1, column: 22}},
		{name: "syntax error on line 1", code: "let x = = 2", err: &errWant{kind: KindSyntax, line: 1, column: 9}},
		{name: "type-only error is not a syntax error", code: "const a: number = 'x' as any\na", want: `"x"`},
		{name: "runtime error position", code: "const o: any = undefined\no.field", err: &errWant{kind: KindRuntime, line: 2, column: 3, contains: "field"}},
		{name: "runtime error after await", code: "const pods = await tools.kubernetes.pods.list()\n\nconst x: any = null\nconst y = x.spec.containers", err: &errWant{kind: KindRuntime, line: 4, column: 13}},
		{name: "runtime error in nested function after await", code: "function boom(p: any) {\n  return p.status.phase\n}\nawait sleep(1)\nboom({})", err: &errWant{kind: KindRuntime, line: 2, column: 19}},
		{name: "thrown error", code: "await sleep(1)\nthrow new Error('custom failure')", err: &errWant{kind: KindRuntime, line: 2, column: 7, contains: "custom failure"}},
		{name: "thrown string", code: "throw 'plain'", err: &errWant{kind: KindRuntime, contains: "plain"}},
		{name: "result with function", code: "return {f() {}}", err: &errWant{kind: KindRuntime, contains: "function at key"}},
		{name: "result with cycle", code: "const a: any = {}\na.a = a\nreturn a", err: &errWant{kind: KindRuntime, contains: "JSON"}},
		{name: "result bigint", code: "return 10n", err: &errWant{kind: KindRuntime, contains: "BigInt"}},
		{name: "promise that never settles", code: "await new Promise(() => {})", err: &errWant{kind: KindRuntime, contains: "never settle"}},

		// Globals.
		{name: "console captured", code: "console.log('hello', {a: 1}, [1], 2)\nconsole.warn('careful')\nconsole.error(new TypeError('bad'))\n1", want: "1",
			console: "hello {\"a\":1} [1] 2\n[warn] careful\n[error] TypeError: bad\n"},
		{name: "setTimeout and clearTimeout", code: "let fired: string[] = []\nconst t = setTimeout(() => fired.push('cleared'), 5)\nclearTimeout(t)\nsetTimeout((x: string) => fired.push(x), 5, 'kept')\nawait sleep(20)\nreturn fired", want: `["kept"]`},
		{name: "polling loop with sleep", code: "let n = 0\nwhile (n < 3) { await sleep(2); n++ }\nn", want: "3"},
		{name: "unhandled rejection warned", code: "tools.fail.forbidden()\nawait sleep(10)\n'done'", want: `"done"`, console: "[warn] unhandled promise rejection: ForbiddenError: pods is forbidden: User \"viewer\" cannot list resource \"secrets\"\n"},
	}
	r := newTestRuntime(t, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Execute(context.Background(), tc.code, &ExecOptions{Timeout: 5 * time.Second})
			checkErr(t, res.Error, tc.err)
			if tc.err == nil {
				checkValue(t, res.Value, tc.want)
			}
			if tc.console != "" {
				if d := cmp.Diff(tc.console, res.Console); d != "" {
					t.Errorf("console (-want +got):\n%s", d)
				}
			}
		})
	}
}

// TestStackHasUserFramesOnly checks the reported stack: the agent's frames,
// innermost first, without the async wrapper or esbuild's helpers.
func TestStackHasUserFramesOnly(t *testing.T) {
	r := newTestRuntime(t, nil)
	tests := []struct {
		name, code string
		want       []string
	}{
		{"nested functions", "function inner(p: any) {\n  return p.x.y\n}\nfunction outer() { return inner({}) }\nawait sleep(1)\nouter()",
			[]string{"inner (user.ts:2:14)", "outer (user.ts:4:27)", "user.ts:6:1"}},
		{"tool call site", "\n  await tools.fail.forbidden()", []string{"user.ts:2:20"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Execute(context.Background(), tc.code, nil)
			if res.Error == nil {
				t.Fatal("want an error")
			}
			if d := cmp.Diff(tc.want, res.Error.Stack); d != "" {
				t.Errorf("stack (-want +got):\n%s", d)
			}
		})
	}
}
