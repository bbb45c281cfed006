package scenario_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kubecode/kubecode/internal/controlplane"
	"github.com/kubecode/kubecode/internal/scenario"
)

// BenchmarkSeed seeds a fresh control plane per iteration (start and stop
// are not timed).
func BenchmarkSeed(b *testing.B) {
	bins, err := controlplane.EnsureBinaries(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{scenario.DefaultHealthyPods, 5000} {
		b.Run(fmt.Sprintf("healthy=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				c, err := controlplane.Start(context.Background(), &controlplane.Options{Binaries: bins, HoldControllers: true})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				truth, err := scenario.Seed(context.Background(), c.Admin, c.Kubelet, &scenario.SeedOptions{HealthyPods: n, StartControllers: c.StartControllers})
				b.StopTimer()
				if err != nil {
					c.Stop()
					b.Fatal(err)
				}
				b.ReportMetric(float64(truth.Pods), "pods")
				if err := c.Stop(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
