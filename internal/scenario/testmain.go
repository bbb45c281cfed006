package scenario

import (
	"context"

	"github.com/kubecode/kubecode/internal/controlplane"
)

// Main starts one control plane, seeds the demo scenario into it, sets *cp
// and *truth, calls run, stops the control plane and returns run's exit
// code. A test package's TestMain passes m.Run:
//
//	var (
//		cp    *controlplane.ControlPlane
//		truth *scenario.Truth
//	)
//
//	func TestMain(m *testing.M) { os.Exit(scenario.Main(&cp, &truth, m.Run)) }
func Main(cp **controlplane.ControlPlane, truth **Truth, run func() int) int {
	return controlplane.Main(&controlplane.Options{HoldControllers: true}, func(ctx context.Context, c *controlplane.ControlPlane) error {
		*cp = c
		var err error
		*truth, err = Seed(ctx, c.Admin, c.Kubelet, &SeedOptions{StartControllers: c.StartControllers})
		return err
	}, run)
}
