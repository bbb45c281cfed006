//go:build unix

package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkPoolCPU is the CPU time a trivial execution costs through warm
// workers: the pool's side (this process) and the workers' (collected
// from them as they end), one execution at a time and eight at once on
// this machine's cores. Throughput is bound by their sum once the cores
// are busy.
func BenchmarkPoolCPU(b *testing.B) {
	for _, at := range []int{1, 8} {
		b.Run(fmt.Sprintf("at-once-%d", at), func(b *testing.B) {
			var self0, kids0 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self0)
			_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids0)
			p := NewPool(&PoolOptions{Command: func() *exec.Cmd { return exec.Command(os.Args[0]) }, Idle: at})
			var next atomic.Int64
			var wg sync.WaitGroup
			for range at {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if res := p.Execute(context.Background(), nil, "return 1 + 1", nil); res.Error != nil {
							b.Error(res.Error)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			_ = p.Close()
			for p.live.Load() > 0 { // reaped workers' CPU is counted
				time.Sleep(time.Millisecond)
			}
			var self1, kids1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self1)
			_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids1)
			cpu := func(a, c syscall.Rusage) float64 {
				return float64(c.Utime.Nano()+c.Stime.Nano()-a.Utime.Nano()-a.Stime.Nano()) / 1e3 / float64(b.N)
			}
			b.ReportMetric(cpu(self0, self1), "pool-cpu-µs/op")
			b.ReportMetric(cpu(kids0, kids1), "worker-cpu-µs/op")
		})
	}
}
