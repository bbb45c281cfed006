package runtime

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestHostileScripts runs what a confused or malicious script might try.
// The sandbox must answer each with a clear error or a harmless value.
func TestHostileScripts(t *testing.T) {
	tests := []struct {
		name string
		code string
		want string
		err  *errWant
	}{
		{name: "require", code: "require('fs')", err: &errWant{kind: KindRuntime, contains: "require is not defined"}},
		{name: "static import", code: "import fs from 'fs'\nfs.readFileSync('/etc/passwd')", err: &errWant{kind: KindSyntax, line: 1}},
		{name: "dynamic import", code: "await import('x')", err: &errWant{kind: KindSyntax, line: 1, contains: "modules cannot be imported"}},
		{name: "process.env", code: "process.env.HOME", err: &errWant{kind: KindRuntime, contains: "process is not defined"}},
		{name: "fetch", code: "await fetch('http://example.com')", err: &errWant{kind: KindRuntime, contains: "fetch is not defined"}},
		{name: "Function constructor reaches only the sandbox global",
			code: "const g = globalThis.constructor.constructor('return this')()\nreturn [typeof g.require, typeof g.process, typeof g.fetch, typeof g.tools]",
			want: `["undefined","undefined","undefined","object"]`},
		{name: "tools cannot be replaced", code: "(tools as any).kubernetes = 1\nreturn typeof tools.kubernetes", want: `"object"`},
		{name: "giant allocation bounded by the deadline", code: "const a: string[] = []\nwhile (true) a.push('x'.repeat(1 << 16))",
			err: &errWant{kind: KindTimeout}},
		{name: "large allocation within limits", code: "const s = 'x'.repeat(1 << 22)\nconst a = Array.from({length: 1e5}, (_, i) => i)\nreturn [s.length, a.length]", want: "[4194304,100000]"},
		{name: "deep recursion", code: "const f = (n: number): number => f(n + 1) + 1\nf(0)", err: &errWant{kind: KindLimit, contains: "call stack"}},
		{name: "never settling promise", code: "await new Promise<void>(resolve => { if (false) resolve() })", err: &errWant{kind: KindRuntime, contains: "never settle"}},
		{name: "host objects are not Go objects", code: "const f = tools.kubernetes.pods.list\nreturn [typeof f, Object.getOwnPropertyNames(f).includes('call')]", want: `["function",false]`},
		{name: "host functions print as native code",
			code: "return [String(sleep), String(setTimeout), String(clearTimeout), String(console.log), String(tools.kubernetes.pods.list), String(tools.$list)]",
			want: `["function sleep() { [native code] }","function setTimeout() { [native code] }","function clearTimeout() { [native code] }","function log() { [native code] }","function list() { [native code] }","function $list() { [native code] }"]`},
		{name: "timer flood", code: "for (let i = 0; i < 1e6; i++) setTimeout(() => {}, 10)\nreturn 1",
			err: &errWant{kind: KindLimit, contains: "timers pending"}},
		{name: "timers due after the deadline never fire en masse",
			code: "for (let i = 0; i < 9000; i++) setTimeout(() => { throw new Error('fired') }, 60_000)\nreturn 'done'", want: `"done"`},
		{name: "deep result", code: "let o: any = {}\nfor (let i = 0; i < 300; i++) o = { o }\nreturn o",
			err: &errWant{kind: KindLimit, contains: "nests more than 256 levels"}},
		{name: "deep string is no nesting", code: "return '['.repeat(1000)", want: `"` + strings.Repeat("[", 1000) + `"`},
	}
	r := newTestRuntime(t, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Execute(context.Background(), tc.code, &ExecOptions{Timeout: slowdown * 500 * time.Millisecond})
			checkErr(t, res.Error, tc.err)
			if tc.err == nil {
				checkValue(t, res.Value, tc.want)
			}
		})
	}
}

// TestNoStateLeaksBetweenRuns pollutes globals and prototypes in one run and
// checks the next run sees none of it.
func TestNoStateLeaksBetweenRuns(t *testing.T) {
	r := newTestRuntime(t, nil)
	first := r.Execute(context.Background(), `(Object.prototype as any).polluted = 'yes';
(Array.prototype as any).map = () => 'hijacked';
(globalThis as any).leak = 42
JSON.stringify = () => 'hijacked'
'done'`, nil)
	checkErr(t, first.Error, nil)
	second := r.Execute(context.Background(), "return [({} as any).polluted ?? null, [1].map(x => x + 1), (globalThis as any).leak ?? null]", nil)
	checkErr(t, second.Error, nil)
	checkValue(t, second.Value, `[null,[2],null]`)
}

// TestUninterruptibleWorkStillReturns: goja's Interrupt cannot stop a
// catastrophic regular expression, yet Execute returns soon after the
// deadline with a timeout.
func TestUninterruptibleWorkStillReturns(t *testing.T) {
	r := newTestRuntime(t, nil)
	start := time.Now()
	res := r.Execute(context.Background(), "return /^(a+)+\\1$/.test('a'.repeat(25) + 'b')", &ExecOptions{Timeout: 200 * time.Millisecond})
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Execute took %s with a 200ms timeout", took)
	}
	checkErr(t, res.Error, &errWant{kind: KindTimeout})
}

// TestDeepResult: a deeply nested result converts in linear time, where
// the depth limit allows it (by default a result 5,000 deep is refused).
func TestDeepResult(t *testing.T) {
	r := newTestRuntime(t, &Options{MaxResultDepth: 10_000})
	res := r.Execute(context.Background(), "let o: any = {}\nfor (let i = 0; i < 5000; i++) o = { o }\nreturn o", &ExecOptions{Timeout: 2 * time.Second})
	checkErr(t, res.Error, nil)
	if res.ResultBytes < 5000*6 {
		t.Errorf("result is %d bytes", res.ResultBytes)
	}
}

// TestDeepConsoleValue: logging a value nested past the depth limit prints
// a clear marker at once (goja's stringify would take seconds).
func TestDeepConsoleValue(t *testing.T) {
	r := newTestRuntime(t, nil)
	start := time.Now()
	res := r.Execute(context.Background(), "let o: any = {}\nfor (let i = 0; i < 20000; i++) o = { o }\nconsole.log('deep', o)\nreturn 1", &ExecOptions{Timeout: 5 * time.Second})
	checkErr(t, res.Error, nil)
	if want := "deep [a value nested more than 256 levels deep: log flat data]"; !strings.Contains(res.Console, want) {
		t.Errorf("console = %q, want %q", res.Console, want)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %s", took)
	}
}
