package scenario

import (
	"context"
	"testing"

	"github.com/kubecode/kubecode/internal/controlplane"
)

// RunTestMain starts one control plane for a test package, seeds the demo
// scenario into it, sets *cp and *truth, runs the tests, stops the control
// plane and returns the exit code for os.Exit:
//
//	var (
//		cp    *controlplane.ControlPlane
//		truth *scenario.Truth
//	)
//
//	func TestMain(m *testing.M) { os.Exit(scenario.RunTestMain(m, &cp, &truth)) }
func RunTestMain(m *testing.M, cp **controlplane.ControlPlane, truth **Truth) int {
	return controlplane.RunTestMain(m, nil, func(ctx context.Context, c *controlplane.ControlPlane) error {
		*cp = c
		var err error
		*truth, err = Seed(ctx, c.Admin, c.Kubelet, nil)
		return err
	})
}
