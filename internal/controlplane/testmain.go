package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RunTestMain starts one control plane for a test package, calls setup (to
// keep the *ControlPlane and seed data; may be nil), runs the tests, stops
// the control plane and returns the exit code for os.Exit:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) {
//		os.Exit(controlplane.RunTestMain(m, nil, func(ctx context.Context, c *controlplane.ControlPlane) error {
//			cp = c
//			return nil
//		}))
//	}
//
// SIGINT and SIGTERM stop the control plane before the process exits.
func RunTestMain(m *testing.M, opts *Options, setup func(ctx context.Context, cp *ControlPlane) error) int {
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
	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace named after the test with a random suffix,
// and deletes it when the test ends. With no namespace controller running,
// a deleted namespace stays Terminating with its contents until Stop; names
// never repeat.
func (cp *ControlPlane) Namespace(t testing.TB) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		t.Fatal(err)
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
