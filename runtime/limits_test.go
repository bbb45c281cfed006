package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestLimits(t *testing.T) {
	tests := []struct {
		name    string
		opts    *Options
		timeout time.Duration
		code    string
		want    string
		err     *errWant
		check   func(t *testing.T, res *Result)
	}{
		{name: "tight loop times out", timeout: 200 * time.Millisecond, code: "let i = 0\nwhile (true) { i++ }",
			err: &errWant{kind: KindTimeout, line: 2, contains: "timeout"}},
		{name: "loop after await times out", timeout: 200 * time.Millisecond, code: "await tools.echo({})\nlet n = 0\nwhile (true) { n++ }",
			err: &errWant{kind: KindTimeout, line: 3}},
		{name: "slow host call times out", timeout: 50 * time.Millisecond, code: "await tools.slow.op({})",
			err: &errWant{kind: KindTimeout}},
		{name: "sleep past deadline times out", timeout: 50 * time.Millisecond, code: "await sleep(60000)",
			err: &errWant{kind: KindTimeout}},
		{name: "code size", opts: &Options{MaxCodeBytes: 10}, code: "return 'this is more than ten bytes'",
			err: &errWant{kind: KindLimit, contains: "limit is 10"}},
		{name: "host call count", opts: &Options{MaxHostCalls: 3}, code: "for (let i = 0; i < 10; i++) {\n  try { await tools.echo({i}) } catch {}\n}",
			err: &errWant{kind: KindLimit, tool: "echo", contains: "more than 3 tool calls"}},
		{name: "host call count in parallel", opts: &Options{MaxHostCalls: 5}, code: "await Promise.all(Array.from({length: 10}, (_, i) => tools.echo({i})))",
			err: &errWant{kind: KindLimit}},
		{name: "call stack depth", opts: &Options{MaxCallStackSize: 100}, code: "function f(n: number): number { return n === 0 ? 0 : 1 + f(n - 1) }\nf(1000)",
			err: &errWant{kind: KindLimit, line: 1, contains: "call stack"}},
		{name: "call stack within limit", opts: &Options{MaxCallStackSize: 100}, code: "function f(n: number): number { return n === 0 ? 0 : 1 + f(n - 1) }\nf(50)", want: "50"},
		{name: "deep recursion after await", opts: &Options{MaxCallStackSize: 100}, code: "await sleep(1)\nconst f = (n: number): number => f(n + 1)\nf(0)",
			err: &errWant{kind: KindLimit, line: 2}},
		{name: "result truncated", opts: &Options{MaxResultBytes: 100}, code: "return 'x'.repeat(1000)",
			check: func(t *testing.T, res *Result) {
				var s string
				if err := json.Unmarshal(res.Value, &s); err != nil {
					t.Fatalf("truncated value is not a JSON string: %v", err)
				}
				if !res.Truncated || res.ResultBytes != 1002 || !strings.HasPrefix(s, `"`+strings.Repeat("x", 99)) ||
					!strings.Contains(s, "result is 1002 bytes, over the 100-byte limit") {
					t.Errorf("bad truncation: truncated=%v bytes=%d value=%q", res.Truncated, res.ResultBytes, s)
				}
			}},
		{name: "console bounded", opts: &Options{MaxConsoleBytes: 50}, code: "for (let i = 0; i < 100; i++) console.log('line ' + i)\n1", want: "1",
			check: func(t *testing.T, res *Result) {
				if !strings.HasPrefix(res.Console, "line 0\nline 1\n") || !strings.Contains(res.Console, "console output truncated") || len(res.Console) > 150 {
					t.Errorf("console not bounded: %q", res.Console)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRuntime(t, tc.opts)
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			res := r.Execute(context.Background(), tc.code, &ExecOptions{Timeout: timeout})
			checkErr(t, res.Error, tc.err)
			if tc.err == nil && tc.check == nil {
				checkValue(t, res.Value, tc.want)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

func TestTimeoutDefaultsAndCap(t *testing.T) {
	r := newTestRuntime(t, &Options{Timeout: 100 * time.Millisecond, MaxTimeout: 200 * time.Millisecond})
	res := r.Execute(context.Background(), "while(true){}", nil)
	checkErr(t, res.Error, &errWant{kind: KindTimeout, contains: "100ms"})
	res = r.Execute(context.Background(), "while(true){}", &ExecOptions{Timeout: time.Hour})
	checkErr(t, res.Error, &errWant{kind: KindTimeout, contains: "200ms"})
}

func TestCanceledContext(t *testing.T) {
	r := newTestRuntime(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	res := r.Execute(ctx, "await sleep(10000)", nil)
	checkErr(t, res.Error, &errWant{kind: KindRuntime, contains: "canceled"})
}

// TestParallelHostCalls checks that Promise.all over slow host calls runs
// them at once. The timing bound is loose on purpose (20 sequential calls
// would take 2s); BenchmarkParallelFanOut measures it.
func TestParallelHostCalls(t *testing.T) {
	r := newTestRuntime(t, nil)
	res := r.Execute(context.Background(), "const rs = await Promise.all(Array.from({length: 20}, (_, i) => tools.slow.op({i})))\nrs.map(r => r.i)", nil)
	checkErr(t, res.Error, nil)
	checkValue(t, res.Value, "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]")
	if res.Calls != 20 {
		t.Errorf("calls = %d, want 20", res.Calls)
	}
	if res.Duration > time.Second {
		t.Errorf("20 parallel 100ms calls took %s: they did not run in parallel", res.Duration)
	}
}

func TestConcurrencyBound(t *testing.T) {
	r := newTestRuntime(t, &Options{Concurrency: 2})
	res := r.Execute(context.Background(), "await Promise.all([1,2,3,4].map(i => tools.slow.op({i})))\n'ok'", nil)
	checkErr(t, res.Error, nil)
	if res.Duration < 200*time.Millisecond {
		t.Errorf("4 calls with concurrency 2 took %s, want at least 200ms", res.Duration)
	}
}

func TestNewRejectsBadOperations(t *testing.T) {
	tests := []struct {
		name string
		ops  []Operation
		want string
	}{
		{"duplicate", []Operation{{Name: "a.b"}, {Name: "a.b"}}, "duplicate"},
		{"nested under operation", []Operation{{Name: "a"}, {Name: "a.b"}}, "nested"},
		{"empty segment", []Operation{{Name: "a..b"}}, "empty segment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.ops, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
