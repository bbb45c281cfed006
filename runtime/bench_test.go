package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

const script30 = `interface Pod { name: string; restarts: number }
interface Summary { total: number; restarting: number; worst: Pod[] }

function summarize(pods: Pod[], n: number): Summary {
  const restarting = pods.filter(p => p.restarts > 0)
  const worst = [...restarting]
    .sort((a, b) => b.restarts - a.restarts)
    .slice(0, n)
  return { total: pods.length, restarting: restarting.length, worst }
}

enum Severity { Low = 'low', High = 'high' }

function severity(p: Pod): Severity {
  return p.restarts > 5 ? Severity.High : Severity.Low
}

const pods: Pod[] = await tools.kubernetes.pods.list({ namespace: 'default' })
const summary = summarize(pods, 3)
const bySeverity: Record<string, string[]> = {}
for (const p of summary.worst) {
  const s = severity(p)
  bySeverity[s] ??= []
  bySeverity[s].push(p.name)
}
console.log('pods:', summary.total)
return {
  ...summary,
  bySeverity,
}
`

// BenchmarkTranspile measures esbuild transpile plus goja compile of a
// 30-line script, without the cache.
func BenchmarkTranspile(b *testing.B) {
	for b.Loop() {
		if _, err := transpile(script30); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecuteTrivial is transpile + run of a script with one awaited
// host call, defeating the cache with a unique comment per iteration.
func BenchmarkExecuteTrivial(b *testing.B) {
	r := newTestRuntime(b, &Options{CacheEntries: -1})
	ctx := context.Background()
	for b.Loop() {
		res := r.Execute(ctx, "const pods = await tools.kubernetes.pods.list({})\npods.length", nil)
		if res.Error != nil {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkExecuteCached is a re-run of the same script: the transpiled
// program comes from the cache, so this is runtime setup + run.
func BenchmarkExecuteCached(b *testing.B) {
	r := newTestRuntime(b, nil)
	ctx := context.Background()
	for b.Loop() {
		res := r.Execute(ctx, "const pods = await tools.kubernetes.pods.list({})\npods.length", nil)
		if res.Error != nil {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkExecute30Lines runs the 30-line script through the cache.
func BenchmarkExecute30Lines(b *testing.B) {
	r := newTestRuntime(b, nil)
	ctx := context.Background()
	for b.Loop() {
		if res := r.Execute(ctx, script30, nil); res.Error != nil {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkParallelFanOut is Promise.all over 20 host calls of 100ms each:
// ≈100ms per op when the calls run in parallel.
func BenchmarkParallelFanOut(b *testing.B) {
	r := newTestRuntime(b, nil)
	ctx := context.Background()
	for b.Loop() {
		res := r.Execute(ctx, "await Promise.all(Array.from({length: 20}, (_, i) => tools.slow.op({i})))", nil)
		if res.Error != nil {
			b.Fatal(res.Error)
		}
	}
}

// podListJSON is a synthetic list of n pod-like objects of about 1.5 KB each.
func podListJSON(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-%d","namespace":"ns-%d","uid":"6f1c2b1e-0000-4000-8000-%012d","resourceVersion":"%d","creationTimestamp":"2026-11-22T10:00:00Z","labels":{"app":"web","pod-template-hash":"5d9f7c6b8"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d9f7c6b8","uid":"1","controller":true}]},"spec":{"nodeName":"node-%d","containers":[{"name":"web","image":"registry.example/web:1.2.3","ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"}],"podIP":"10.0.%d.%d","startTime":"2026-11-22T10:00:01Z","containerStatuses":[{"name":"web","image":"registry.example/web:1.2.3","imageID":"","ready":true,"restartCount":%d,"state":{"running":{"startedAt":"2026-11-22T10:00:02Z"}}}]}}`,
			i, i%10, i, 1000+i, i%3, i/250, i%250, i%7/6*3)
	}
	b.WriteString("]")
	return json.RawMessage(b.String())
}

// BenchmarkRestartedPods5000 is the headline question on 5,000 pods: the host
// returns the full list (≈7.5 MB of JSON) and the script keeps only pods
// that restarted.
func BenchmarkRestartedPods5000(b *testing.B) {
	list := podListJSON(5000)
	r, err := newRuntimeOver([]testOp{{Name: "kubernetes.pods.list", Call: func(context.Context, json.RawMessage) (json.RawMessage, error) { return list, nil }}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	code := `const pods = await tools.kubernetes.pods.list({ allNamespaces: true })
return pods.filter(p => p.status.containerStatuses.some(c => c.restartCount > 0)).map(p => ({ ns: p.metadata.namespace, name: p.metadata.name }))`
	b.SetBytes(int64(len(list)))
	for b.Loop() {
		res := r.Execute(context.Background(), code, nil)
		if res.Error != nil {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkPoolExecuteTrivial is BenchmarkExecuteCached through a warm
// worker process: the cost of the process boundary.
func BenchmarkPoolExecuteTrivial(b *testing.B) {
	p := NewPool(&PoolOptions{Command: func() *exec.Cmd { return exec.Command(os.Args[0]) }})
	b.Cleanup(func() { _ = p.Close() })
	for b.Loop() {
		if res := p.Execute(context.Background(), nil, "1 + 1", nil); res.Error != nil {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkPoolExecuteTrivialPaced is BenchmarkPoolExecuteTrivial paced
// as MCP calls come: the worker idles a millisecond between scripts (the
// answer's way back to the client and the next request), and each
// execution's latency is reported (p50, p99).
func BenchmarkPoolExecuteTrivialPaced(b *testing.B) {
	p := NewPool(&PoolOptions{Command: func() *exec.Cmd { return exec.Command(os.Args[0]) }})
	b.Cleanup(func() { _ = p.Close() })
	ops := []Operation{{Name: "kubernetes.pods.list"}}
	var lat []time.Duration
	for b.Loop() {
		time.Sleep(time.Millisecond)
		start := time.Now()
		if res := p.Execute(context.Background(), ops, "return 1 + 1", nil); res.Error != nil {
			b.Fatal(res.Error)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkRestartedPods5000Worker is BenchmarkRestartedPods5000 in a worker
// process: the 7.5 MB list crosses the pipe to the worker (goal: < 5 s).
func BenchmarkRestartedPods5000Worker(b *testing.B) {
	list := podListJSON(5000)
	p := NewPool(&PoolOptions{Command: func() *exec.Cmd { return exec.Command(os.Args[0]) }})
	b.Cleanup(func() { _ = p.Close() })
	ops := []Operation{{Name: "kubernetes.pods.list"}}
	host := func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return list, nil }
	code := `const pods = await tools.kubernetes.pods.list({ allNamespaces: true })
return pods.filter(p => p.status.containerStatuses.some(c => c.restartCount > 0)).map(p => ({ ns: p.metadata.namespace, name: p.metadata.name }))`
	b.SetBytes(int64(len(list)))
	for b.Loop() {
		res := p.Execute(context.Background(), ops, code, &ExecOptions{Host: host})
		if res.Error != nil {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkHealthScanWorker is README's health scan (examples/
// cluster-health.ts, its pods.list and the filter over it) in a worker
// process with the default memory limit, at 5,000, 20,000 and 50,000 pods:
// the list crosses the pipe as it came and is read lazily. It reports the
// list's size and the worker's peak resident memory (VmHWM).
func BenchmarkHealthScanWorker(b *testing.B) {
	for _, n := range []int{5000, 20000, 50000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			list := podListJSON(n)
			pages := podPages(b, list, 500)
			p := NewPool(&PoolOptions{Command: func() *exec.Cmd { return exec.Command(os.Args[0]) }, Max: 2, Idle: 1, Demote: -1})
			b.Cleanup(func() { _ = p.Close() })
			ops := []Operation{{Name: "kubernetes.pods.list"}, {Name: "kubernetes.pods.logs"}}
			host := func(ctx context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
				if name == "kubernetes.pods.logs" {
					return json.RawMessage(`"line 1\nline 2\n"`), nil
				}
				// Page by page, as the server sends a list to a worker.
				for _, page := range pages {
					if err := PartsOf(ctx)(page); err != nil {
						return nil, err
					}
				}
				return nil, nil
			}
			code := `const pods = await tools.kubernetes.pods.list({ allNamespaces: true })
const crashing = pods.flatMap(p => (p.status?.containerStatuses ?? []).filter(c => c.restartCount > 0).map(c => ({ p, c })))
const out = await Promise.all(crashing.slice(0, 50).map(async ({ p, c }) => {
  const log = await tools.kubernetes.pods.logs({ name: p.metadata.name, namespace: p.metadata.namespace, container: c.name, previous: true, tailLines: 20 })
  const lines = log.trim().split('\n')
  return { namespace: p.metadata.namespace, pod: p.metadata.name, container: c.name, restarts: c.restartCount, last: lines[lines.length - 1] }
}))
return { crashing: crashing.length, out: out.sort((a, b) => b.restarts - a.restarts).slice(0, 3) }`
			b.SetBytes(int64(len(list)))
			for b.Loop() {
				res := p.Execute(context.Background(), ops, code, &ExecOptions{Host: host})
				if res.Error != nil {
					b.Fatal(res.Error)
				}
			}
			b.ReportMetric(float64(len(list))/float64(n), "list-B/pod")
			b.ReportMetric(float64(workerPeakRSS(b, p))/(1<<20), "worker-peak-MB")
			b.ReportMetric(float64(p.Started()), "workers")
		})
	}
}

// podPages cuts a list into pages of size items, each a JSON array.
func podPages(b *testing.B, list json.RawMessage, size int) []json.RawMessage {
	var items []json.RawMessage
	if err := json.Unmarshal(list, &items); err != nil {
		b.Fatal(err)
	}
	var pages []json.RawMessage
	for i := 0; i < len(items); i += size {
		page, err := json.Marshal(items[i:min(i+size, len(items))])
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, page)
	}
	return pages
}

// workerPeakRSS is the highest peak resident memory of the pool's idle
// workers (the one that ran the scripts is among them).
func workerPeakRSS(b *testing.B, p *Pool) int64 {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	if len(p.idle) == 0 {
		b.Fatal("no idle worker")
	}
	var peak int64
	for _, w := range p.idle {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
		if err != nil {
			b.Skip(err)
		}
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				var kb int64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
				peak = max(peak, kb<<10)
			}
		}
	}
	return peak
}
