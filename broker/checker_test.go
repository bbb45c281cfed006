package broker

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubecode/kubecode/internal/controlplane"
)

// checkerDecls is a small catalog: the checker's bounds do not depend on
// the catalog's size (the live one is in the broker_test package's tests).
const checkerDecls = `declare const tools: { kubernetes: { pods: { list(input?: { namespace?: string }): Promise<{ metadata: { name: string } }[]> } } };
`

func testChecker(t *testing.T) *checker {
	t.Helper()
	bin, err := controlplane.TsgoPath()
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tsgo is missing (%v): scripts/test builds it", err)
		}
		t.Skipf("tsgo is missing (%v)", err)
	}
	c := &checker{bin: bin}
	t.Cleanup(c.close)
	return c
}

// Hostile scripts: types whose check takes minutes and gigabytes
// unbounded, each guarding a call the check would stop.
var hostileTypes = map[string]string{
	// 2^45 characters of string literal, doubled at each step.
	"doubling string": "type Rep<S extends string, A extends unknown[] = []> = A['length'] extends 45 ? S : Rep<`${S}${S}` extends infer R extends string ? R : never, [...A, 0]>\n" +
		"const x = null as unknown as Rep<'a'>\nawait tools.kubernetes.podz.list()",
	// A union of 10^5 string literals, compared member by member.
	"huge union": "type D = '0'|'1'|'2'|'3'|'4'|'5'|'6'|'7'|'8'|'9'\ntype U = `${D}${D}${D}${D}${D}`\ntype V = `${U}-${U}`\n" +
		"const u = '1' as U as V\nawait tools.kubernetes.podz.list()",
	// Recursion as deep as the checker allows, branching at every level.
	"deep recursion": "type T<N extends unknown[]> = N['length'] extends 2000 ? N : T<[...N, N]> | T<[...N, 1]>\n" +
		"const t = null as unknown as T<[]>\nawait tools.kubernetes.podz.list()",
}

// TestCheckerBounded: six hostile checks at once are each refused within
// the check's time (never passed), no checker grows past its memory limit
// (sampled every 20 ms, with the watchdog's 100 ms of slack), ordinary
// checks beside them answer correctly, and the checker serves the next
// check after the burst.
func TestCheckerBounded(t *testing.T) {
	c := testChecker(t)
	ctx := context.Background()
	if _, err := c.check(ctx, "v1", checkerDecls, "await tools.kubernetes.pods.list()"); err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // samples every server's resident memory
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			c.mu.Lock()
			for _, srv := range c.srv {
				if srv != nil && srv.cmd.Process != nil {
					if rss := residentBytes(srv.cmd.Process.Pid); rss > peak.Load() {
						peak.Store(rss)
					}
				}
			}
			c.mu.Unlock()
		}
	}()
	var wg sync.WaitGroup
	names := []string{"doubling string", "huge union", "deep recursion"}
	for i := range 6 {
		name := names[i%len(names)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			diags, err := c.check(ctx, "v1", checkerDecls, hostileTypes[name])
			took := time.Since(start)
			switch {
			case err == nil && !blocks(diags):
				t.Errorf("%s passed the check: %v", name, diags)
			case err != nil && !errors.Is(err, errCheckUnfinished):
				t.Errorf("%s: %v", name, err)
			}
			if took > checkTimeout+time.Second {
				t.Errorf("%s answered after %s", name, took)
			}
		}()
	}
	for range 20 { // ordinary checks beside the burst
		diags, err := c.check(ctx, "v1", checkerDecls, "const p = await tools.kubernetes.pods.list({ namespace: 'x' })\nreturn p.map(x => x.metadata.name)")
		if err != nil || len(diags) != 0 {
			t.Errorf("an ordinary check beside hostile ones: %v %v", diags, err)
		}
		diags, err = c.check(ctx, "v1", checkerDecls, "await tools.kubernetes.podz.list()")
		if err != nil || !blocks(diags) {
			t.Errorf("a misspelled call beside hostile ones: %v %v", diags, err)
		}
	}
	wg.Wait()
	close(stop)
	<-sampled
	if p := peak.Load(); p > checkMemoryLimit*5/4 {
		t.Errorf("a checker reached %d MiB (limit %d MiB)", p>>20, checkMemoryLimit>>20)
	}
	t.Logf("peak checker memory: %d MiB", peak.Load()>>20)
	if diags, err := c.check(ctx, "v1", checkerDecls, "await tools.kubernetes.pods.list()"); err != nil || len(diags) != 0 {
		t.Errorf("after the burst: %v %v", diags, err)
	}
}

// blocks says a check's diagnostics include the misspelled operation.
func blocks(diags []diagnostic) bool {
	for _, d := range diags {
		if strings.Contains(d.Message, "podz") {
			return true
		}
	}
	return false
}

// TestLaneOf: scripts with type-level code are checked apart.
func TestLaneOf(t *testing.T) {
	for code, want := range map[string]lane{
		"return 1 + 1": laneOrdinary,
		"const p = await tools.kubernetes.pods.list({})\nreturn p.filter(x => x.status?.phase !== 'Running')": laneOrdinary,
		"const s = `${a}-${b}`":                 laneOrdinary,
		"interface Pod { name: string }":        laneTypes,
		"type A = string":                       laneTypes,
		"const x = y as unknown as Rep<'a'>":    laneOrdinary,
		"function f<T extends string>(t: T) {}": laneTypes,
		"let u: `${'a'|'b'}` = 'a'":             laneTypes,
		"let k: keyof typeof o":                 laneTypes,
		strings.Repeat("const a = 1\n", 2000):   laneTypes,
	} {
		if got := laneOf(code); got != want {
			t.Errorf("laneOf(%.40q) = %d, want %d", code, got, want)
		}
	}
}
