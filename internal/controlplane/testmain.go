package controlplane

import (
	"context"
	"crypto/rand"
	_ "embed" // the tests' images
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Main starts one control plane, calls setup (to keep the *ControlPlane and
// seed data; may be nil), calls run, stops the control plane and returns
// run's exit code (1 when start, setup or stop fails). A test package's
// TestMain passes m.Run, so the package runs its tests against one control
// plane:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) {
//		os.Exit(controlplane.Main(nil, func(ctx context.Context, c *controlplane.ControlPlane) error {
//			cp = c
//			return nil
//		}, m.Run))
//	}
//
// SIGINT and SIGTERM stop the control plane before the process exits.
// testImages are the images of the repository's own tests.
//
//go:embed testimages.yaml
var testImages []byte

func Main(opts *Options, setup func(ctx context.Context, cp *ControlPlane) error, run func() int) int {
	// The binaries may need building (minutes) the first time; start and
	// setup get their own budget in Options.Timeout and below.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cp, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	if err := cp.Kubelet.AddImages(testImages); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	defer func() {
		signal.Stop(sigs)
		close(done)
	}()
	go func() {
		select {
		case <-sigs:
			_ = cp.Stop()
			os.Exit(130)
		case <-done:
		}
	}()

	if setup != nil {
		sctx, scancel := context.WithTimeout(ctx, 10*time.Minute)
		err := setup(sctx, cp)
		scancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "controlplane: test setup: %v\n", err)
			return 1
		}
	}
	code := run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// TB is the part of testing.TB that Namespace uses; this package does not
// import testing, so that the kubecode binary (which runs the demo control
// plane) does not link it.
type TB interface {
	Helper()
	Name() string
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// Namespace creates a namespace named after the test with a random suffix,
// and deletes it when the test ends. Names never repeat.
func (cp *ControlPlane) Namespace(t TB) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatalf("%v", err)
	}
	base := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "t-" + base + "-" + hex.EncodeToString(suffix)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return name
}
