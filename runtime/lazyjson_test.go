package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// lazyOver is a runtime whose tools.t.get answers doc (read lazily when it
// is large) and tools.t.text answers doc as one JSON string, which the
// script gives JSON.parse: the reference a lazy answer must equal.
func lazyOver(t *testing.T, doc string) *testRuntime {
	t.Helper()
	text, _ := json.Marshal(doc)
	r, err := newRuntimeOver([]testOp{
		{Name: "t.get", Call: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(doc), nil }},
		{Name: "t.text", Call: func(context.Context, json.RawMessage) (json.RawMessage, error) { return text, nil }},
		gcOp,
	}, &Options{MaxResultBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// gcOp collects what the script dropped.
var gcOp = testOp{Name: "t.gc", Call: func(context.Context, json.RawMessage) (json.RawMessage, error) {
	goruntime.GC() // twice: weak pointers clear in the second
	goruntime.GC()
	return json.RawMessage("null"), nil
}}

func run(t *testing.T, r *testRuntime, code string) string {
	t.Helper()
	res := r.Execute(context.Background(), code, nil)
	if res.Error != nil {
		t.Fatalf("%s: %+v", code, res.Error)
	}
	return string(res.Value)
}

// padded makes doc large enough to be read lazily.
func padded(doc string) string {
	return `{"pad":"` + strings.Repeat("x", lazyThreshold) + `","doc":` + doc + `}`
}

// TestLazyAnswersReadAsJSONParse: a large answer read lazily gives what
// JSON.parse gives, read every way a script reads a value: whole, keys in
// order, entries, spread, lookups of missing keys, escapes, duplicates,
// numbers, nested arrays.
func TestLazyAnswersReadAsJSONParse(t *testing.T) {
	docs := []string{
		`{"a":1,"b":"two","c":[1,2,{"d":null}],"e":{"f":true,"g":false}}`,
		`{"esc":"q\"uote\\back\nline\u00e9\ud83d\ude00","key \"quoted\"":1,"üñí":"x"}`,
		`{"dup":1,"other":2,"dup":3}`,
		`{"__proto__":{"polluted":true},"n":-0.5e3,"big":12345678901234567890,"int":9007199254740993}`,
		`[[],[[]],{},[{"a":[{"b":[1]}]}]]`,
		`{"2":"two","1":"one","b":"bee","a":"ay"}`,
		` { "spaced" : [ 1 , 2 ] , "x" : { } } `,
	}
	for _, doc := range docs {
		t.Run(doc, func(t *testing.T) {
			r := lazyOver(t, padded(doc))
			for _, read := range []string{
				`return JSON.stringify(v.doc)`,
				`return Object.keys(v.doc).join(',')`,
				`return JSON.stringify(Object.entries(v.doc))`,
				`return JSON.stringify({ ...v.doc, added: 1 })`,
				`return [v.doc.missing === undefined, 'missing' in v.doc, Array.isArray(v.doc), typeof v.doc].join(',')`,
				`return JSON.stringify(Object.getPrototypeOf(v.doc) === Object.prototype || Object.getPrototypeOf(v.doc) === Array.prototype)`,
				`const walk = (x: any): any => Array.isArray(x) ? x.map(walk) : x && typeof x === 'object' ? Object.fromEntries(Object.keys(x).map(k => [k, walk(x[k])])) : x
return JSON.stringify(walk(v.doc))`,
			} {
				lazy := run(t, r, "const v = await tools.t.get({})\n"+read)
				eager := run(t, r, "const v = JSON.parse(await tools.t.text({}))\n"+read)
				if diff := cmp.Diff(eager, lazy); diff != "" {
					t.Errorf("%s (-JSON.parse +lazy):\n%s", read, diff)
				}
			}
		})
	}
}

// TestLazyAnswersKeepWhatScriptsDo: what a script sets, adds, deletes,
// pushes or sorts stays, and an object read twice is the same object, even
// after the collector ran.
func TestLazyAnswersKeepWhatScriptsDo(t *testing.T) {
	list := podListJSON(2000)
	garbage := "await tools.t.gc({})\n" // what the script dropped is collected
	// Whole, and packed in parts of 300 (as a list reaches a worker).
	for _, r := range []*testRuntime{lazyOver(t, string(list)), packedOver(t, list, 300)} {
		keepWhatScriptsDo(t, r, garbage)
	}
}

// packedOver is lazyOver for an answer packed in parts of size items, as
// a worker keeps a list it gets page by page.
func packedOver(t *testing.T, list json.RawMessage, size int) *testRuntime {
	t.Helper()
	var items []json.RawMessage
	if err := json.Unmarshal(list, &items); err != nil {
		t.Fatal(err)
	}
	var a answers
	for i := 0; i < len(items); i += size {
		page, _ := json.Marshal(items[i:min(i+size, len(items))])
		part := append(page[1:len(page)-1:len(page)-1], '\n')
		if err := a.gather("1", bytes.NewReader(part), len(part)-1, 1<<30); err != nil {
			t.Fatal(err)
		}
	}
	key, tooLarge, invalid := a.finish("1")
	if packedOf(key) == nil || tooLarge != 0 || invalid {
		t.Fatalf("not packed: %d bytes, too large %d, invalid %v", len(key), tooLarge, invalid)
	}
	t.Cleanup(a.releaseAll)
	r, err := newRuntimeOver([]testOp{
		{Name: "t.get", Call: func(context.Context, json.RawMessage) (json.RawMessage, error) { return key, nil }},
		gcOp,
	}, &Options{MaxResultBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func keepWhatScriptsDo(t *testing.T, r *testRuntime, garbage string) {
	t.Helper()
	for _, tc := range []struct{ code, want string }{
		{"const pods = await tools.t.get({})\npods[5].metadata.marked = 'yes'\n" + garbage + "return pods[5].metadata.marked", `"yes"`},
		{"const pods = await tools.t.get({})\nfor (const p of pods) p.score = p.status.containerStatuses[0].restartCount\n" + garbage +
			"return pods.filter(p => p.score > 0).length === pods.filter(p => p.status.containerStatuses[0].restartCount > 0).length && pods.every(p => 'score' in p)", "true"},
		{"const pods = await tools.t.get({})\nconst m = pods[7].metadata\n" + garbage + "return m === pods[7].metadata && pods[7] === pods[7]", "true"},
		{"const pods = await tools.t.get({})\ndelete pods[3].metadata.labels.app\n" + garbage + "return Object.keys(pods[3].metadata.labels)", `["pod-template-hash"]`},
		{"const pods = await tools.t.get({})\npods.sort((a, b) => b.metadata.name.localeCompare(a.metadata.name))\n" + garbage + "return [pods.length, pods[0].metadata.name, pods[1999].metadata.name]", `[2000,"web-999","web-0"]`},
		{"const pods = await tools.t.get({})\npods.push({ extra: true })\npods.length = 2001\n" + garbage + "return [pods.length, pods[2000].extra, pods[0].metadata.name]", `[2001,true,"web-0"]`},
		{"const pods = await tools.t.get({})\npods[9].status.containerStatuses[0].state = { waiting: { reason: 'X' } }\n" + garbage + "return pods[9].status.containerStatuses[0].state.waiting.reason", `"X"`},
	} {
		if got := run(t, r, tc.code); got != tc.want {
			t.Errorf("%s\n= %s, want %s", tc.code, got, tc.want)
		}
	}
}

// TestLazyListGivesTheSameAnswer: a list of 50,000 objects read lazily
// gives the same answer as the eager parse of the same list: same shape,
// same order.
func TestLazyListGivesTheSameAnswer(t *testing.T) {
	n := 50000 / slowdown // the race detector's binary: 6,250
	list := podListJSON(n)
	r := lazyOver(t, string(list))
	scan := `.filter(p => p.status.containerStatuses.some(c => c.restartCount > 0)).map(p => ({ ns: p.metadata.namespace, name: p.metadata.name, restarts: p.status.containerStatuses[0].restartCount, labels: p.metadata.labels }))`
	lazy := run(t, r, "return (await tools.t.get({}))"+scan)
	eager := run(t, r, "return JSON.parse(await tools.t.text({}))"+scan)
	if lazy != eager {
		t.Fatalf("answers differ: lazy %d bytes, eager %d bytes", len(lazy), len(eager))
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(lazy), &got); err != nil || len(got) != restarted(n) {
		t.Fatalf("%d answers (%v)", len(got), err)
	}
	if whole := run(t, r, "return JSON.stringify(await tools.t.get({})).length"); whole != fmt.Sprint(len(list)) {
		t.Errorf("the whole list stringified is %s bytes, the answer %d", whole, len(list))
	}
}

// TestWorkerLimitsHoldOverLargeAnswers: in a worker with its memory
// limit, a script that copies every object of a large list stops at the
// limit with the limit's error, an answer past half the limit is refused
// with what to ask for instead, and the worker serves the next script.
func TestWorkerLimitsHoldOverLargeAnswers(t *testing.T) {
	if testing.Short() || slowdown > 1 {
		t.Skip("starts worker processes; copies 37 MB of objects")
	}
	list := podListJSON(40000) // 37 MB
	huge := json.RawMessage(`"` + strings.Repeat("x", int(testMemoryLimit/2)+1) + `"`)
	// CPU time enough for the memory limit to be what stops the copy.
	p := NewPool(&PoolOptions{Command: func() *exec.Cmd { return exec.Command(os.Args[0]) }, MemoryLimit: testMemoryLimit, Max: 2, Idle: 1, Demote: -1, CPULimit: time.Minute, Runtime: &Options{Timeout: time.Minute}})
	t.Cleanup(func() { _ = p.Close() })
	ops := []Operation{{Name: "t.list"}, {Name: "t.huge"}}
	host := func(_ context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
		if name == "t.huge" {
			return huge, nil
		}
		return list, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(list, &items); err != nil {
		t.Fatal(err)
	}
	inParts := func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		if name != "t.list" {
			return host(ctx, name, args)
		}
		for i := 0; i < len(items); i += 500 { // as a list reaches a worker
			page, _ := json.Marshal(items[i:min(i+500, len(items))])
			if err := PartsOf(ctx)(page); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	for _, h := range []HostFunc{host, inParts} {
		res := p.Execute(context.Background(), ops, "const pods = await tools.t.list({})\nconst copies = pods.map(p => JSON.parse(JSON.stringify(p)))\nreturn copies.length", &ExecOptions{Host: h})
		if res.Error == nil || res.Error.Kind != KindLimit || !strings.Contains(res.Error.Message, "memory limit exceeded") {
			t.Errorf("a script keeping a copy of every object: %s %+v", res.Value, res.Error)
		}
	}
	res := p.Execute(context.Background(), ops, "try { await tools.t.huge({}) } catch (e: any) { return e.message }\nreturn 'no error'", &ExecOptions{Host: host})
	if res.Error != nil || !strings.Contains(string(res.Value), "more than half the script's memory limit") || !strings.Contains(string(res.Value), "limit with continue") {
		t.Errorf("an answer past half the limit: %s %+v", res.Value, res.Error)
	}
	for _, h := range []HostFunc{host, inParts} {
		res = p.Execute(context.Background(), ops, "const pods = await tools.t.list({})\nreturn pods.filter(p => p.status.containerStatuses[0].restartCount > 0).length", &ExecOptions{Host: h})
		if res.Error != nil || string(res.Value) != fmt.Sprint(restarted(40000)) {
			t.Errorf("the next script: %s %+v", res.Value, res.Error)
		}
	}
}

// restarted counts the pods of podListJSON(n) that restarted.
func restarted(n int) int {
	c := 0
	for i := range n {
		if i%7/6*3 > 0 {
			c++
		}
	}
	return c
}
