package runtime

import (
	"context"
	"testing"
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
