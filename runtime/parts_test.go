package runtime

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestAnswersInParts sends answers in parts to a worker and checks the
// script gets one array of every part's items, or the error alone.
func TestAnswersInParts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	pods := podListJSON(50000 / slowdown) // the race detector's binary: 6,250
	var items []json.RawMessage
	if err := json.Unmarshal(pods, &items); err != nil {
		t.Fatal(err)
	}
	pages := func(size int) []json.RawMessage {
		var out []json.RawMessage
		for i := 0; i < len(items); i += size {
			page, _ := json.Marshal(items[i:min(i+size, len(items))])
			out = append(out, page)
		}
		return out
	}
	// Parts of an eighth of the limit: of random text (packed, still past
	// half the limit together), and of one letter (packed to nothing, but
	// the script that reads them all holds them whole).
	noise := make([]byte, testMemoryLimit/8*3/4)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	random := `["` + base64.StdEncoding.EncodeToString(noise) + `"]`
	huge := `["` + strings.Repeat("x", int(testMemoryLimit/8)) + `"]`
	tests := []struct {
		name  string
		parts []string
		whole string // returned after the parts
		fail  string // returned after the parts
		want  string // what the script returns
		limit bool   // the script meets the memory limit
		heavy bool   // moves the limit's worth of text: not under the race detector (1 GB)
	}{
		{name: "items of every part in order", parts: []string{`[1,2]`, `[]`, `[3]`}, want: `"[1,2,3]"`},
		{name: "only empty parts", parts: []string{`[]`, ` [ ] `}, want: `"[]"`},
		{name: "space and brackets in strings", parts: []string{` [ {"a": "x,]"} , "[" ] `, "[\n\"]\"\n]"}, want: `"[{\"a\":\"x,]\"},\"[\",\"]\"]"`},
		{name: "an error after parts", parts: []string{`[1]`}, fail: "the API server went away", want: `"the API server went away"`},
		{name: "parts and then a whole answer", parts: []string{`[1]`}, whole: `[2]`, want: `"operation t.list failed internally: the operation sent its answer in parts and then whole"`},
		{name: "parts past half the limit", parts: []string{random, random, random, random, random, random, random, random}, want: `"too large"`, heavy: true},
		{name: "packed parts read whole past the limit", parts: []string{huge, huge, huge, huge, huge}, limit: true, heavy: true},
		{name: "not an array", parts: []string{`{"a":1}`}, want: `"a part of an answer is not a JSON array"`},
	}
	// CPU time enough for the memory limit to be what stops a script.
	p := NewPool(&PoolOptions{Command: func() *exec.Cmd { return exec.Command(os.Args[0]) }, MemoryLimit: testMemoryLimit, Max: 1, Idle: 1, Demote: -1, CPULimit: time.Minute, Runtime: &Options{Timeout: time.Minute}})
	t.Cleanup(func() { _ = p.Close() })
	ops := []Operation{{Name: "t.list"}}
	const script = `try {
  const v = await tools.t.list({})
  return JSON.stringify(v)
} catch (e: any) {
  return e.message.includes("more than half the script's memory limit") ? "too large" : e.message
}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.heavy && slowdown > 1 {
				t.Skip("the race detector's worker has four times the limit, and a tenth of the speed")
			}
			host := func(ctx context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
				send := PartsOf(ctx)
				if send == nil {
					return nil, errors.New("a worker's host got no way to send parts")
				}
				for _, part := range tt.parts {
					if err := send(json.RawMessage(part)); err != nil {
						return nil, &CallError{Message: err.Error()}
					}
				}
				if tt.fail != "" {
					return nil, &CallError{Message: tt.fail}
				}
				if tt.whole != "" {
					return json.RawMessage(tt.whole), nil
				}
				return nil, nil
			}
			res := p.Execute(context.Background(), ops, script, &ExecOptions{Host: host})
			if tt.limit {
				if res.Error == nil || res.Error.Kind != KindLimit || !strings.Contains(res.Error.Message, "memory limit exceeded") {
					t.Fatalf("want the memory limit, got %s %+v", res.Value, res.Error)
				}
				return
			}
			if res.Error != nil {
				t.Fatalf("%+v", res.Error)
			}
			if diff := cmp.Diff(tt.want, string(res.Value)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
	// Scripts that end while their list still arrives: the worker frees
	// what it gathered (the execution's end runs beside the reader) and
	// serves the next script whole.
	for range 3 {
		slow := func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			for i := range 60 {
				if err := PartsOf(ctx)(pages(500)[i%6]); err != nil {
					return nil, err
				}
				time.Sleep(time.Millisecond)
			}
			return nil, nil
		}
		res := p.Execute(context.Background(), ops, "tools.t.list({})\nreturn 1", &ExecOptions{Host: slow})
		if res.Error != nil || string(res.Value) != "1" {
			t.Fatalf("a script that did not wait for its list: %s %+v", res.Value, res.Error)
		}
	}
	// A list of 50,000 pods sent page by page (packed in the worker)
	// reads as the same list sent whole and read in the server's process:
	// same shape, same order, the same items kept; and the worker holds
	// nothing of the answers before.
	for _, size := range []int{500, 5000} {
		parts := pages(size)
		host := func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			if send := PartsOf(ctx); send != nil && size > 0 {
				for _, part := range parts {
					if err := send(part); err != nil {
						return nil, err
					}
				}
				return nil, nil
			}
			return pods, nil
		}
		const scan = "const pods = await tools.t.list({})\nreturn {n: pods.length, restarted: pods.filter(p => p.status.containerStatuses[0].restartCount > 0).map(p => p.metadata.name), last: pods[pods.length - 1]}"
		got := p.Execute(context.Background(), ops, scan, &ExecOptions{Host: host})
		inProcess, err := New(ops, &Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		want := inProcess.Execute(context.Background(), scan, &ExecOptions{Host: host})
		if got.Error != nil || want.Error != nil {
			t.Fatalf("pages of %d: %+v %+v", size, got.Error, want.Error)
		}
		if diff := cmp.Diff(string(want.Value), string(got.Value)); diff != "" {
			t.Errorf("pages of %d (-whole +parts):\n%s", size, diff)
		}
	}
}
