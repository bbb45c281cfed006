package runtime

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// FuzzExecute feeds arbitrary text as a script: Execute must never panic and
// must return within its deadline (plus slack for transpiling).
func FuzzExecute(f *testing.F) {
	for _, s := range []string{
		"1 + 1", "return await tools.echo({a: 1})", "while(true){}", "throw new Error('x')",
		"await new Promise(() => {})", "const f = (): any => f(); f()", "let x = = 1", "import x from 'y'",
		"tools.nope.nope()", "for await (const x of [1]) x", "enum E { A }\nE.A", "`${", "/*", "({a: 1})",
		"setTimeout(() => { throw 1 }, 1); await sleep(5)", "return tools.$list()",
	} {
		f.Add(s)
	}
	r, err := newRuntimeOver(testOps(), &Options{Timeout: 200 * time.Millisecond, MaxCallStackSize: 200})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, code string) {
		start := time.Now()
		// A hang would stall the fuzzer without naming the input: crash
		// instead, so the input is saved as a failing case.
		watchdog := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("Execute hung on %q", code)) })
		defer watchdog.Stop()
		res := r.Execute(context.Background(), code, nil)
		if res == nil {
			t.Fatal("nil result")
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("took %s for %q", d, code)
		}
		if res.Error != nil && res.Error.Message == "" {
			t.Fatalf("error without message for %q: %+v", code, res.Error)
		}
	})
}
